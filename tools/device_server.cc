#include "tools/device_server.h"

#include <algorithm>

#include <chrono>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"

#include "core/serialize.h"
#include "rpc/grpc_call.h"

namespace uopc {
namespace {

uint64_t RandomId() {
  static std::mt19937_64 rng(std::random_device{}());
  uint64_t id = 0;
  while (id == 0) id = rng();
  return id;
}

}  // namespace

grpc::Status DeviceServer::Admit(const grpc::ServerContext* ctx) const {
  if (grpc::Status s = CheckToken(ctx, options_.token); !s.ok()) return s;
  if (options_.latency_us > 0)
    std::this_thread::sleep_for(std::chrono::microseconds(options_.latency_us));
  return grpc::Status::OK;
}

double DeviceServer::ThrottleSeconds(uint64_t bytes, double gbps) {
  if (!(gbps > 0)) return 0;
  return std::min(1e9, static_cast<double>(bytes) * 8 / (gbps * 1e9));
}

void DeviceServer::Throttle(uint64_t bytes) const {
  if (const double s = ThrottleSeconds(bytes, options_.bandwidth_gbps); s > 0)
    std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

grpc::Status DeviceServer::Open(grpc::ServerContext* ctx, const remote::OpenRequest*,
                                remote::OpenReply* out) {
  if (grpc::Status s = Admit(ctx); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = RandomId();  // unguessable, and not one a restarted server would reuse
  sessions_[id];
  out->set_session(id);
  out->set_device(device_->name());
  out->set_kind(device_->kind());
  out->set_mem_total(device_->mem_total());
  out->set_fingerprint(device_->backend_fingerprint());
  out->set_target(device_->target().ToString());
  return grpc::Status::OK;
}

grpc::Status DeviceServer::Allocate(grpc::ServerContext* ctx, const remote::AllocateRequest* req,
                                    remote::AllocateReply* out) {
  if (grpc::Status s = Admit(ctx); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  auto session = sessions_.find(req->session());
  if (session == sessions_.end())
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "no such session (the server restarted since it was opened?)");
  if (req->size() > (uint64_t{1} << 50))
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("allocate: ", req->size(), " bytes"));
  absl::StatusOr<Buffer> b = device_->Allocate(DType::kU8, static_cast<int64_t>(req->size()));
  if (!b.ok()) return ToGrpc(b.status());
  uint64_t id = next_id_++;
  session->second.buffers.emplace(id, *std::move(b));
  out->set_buffer(id);
  return grpc::Status::OK;
}

grpc::Status DeviceServer::LoadProgram(grpc::ServerContext* ctx,
                                       const remote::LoadProgramRequest* req,
                                       remote::LoadProgramReply* out) {
  if (grpc::Status s = Admit(ctx); !s.ok()) return s;
  if (req->kernels().empty())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "load program: no kernels");
  std::vector<std::string> sources, names;
  Loaded loaded;
  for (const remote::Kernel& k : req->kernels()) {  // rendered here: a bad kernel is an error
    absl::StatusOr<UOp> kernel = DeserializeGraph(k.uop());
    absl::StatusOr<KernelSignature> sig =
        kernel.ok() ? SignatureOf(*kernel) : absl::StatusOr<KernelSignature>(kernel.status());
    if (!sig.ok())
      return ToGrpc(absl::InvalidArgumentError(
          absl::StrCat("load program: kernel ", k.name(), ": ", sig.status().message())));
    loaded.signatures.push_back(*std::move(sig));
    absl::StatusOr<RenderedKernel> r = device_->Render(k.uop(), k.name());
    if (!r.ok())
      return ToGrpc(absl::Status(r.status().code(), absl::StrCat("load program: kernel ", k.name(),
                                                                 ": ", r.status().message())));
    sources.push_back(std::move(r->source));
    names.push_back(k.name());
    loaded.dims.push_back(r->dims);
  }
  absl::StatusOr<std::shared_ptr<Program>> p = device_->Build(sources, names);
  if (!p.ok()) return ToGrpc(p.status());
  loaded.program = *std::move(p);
  std::lock_guard<std::mutex> lock(mu_);
  auto session = sessions_.find(req->session());
  if (session == sessions_.end())
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "no such session (the server restarted since it was opened?)");
  uint64_t id = next_id_++;
  session->second.programs.emplace(id, std::move(loaded));
  out->set_program(id);
  return grpc::Status::OK;
}

absl::Status DeviceServer::CheckLaunch(const KernelSignature& sig, const Session& s,
                                       const remote::Launch& m,
                                       std::vector<uopc_buffer*>* handles) {
  if (static_cast<size_t>(m.buffers().size()) != sig.buffers.size() ||
      static_cast<size_t>(m.vars().size()) != sig.vars.size() ||
      (!m.offsets().empty() && m.offsets().size() != m.buffers().size()))
    return absl::InvalidArgumentError(absl::StrCat(
        "launch: ", m.buffers().size(), " buffers, ", m.offsets().size(), " offsets and ",
        m.vars().size(), " VARs for a kernel of ", sig.buffers.size(), " buffer slots and ",
        sig.vars.size(), " VARs"));
  for (size_t i = 0; i < sig.vars.size(); ++i)
    if (m.vars(i) < sig.vars[i].lo || m.vars(i) > sig.vars[i].hi)
      return absl::OutOfRangeError(absl::StrCat("launch: VAR ", sig.vars[i].name, " = ", m.vars(i),
                                                " is outside [", sig.vars[i].lo, ", ",
                                                sig.vars[i].hi, "]"));
  for (size_t i = 0; i < sig.buffers.size(); ++i) {
    const KernelSignature::Buffer& want = sig.buffers[i];
    if (m.buffers(i) == 0) {
      if (want.used) return absl::InvalidArgumentError(absl::StrCat("launch: no buffer in slot ", i));
      handles->push_back(nullptr);
      continue;
    }
    auto b = s.buffers.find(m.buffers(i));
    if (b == s.buffers.end())
      return absl::NotFoundError(
          absl::StrCat("launch: buffer ", m.buffers(i), " is not one of this session"));
    const uint64_t need = static_cast<uint64_t>(want.size) * DTypeSize(want.dtype);
    const uint64_t offset = m.offsets().empty() ? 0 : m.offsets(i);
    if (offset > b->second.bytes() || need > b->second.bytes() - offset)
      return absl::OutOfRangeError(absl::StrCat("launch: slot ", i, " needs ", need,
                                                " bytes at offset ", offset, " of a buffer of ",
                                                b->second.bytes()));
    handles->push_back(b->second.handle());
  }
  return absl::OkStatus();
}

absl::StatusOr<Buffer> DeviceServer::Find(uint64_t session, uint64_t buffer, uint64_t offset,
                                          uint64_t size, const char* what) {
  Session& s = sessions_.at(session);
  auto it = s.buffers.find(buffer);
  if (it == s.buffers.end())
    return absl::NotFoundError(absl::StrCat(what, ": buffer ", buffer, " is not one of this session"));
  uint64_t bytes = it->second.bytes();
  if (offset > bytes || size > bytes - offset)
    return absl::OutOfRangeError(absl::StrCat(what, ": bytes [", offset, ", ", offset + size,
                                              ") of a buffer of ", bytes));
  return it->second;
}

absl::Status DeviceServer::Execute(uint64_t session, const remote::Command& c,
                                   remote::Reply* data) {
  switch (c.op_case()) {
    case remote::Command::kCopyIn: {
      const remote::CopyIn& m = c.copy_in();
      Throttle(m.data().size());
      std::lock_guard<std::mutex> lock(mu_);
      absl::StatusOr<Buffer> b = Find(session, m.buffer(), m.offset(), m.data().size(), "copy in");
      if (!b.ok()) return b.status();
      return device_->CopyIn(*b, m.data().data(), m.data().size(), m.offset());
    }
    case remote::Command::kCopyOut: {
      const remote::CopyOut& m = c.copy_out();
      std::string bytes;
      {
        std::lock_guard<std::mutex> lock(mu_);
        absl::StatusOr<Buffer> b = Find(session, m.buffer(), m.offset(), m.size(), "copy out");
        if (!b.ok()) return b.status();
        bytes.resize(m.size());
        if (absl::Status s = device_->CopyOut(bytes.data(), *b, m.size(), m.offset()); !s.ok())
          return s;
      }
      Throttle(bytes.size());
      data->set_data_seq(c.seq());
      data->set_data(std::move(bytes));
      return absl::OkStatus();
    }
    case remote::Command::kCopy: {
      const remote::CopyBetween& m = c.copy();
      Throttle(m.size());
      std::lock_guard<std::mutex> lock(mu_);
      absl::StatusOr<Buffer> dst = Find(session, m.dst(), m.dst_offset(), m.size(), "copy");
      if (!dst.ok()) return dst.status();
      absl::StatusOr<Buffer> src = Find(session, m.src(), m.src_offset(), m.size(), "copy");
      if (!src.ok()) return src.status();
      return device_->EnqueueCopy(*dst, m.dst_offset(), *src, m.src_offset(), m.size()).status();
    }
    case remote::Command::kLaunch: {
      const remote::Launch& m = c.launch();
      std::lock_guard<std::mutex> lock(mu_);
      Session& s = sessions_.at(session);
      auto p = s.programs.find(m.program());
      if (p == s.programs.end())
        return absl::NotFoundError(
            absl::StrCat("launch: program ", m.program(), " is not one of this session"));
      if (m.entry() >= p->second.dims.size())
        return absl::OutOfRangeError(absl::StrCat("launch: entry ", m.entry(), " of a program of ",
                                                  p->second.dims.size()));
      std::vector<uopc_buffer*> handles;
      if (absl::Status bad = CheckLaunch(p->second.signatures[m.entry()], s, m, &handles); !bad.ok())
        return bad;
      std::vector<int64_t> vars(m.vars().begin(), m.vars().end());
      std::vector<uint64_t> offsets(m.offsets().begin(), m.offsets().end());
      return device_
          ->Launch(*p->second.program, m.entry(), handles, vars, offsets, p->second.dims[m.entry()])
          .status();
    }
    case remote::Command::kKernelLaunch: {  // the device's plugin checks the params
      const remote::KernelLaunch& m = c.kernel_launch();
      std::lock_guard<std::mutex> lock(mu_);
      std::vector<uopc_buffer*> handles;
      for (int i = 0; i < m.buffers_size(); ++i) {
        const uint64_t offset = i < m.offsets_size() ? m.offsets(i) : 0;
        absl::StatusOr<Buffer> b = Find(session, m.buffers(i), offset, 0, "kernel launch");
        if (!b.ok()) return b.status();
        handles.push_back(b->handle());
      }
      if (m.offsets_size() != 0 && m.offsets_size() != m.buffers_size())
        return absl::InvalidArgumentError(absl::StrCat(
            "kernel launch: ", m.offsets_size(), " offsets for ", m.buffers_size(), " buffers"));
      std::vector<uint64_t> offsets(m.offsets().begin(), m.offsets().end());
      std::vector<int64_t> params(m.params().begin(), m.params().end());
      return device_->LaunchSupplied(m.name(), handles, offsets, params).status();
    }
    case remote::Command::kFree: {
      std::lock_guard<std::mutex> lock(mu_);
      if (!sessions_.at(session).buffers.erase(c.free().buffer()))
        return absl::NotFoundError(
            absl::StrCat("free: buffer ", c.free().buffer(), " is not one of this session"));
      return absl::OkStatus();
    }
    case remote::Command::kUnload: {
      std::lock_guard<std::mutex> lock(mu_);
      if (!sessions_.at(session).programs.erase(c.unload().program()))
        return absl::NotFoundError(
            absl::StrCat("unload: program ", c.unload().program(), " is not one of this session"));
      return absl::OkStatus();
    }
    case remote::Command::OP_NOT_SET: break;
  }
  return absl::InvalidArgumentError("a command with no operation");
}

grpc::Status DeviceServer::Run(grpc::ServerContext* ctx,
                               grpc::ServerReaderWriter<remote::Reply, remote::Batch>* stream) {
  if (grpc::Status s = CheckToken(ctx, options_.token); !s.ok()) return s;
  uint64_t session = 0;
  grpc::Status s = Serve(stream, &session);
  if (session != 0) {  // its last queue gone, the session's buffers and programs go too
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(session);
    if (it != sessions_.end() && --it->second.streams == 0) {
      device_->Synchronize().IgnoreError();  // (no queued work may outlive its buffers)
      sessions_.erase(it);
    }
  }
  return s;
}

grpc::Status DeviceServer::Serve(grpc::ServerReaderWriter<remote::Reply, remote::Batch>* stream,
                                 uint64_t* session_out) {
  uint64_t& session = *session_out;
  uint64_t last = 0;
  remote::Batch batch;
  while (stream->Read(&batch)) {
    if (options_.latency_us > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(options_.latency_us));
    if (session == 0) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = sessions_.find(batch.session());
      if (it == sessions_.end())
        return grpc::Status(grpc::StatusCode::NOT_FOUND,
                            "no such session (the server restarted since it was opened?)");
      session = batch.session();
      ++it->second.streams;
    }
    remote::Reply failure;
    for (const remote::Command& c : batch.commands()) {
      if (c.seq() <= last)
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            absl::StrCat("command ", c.seq(), " after command ", last));
      last = c.seq();
      remote::Reply reply;
      absl::Status s = Execute(session, c, &reply);
      if (!s.ok() && failure.code() == 0) {
        failure.set_code(static_cast<int>(s.code()));
        failure.set_message(std::string(s.message()));
        failure.set_failed_seq(c.seq());
      }
      if (reply.data_seq() != 0) {  // a copy out: its bytes now
        reply.set_done(last);
        if (!stream->Write(reply)) return grpc::Status::CANCELLED;
      }
    }
    if (!batch.sync() && failure.code() == 0) continue;
    if (batch.sync()) {
      absl::Status s;
      {
        std::lock_guard<std::mutex> lock(mu_);
        s = device_->Synchronize();
      }
      if (!s.ok() && failure.code() == 0) {
        failure.set_code(static_cast<int>(s.code()));
        failure.set_message(std::string(s.message()));
        failure.set_failed_seq(last);
      }
      failure.set_synced(true);
    }
    failure.set_done(last);
    if (!stream->Write(failure)) return grpc::Status::CANCELLED;
  }
  return grpc::Status::OK;
}

}  // namespace uopc
