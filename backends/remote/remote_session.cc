#include "backends/remote/remote_session.h"

#include "absl/strings/str_cat.h"

#include "rpc/grpc_call.h"

namespace uopc {

absl::StatusOr<std::shared_ptr<RemoteSession>> RemoteSession::Open(const std::string& name,
                                                                   const std::string& address,
                                                                   const RemoteOptions& options) {
  std::shared_ptr<RemoteSession> s(new RemoteSession());
  s->name_ = name;
  s->address_ = address;
  s->options_ = options;
  s->channel_ = MakeChannel(address);
  s->stub_ = remote::DeviceService::NewStub(s->channel_);
  std::unique_ptr<grpc::ClientContext> ctx = s->Context(options.connect_timeout);
  ctx->set_wait_for_ready(true);  // the server may still be starting
  grpc::Status st = s->stub_->Open(ctx.get(), remote::OpenRequest(), &s->info_);
  if (!st.ok())  // (with the server's code: a wrong token is PERMISSION_DENIED, not retried)
    return absl::Status(ToAbsl(st).code(),
                        absl::StrCat(name, ": cannot open a session on the device server at ",
                                     address, ": ", st.error_message()));
  return s;
}

std::unique_ptr<grpc::ClientContext> RemoteSession::Context(std::chrono::milliseconds timeout) const {
  return CallContext(options_.token, timeout);
}

absl::Status RemoteSession::LostStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return absl::Status(static_cast<absl::StatusCode>(100),  // UOPC_DEVICE_LOST
                      absl::StrCat(name_, " (the device server at ", address_,
                                   ") is lost: ", why_));
}

absl::Status RemoteSession::Failed(const grpc::Status& s, const char* what) {
  grpc::StatusCode c = s.error_code();
  bool gone = c == grpc::StatusCode::UNAVAILABLE || c == grpc::StatusCode::NOT_FOUND ||
              c == grpc::StatusCode::CANCELLED || c == grpc::StatusCode::DEADLINE_EXCEEDED ||
              c == grpc::StatusCode::INTERNAL || c == grpc::StatusCode::UNKNOWN;
  if (!gone) return absl::Status(ToAbsl(s).code(), absl::StrCat(name_, ": ", what, ": ", s.error_message()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!lost_.load()) why_ = absl::StrCat(what, ": ", s.error_message());
    lost_ = true;
  }
  return LostStatus();
}

absl::StatusOr<uint64_t> RemoteSession::Allocate(uint64_t size) {
  if (lost()) return LostStatus();
  remote::AllocateRequest req;
  req.set_session(id());
  req.set_size(size);
  remote::AllocateReply out;
  std::unique_ptr<grpc::ClientContext> ctx = Context(options_.timeout);
  if (grpc::Status s = stub_->Allocate(ctx.get(), req, &out); !s.ok())
    return Failed(s, "allocate");
  return out.buffer();
}

absl::StatusOr<uint64_t> RemoteSession::LoadProgram(
    const std::vector<std::pair<std::string, std::string>>& kernels) {
  if (lost()) return LostStatus();
  remote::LoadProgramRequest req;
  req.set_session(id());
  for (const auto& [name, uop] : kernels) {
    remote::Kernel* k = req.add_kernels();
    k->set_name(name);
    k->set_uop(uop);
  }
  remote::LoadProgramReply out;
  std::unique_ptr<grpc::ClientContext> ctx = Context(options_.timeout);
  if (grpc::Status s = stub_->LoadProgram(ctx.get(), req, &out); !s.ok())
    return Failed(s, "load program");
  return out.program();
}

}  // namespace uopc
