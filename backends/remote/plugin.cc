// The remote plugin, libuopc_plugin_remote.so: devices REMOTE:0, REMOTE:1, ... each served by
// a uopc_device_server in another process (or on another machine), forwarded over gRPC. Its
// options (initialize's; from the environment as UOPC_REMOTE_<KEY>):
//   devices          host:port,host:port   one device per server
//   token            the servers' token (default UOPC_DEVICE_TOKEN, else UOPC_JOB_TOKEN)
//   connect_timeout  seconds to open a session (default 10)
//   timeout          seconds any other wait may take (default UOPC_TIMEOUT, else 600)
// Its backend compiles nothing: a kernel's "source" is the kernel itself (serialized), which
// the server renders and compiles with its own backend. Launches and copies are queued and
// sent in batches (backends/remote/remote_queue.h). A server that is gone makes its device
// lost: every call on it fails with DEVICE_LOST naming the device and the address, and the
// process's other devices go on. device_get opens a new session on a lost device's server
// (a restarted one): the old session's buffers are refused as lost, never reused.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "backends/plugin_sdk.h"
#include "backends/remote/remote_queue.h"
#include "backends/remote/remote_session.h"
#include "backends/target_args.h"
#include "core/matmul_call.h"

struct uopc_backend {
  const char* name;
};
struct uopc_device {
  uint32_t index = 0;
  std::string name, kind, uid;
  std::unique_ptr<uopc::TargetStrings> target;  // the server's device's
  std::shared_ptr<uopc::RemoteSession> session;
  std::mutex mu;
  std::weak_ptr<uopc::RemoteQueue> frees;  // the queue frees go through (its first)
};
struct uopc_buffer {
  std::shared_ptr<uopc::RemoteSession> session;
  uopc_device* device;
  uint64_t id, size;
};
struct uopc_program {
  std::shared_ptr<uopc::RemoteSession> session;
  uopc_device* device;
  uint64_t id;
  uint32_t entries;
};
struct uopc_queue {
  uopc_device* device;
  std::shared_ptr<uopc::RemoteQueue> q;
};
struct uopc_event {
  std::shared_ptr<uopc::RemoteQueue> q;
  uint64_t seq;
};

namespace uopc {
namespace {

constexpr uint64_t kChunkBytes = 4 << 20;  // the most one command carries (messages <= 16 MiB)

uopc_backend g_backend{"remote"};
std::vector<std::string> g_addresses;
RemoteOptions g_options;
std::mutex g_mu;
std::vector<std::unique_ptr<uopc_device>> g_devices;  // every device handle made (never freed)
std::vector<uopc_device*> g_current;                  // the one device_get gives, per index

uopc_error* FromStatus(const absl::Status& s) {
  if (s.ok()) return nullptr;
  std::string m(s.message());
  return uopc_sdk_error(static_cast<uopc_code>(s.raw_code()), "%s", m.c_str());  // (100: lost)
}

template <typename F>
uopc_error* Guard(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "remote plugin: out of host memory");
  } catch (const std::exception& e) {
    return uopc_sdk_error(UOPC_INTERNAL, "remote plugin: %s", e.what());
  } catch (...) {
    return uopc_sdk_error(UOPC_INTERNAL, "remote plugin: unknown exception");
  }
}

// A buffer or program of `d`'s current session (else: of a lost one, or another device's).
uopc_error* CheckSession(const std::shared_ptr<RemoteSession>& of, const RemoteSession& in,
                         const char* what) {
  if (of.get() == &in) return nullptr;
  if (of->lost())
    return uopc_sdk_error(UOPC_DEVICE_LOST, "%s: a %s of a lost session of %s (%s); it is gone",
                          in.name().c_str(), what, of->name().c_str(), of->address().c_str());
  return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "%s: a %s of %s, not of this device",
                        in.name().c_str(), what, of->name().c_str());
}

#define NULL_ARG(name) uopc_sdk_error(UOPC_INVALID_ARGUMENT, "remote plugin: %s is NULL", name)

uopc_error* Pushed(uopc_queue* q, const absl::StatusOr<uint64_t>& seq, uopc_event** done) {
  if (!seq.ok()) return FromStatus(seq.status());
  if (done) *done = new uopc_event{q->q, *seq};
  return nullptr;
}

// ---- the plugin ----

uopc_error* Initialize(uopc_initialize_args* a) {
  return Guard([&]() -> uopc_error* {
    std::lock_guard<std::mutex> lock(g_mu);
    g_options = RemoteOptions();  // (initializing again starts from the defaults)
    g_addresses.clear();
    for (const char* var : {"UOPC_DEVICE_TOKEN", "UOPC_JOB_TOKEN"})
      if (const char* t = std::getenv(var); t && *t && g_options.token.empty()) g_options.token = t;
    if (const char* t = std::getenv("UOPC_TIMEOUT")) {
      double sec = 0;
      if (absl::SimpleAtod(t, &sec) && sec > 0 && sec < 1e7)
        g_options.timeout = std::chrono::milliseconds(static_cast<int64_t>(sec * 1000));
    }
    for (uint64_t i = 0; a && i < a->num_options; ++i) {
      std::string k = a->options[i].name ? a->options[i].name : "";
      std::string v = a->options[i].value ? a->options[i].value : "";
      double sec = 0;
      if (k == "devices") {
        g_addresses.clear();
        for (absl::string_view s : absl::StrSplit(v, ',', absl::SkipWhitespace()))
          g_addresses.emplace_back(s);
      } else if (k == "token") {
        g_options.token = v;
      } else if (k == "timeout" || k == "connect_timeout") {
        if (!absl::SimpleAtod(v, &sec) || !(sec > 0 && sec < 1e7))
          return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                                "remote plugin: UOPC_REMOTE_%s=%s; expected seconds > 0",
                                k == "timeout" ? "TIMEOUT" : "CONNECT_TIMEOUT", v.c_str());
        (k == "timeout" ? g_options.timeout : g_options.connect_timeout) =
            std::chrono::milliseconds(static_cast<int64_t>(sec * 1000));
      }
    }
    g_current.assign(g_addresses.size(), nullptr);
    return nullptr;
  });
}

// (no probe: usable anywhere; without servers configured it has no devices)

// ---- backend: kernels travel as they are ----

uopc_error* BackendCount(uopc_backend_count_args* a) {
  a->count = 1;
  return nullptr;
}
uopc_error* BackendGet(uopc_backend_get_args* a) {
  if (a->index != 0)
    return uopc_sdk_error(UOPC_OUT_OF_RANGE, "remote plugin: backend %u of 1", a->index);
  a->backend = &g_backend;
  return nullptr;
}
uopc_error* BackendDescribe(uopc_backend_describe_args* a) {
  if (!a->desc) return NULL_ARG("desc");
  uopc_backend_desc* d = a->desc;
  uopc_sdk_clear(d, sizeof *d);
  d->name = "remote";
  d->target = "REMOTE:UOP:any";
  d->fingerprint = "remote 1 (the server compiles)";
  d->lang = UOPC_LANG_NONE;
  d->dtypes = ~uint64_t{0};
  return nullptr;
}
uopc_error* BackendSupports(uopc_backend_supports_args* a) {
  a->supported = 1;
  return nullptr;
}
// A device's target is its server's device's (from the session's open); the backend has
// none of its own: the server compiles.
uopc_error* BackendTarget(uopc_backend_target_args* a) {
  if (!a->device || a->arch)
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                          "remote plugin: a target is a remote device's (its server's); give "
                          "the device, not %s",
                          a->arch ? a->arch : "none");
  FillTargetArgs(*a->device->target, a);
  return nullptr;
}

// A "source": the function's name, then the kernel (u32 and u64 lengths, little-endian).
std::string Envelope(const char* name, const void* kernel, uint64_t size) {
  std::string out, n = name ? name : "";
  uint32_t nl = static_cast<uint32_t>(n.size());
  out.append(reinterpret_cast<const char*>(&nl), 4).append(n);
  out.append(reinterpret_cast<const char*>(&size), 8).append(static_cast<const char*>(kernel), size);
  return out;
}

uopc_error* Render(uopc_render_args* a) {
  return Guard([&]() -> uopc_error* {
    if (!a->backend || (!a->kernel && a->kernel_size)) return NULL_ARG("backend or kernel");
    std::string src = Envelope(a->name, a->kernel, a->kernel_size);
    a->source = uopc_sdk_blob(src.data(), src.size());
    for (int i = 0; i < 3; ++i) a->global[i] = a->local[i] = 1;  // the server's launch dims
    a->shared_bytes = 0;
    return a->source ? nullptr : uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "remote: out of memory");
  });
}

// A "binary": the sources, each after its u64 length.
uopc_error* Compile(uopc_compile_args* a) {
  return Guard([&]() -> uopc_error* {
    if (!a->sources && a->num_sources) return NULL_ARG("sources");
    std::string bin;
    for (uint64_t i = 0; i < a->num_sources; ++i) {
      uint64_t n = a->sources[i].size;
      bin.append(reinterpret_cast<const char*>(&n), 8).append(a->sources[i].text, n);
    }
    a->binary = uopc_sdk_blob(bin.data(), bin.size());
    return a->binary ? nullptr : uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "remote: out of memory");
  });
}

// The kernels of a binary; false if it is not one Compile made.
bool Kernels(const char* p, uint64_t size, std::vector<std::pair<std::string, std::string>>* out) {
  auto take = [&](void* dst, uint64_t n) {
    if (size < n) return false;
    std::memcpy(dst, p, n);
    p += n, size -= n;
    return true;
  };
  while (size > 0) {
    uint64_t len = 0;
    uint32_t nl = 0;
    uint64_t kl = 0;
    if (!take(&len, 8) || len > size || len < 12 || !take(&nl, 4) || nl > len - 12) return false;
    std::string name(p, nl);
    p += nl, size -= nl;
    if (!take(&kl, 8) || kl != len - 12 - nl || kl > size) return false;
    out->emplace_back(std::move(name), std::string(p, kl));
    p += kl, size -= kl;
  }
  return true;
}

// ---- devices ----

uopc_error* DeviceCount(uopc_device_count_args* a) {
  a->count = static_cast<uint32_t>(g_addresses.size());
  return nullptr;
}

uopc_error* DeviceGet(uopc_device_get_args* a) {
  const uint32_t i = a->index;
  uopc_device** out = &a->device;
  return Guard([&]() -> uopc_error* {
    if (i >= g_addresses.size())
      return uopc_sdk_error(UOPC_OUT_OF_RANGE, "remote plugin: device %u of %zu", i,
                            g_addresses.size());
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_current[i] && !g_current[i]->session->lost()) {
      *out = g_current[i];
      return nullptr;
    }
    // (a lost device's server may have restarted: a new session, as a new device handle)
    std::string name = absl::StrCat("REMOTE:", i);
    absl::StatusOr<std::shared_ptr<RemoteSession>> s =
        RemoteSession::Open(name, g_addresses[i], g_options);
    if (!s.ok()) return FromStatus(s.status());
    auto d = std::make_unique<uopc_device>();
    d->index = i;
    d->name = name;
    d->session = *std::move(s);
    const remote::OpenReply& info = d->session->info();
    d->kind = absl::StrCat(info.device(), " of the device server at ", g_addresses[i], " (",
                           info.kind(), ")");
    d->uid = absl::StrCat("remote://", g_addresses[i], "/", info.device());
    // the server's device's target: its kernels are lowered for it here (a server older
    // than the target in the reply: the reference CPU, the kernels it had)
    absl::StatusOr<Target> t =
        info.target().empty() ? Target::ReferenceCpu() : ParseTarget(info.target());
    if (!t.ok())
      return uopc_sdk_error(UOPC_FAILED_PRECONDITION, "remote plugin: %s at %s: %s",
                            name.c_str(), g_addresses[i].c_str(),
                            std::string(t.status().message()).c_str());
    d->target = std::make_unique<TargetStrings>(*std::move(t));
    g_current[i] = d.get();
    *out = d.get();
    g_devices.push_back(std::move(d));
    return nullptr;
  });
}

uopc_error* DeviceDescribe(uopc_device_describe_args* a) {
  const uopc_device* d = a->device;
  uopc_device_props* p = a->props;
  if (!d || !p) return NULL_ARG("device");
  uopc_sdk_clear(p, sizeof *p);
  p->name = d->name.c_str();
  p->kind = d->kind.c_str();
  p->uid = d->uid.c_str();
  p->backend = "remote";
  p->type = UOPC_DEVICE_REMOTE;
  p->mem_total = d->session->info().mem_total();
  p->caps = UOPC_DEVICE_CAP_ASYNC | UOPC_DEVICE_CAP_COPY_D2D;
  return nullptr;
}

uopc_error* BufferAlloc(uopc_buffer_alloc_args* a) {
  return Guard([&]() -> uopc_error* {
    uopc_device* d = a->device;
    if (!d) return NULL_ARG("device");
    absl::StatusOr<uint64_t> id = d->session->Allocate(a->size);
    if (!id.ok()) return FromStatus(id.status());
    a->buffer = new uopc_buffer{d->session, d, *id, a->size};
    return nullptr;
  });
}

uopc_error* BufferFree(uopc_buffer_free_args* a) {
  uopc_buffer* b = a->buffer;
  return Guard([&]() -> uopc_error* {
    if (!b) return NULL_ARG("buffer");
    std::unique_ptr<uopc_buffer> owned(b);
    if (b->session->lost()) return nullptr;
    std::shared_ptr<RemoteQueue> q;
    {
      std::lock_guard<std::mutex> lock(b->device->mu);
      q = b->device->frees.lock();
    }
    if (!q || &q->session() != b->session.get()) return nullptr;  // (freed with its session)
    remote::Command c;
    c.mutable_free()->set_buffer(b->id);
    q->Push(std::move(c)).IgnoreError();
    return nullptr;
  });
}

uopc_error* QueueCreate(uopc_queue_create_args* a) {
  return Guard([&]() -> uopc_error* {
    uopc_device* d = a->device;
    if (!d) return NULL_ARG("device");
    absl::StatusOr<std::shared_ptr<RemoteQueue>> q = RemoteQueue::Create(d->session);
    if (!q.ok()) return FromStatus(q.status());
    {
      std::lock_guard<std::mutex> lock(d->mu);
      if (!d->frees.lock()) d->frees = *q;
    }
    a->queue = new uopc_queue{d, *std::move(q)};
    return nullptr;
  });
}

uopc_error* QueueDestroy(uopc_queue_destroy_args* a) {
  return Guard([&]() -> uopc_error* {
    if (!a->queue) return NULL_ARG("queue");
    delete a->queue;
    return nullptr;
  });
}

uopc_error* CopyH2D(uopc_copy_h2d_args* a) {
  uopc_queue* q = a->queue;
  const uopc_buffer* dst = a->dst;
  const void* src = a->src;
  const uint64_t off = a->dst_offset, n = a->size;
  return Guard([&]() -> uopc_error* {
    if (!q || !dst || (!src && n)) return NULL_ARG("queue, buffer or host pointer");
    if (uopc_error* e = CheckSession(dst->session, q->q->session(), "buffer")) return e;
    if (off > dst->size || n > dst->size - off)
      return uopc_sdk_error(UOPC_OUT_OF_RANGE, "%s: copy in of bytes [%llu, %llu) of a buffer of %llu",
                            q->device->name.c_str(), (unsigned long long)off,
                            (unsigned long long)(off + n), (unsigned long long)dst->size);
    absl::StatusOr<uint64_t> seq = 0;
    for (uint64_t at = 0; at < n || (n == 0 && at == 0); at += kChunkBytes) {
      uint64_t k = std::min(kChunkBytes, n - at);
      remote::Command c;
      remote::CopyIn* m = c.mutable_copy_in();
      m->set_buffer(dst->id);
      m->set_offset(off + at);
      m->set_data(static_cast<const char*>(src) + at, k);
      seq = q->q->Push(std::move(c));
      if (!seq.ok() || n == 0) break;
    }
    return Pushed(q, seq, a->done);
  });
}

uopc_error* CopyD2H(uopc_copy_d2h_args* a) {
  uopc_queue* q = a->queue;
  void* dst = a->dst;
  const uopc_buffer* src = a->src;
  const uint64_t off = a->src_offset, n = a->size;
  return Guard([&]() -> uopc_error* {
    if (!q || !src || (!dst && n)) return NULL_ARG("queue, buffer or host pointer");
    if (uopc_error* e = CheckSession(src->session, q->q->session(), "buffer")) return e;
    if (off > src->size || n > src->size - off)
      return uopc_sdk_error(UOPC_OUT_OF_RANGE, "%s: copy out of bytes [%llu, %llu) of a buffer of %llu",
                            q->device->name.c_str(), (unsigned long long)off,
                            (unsigned long long)(off + n), (unsigned long long)src->size);
    absl::StatusOr<uint64_t> seq = 0;
    for (uint64_t at = 0; at < n || (n == 0 && at == 0); at += kChunkBytes) {
      uint64_t k = std::min(kChunkBytes, n - at);
      remote::Command c;
      remote::CopyOut* m = c.mutable_copy_out();
      m->set_buffer(src->id);
      m->set_offset(off + at);
      m->set_size(k);
      seq = q->q->Push(std::move(c), static_cast<char*>(dst) + at);
      if (!seq.ok() || n == 0) break;
    }
    return Pushed(q, seq, a->done);
  });
}

uopc_error* Copy(uopc_copy_args* a) {
  uopc_queue* q = a->queue;
  const uopc_buffer *dst = a->dst, *src = a->src;
  return Guard([&]() -> uopc_error* {
    if (!q || !dst || !src) return NULL_ARG("queue or buffer");
    if (uopc_error* e = CheckSession(dst->session, q->q->session(), "buffer")) return e;
    if (uopc_error* e = CheckSession(src->session, q->q->session(), "buffer")) return e;
    remote::Command c;
    remote::CopyBetween* m = c.mutable_copy();
    m->set_dst(dst->id);
    m->set_dst_offset(a->dst_offset);
    m->set_src(src->id);
    m->set_src_offset(a->src_offset);
    m->set_size(a->size);
    return Pushed(q, q->q->Push(std::move(c)), a->done);
  });
}

uopc_error* ProgramLoad(uopc_program_load_args* a) {
  uopc_device* d = a->device;
  const void* binary = a->binary;
  const uint64_t size = a->size;
  const char* const* entries = a->entries;
  const uint32_t num_entries = a->num_entries;
  return Guard([&]() -> uopc_error* {
    if (!d || (!binary && size) || (!entries && num_entries)) return NULL_ARG("program");
    std::vector<std::pair<std::string, std::string>> kernels;
    if (!Kernels(static_cast<const char*>(binary), size, &kernels) || kernels.size() != num_entries)
      return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                            "%s: a program binary that the remote backend did not compile",
                            d->name.c_str());
    for (uint32_t i = 0; i < num_entries; ++i)
      if (!entries[i] || kernels[i].first != entries[i])
        return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "%s: entry %u is not the kernel %s",
                              d->name.c_str(), i, kernels[i].first.c_str());
    absl::StatusOr<uint64_t> id = d->session->LoadProgram(kernels);
    if (!id.ok()) return FromStatus(id.status());
    a->program = new uopc_program{d->session, d, *id, num_entries};
    return nullptr;
  });
}

uopc_error* ProgramUnload(uopc_program_unload_args* a) {
  uopc_program* p = a->program;
  return Guard([&]() -> uopc_error* {
    if (!p) return NULL_ARG("program");
    std::unique_ptr<uopc_program> owned(p);
    if (p->session->lost()) return nullptr;
    std::shared_ptr<RemoteQueue> q;
    {
      std::lock_guard<std::mutex> lock(p->device->mu);
      q = p->device->frees.lock();
    }
    if (!q || &q->session() != p->session.get()) return nullptr;
    remote::Command c;
    c.mutable_unload()->set_program(p->id);
    q->Push(std::move(c)).IgnoreError();
    return nullptr;
  });
}

uopc_error* Launch(uopc_launch_args* a) {
  uopc_queue* q = a->queue;
  return Guard([&]() -> uopc_error* {
    if (!q || !a->program || (!a->buffers && a->num_buffers) || (!a->vars && a->num_vars))
      return NULL_ARG("queue or launch args");
    if (uopc_error* e = CheckSession(a->program->session, q->q->session(), "program")) return e;
    if (a->entry >= a->program->entries)
      return uopc_sdk_error(UOPC_OUT_OF_RANGE, "%s: entry %u of a program of %u",
                            q->device->name.c_str(), a->entry, a->program->entries);
    remote::Command c;
    remote::Launch* m = c.mutable_launch();
    m->set_program(a->program->id);
    m->set_entry(a->entry);
    for (uint32_t i = 0; i < a->num_buffers; ++i) {
      const uopc_buffer* b = a->buffers[i];
      if (b) {
        if (uopc_error* e = CheckSession(b->session, q->q->session(), "buffer")) return e;
      }
      m->add_buffers(b ? b->id : 0);
      if (a->offsets) m->add_offsets(a->offsets[i]);
    }
    for (uint32_t i = 0; i < a->num_vars; ++i) m->add_vars(a->vars[i]);
    return Pushed(q, q->q->Push(std::move(c)), a->done);
  });
}

// A supplied kernel of the server's device (its target, as the session's open gave it, lists
// them), run there. Its params are checked against the buffers here first, so that a bad
// launch is refused at once rather than failing the queue (the server's plugin checks again).
uopc_error* KernelLaunch(uopc_kernel_launch_args* a) {
  uopc_queue* q = a->queue;
  return Guard([&]() -> uopc_error* {
    if (!q || !a->name || (!a->buffers && a->num_buffers) || (!a->params && a->num_params))
      return NULL_ARG("queue or kernel launch args");
    const SuppliedKernel* k = nullptr;
    for (const SuppliedKernel& s : q->device->target->target.kernels)
      if (s.name == a->name) k = &s;
    if (!k || k->op != "matmul")
      return uopc_sdk_error(UOPC_NOT_FOUND, "%s: no supplied matmul kernel '%s'",
                            q->device->name.c_str(), a->name);
    if (a->num_buffers != 3)
      return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "%s: %s takes 3 buffers",
                            q->device->name.c_str(), a->name);
    std::array<uint64_t, 3> bytes;
    for (int i = 0; i < 3; ++i) {
      const uopc_buffer* b = a->buffers[i];
      const uint64_t off = a->offsets ? a->offsets[i] : 0;
      if (!b || off > b->size) return NULL_ARG("a buffer (or its offset)");
      bytes[i] = b->size - off;
    }
    if (absl::Status s = CheckedMatmulLaunch(absl::MakeConstSpan(a->params, a->num_params),
                                             {k->out, k->a, k->b}, bytes)
                             .status();
        !s.ok())
      return uopc_sdk_error(static_cast<uopc_code>(s.code()), "%s: %s: %s", q->device->name.c_str(),
                            a->name, std::string(s.message()).c_str());
    remote::Command c;
    remote::KernelLaunch* m = c.mutable_kernel_launch();
    m->set_name(a->name);
    for (uint32_t i = 0; i < a->num_buffers; ++i) {
      const uopc_buffer* b = a->buffers[i];
      if (!b) return NULL_ARG("a buffer");
      if (uopc_error* e = CheckSession(b->session, q->q->session(), "buffer")) return e;
      m->add_buffers(b->id);
      if (a->offsets) m->add_offsets(a->offsets[i]);
    }
    for (uint32_t i = 0; i < a->num_params; ++i) m->add_params(a->params[i]);
    return Pushed(q, q->q->Push(std::move(c)), a->done);
  });
}

uopc_error* QueueWaitEvent(uopc_queue_wait_event_args* a) {
  uopc_queue* q = a->queue;
  uopc_event* e = a->event;
  return Guard([&]() -> uopc_error* {
    if (!q || !e) return NULL_ARG("queue or event");
    if (e->q == q->q) return nullptr;  // in order already
    // another queue's (or device's) work: waited for here, before later work is sent
    return FromStatus(e->q->Wait(e->seq, e->q->session().options().timeout));
  });
}

uopc_error* EventWait(uopc_event_wait_args* a) {
  uopc_event* e = a->event;
  const uint64_t timeout_ns = a->timeout_ns;
  return Guard([&]() -> uopc_error* {
    if (!e) return NULL_ARG("event");
    auto limit = e->q->session().options().timeout;
    if (timeout_ns != UINT64_MAX)
      limit = std::min(limit, std::chrono::milliseconds(timeout_ns / 1'000'000 + 1));
    return FromStatus(e->q->Wait(e->seq, limit));
  });
}

uopc_error* EventQuery(uopc_event_query_args* a) {
  uopc_event* e = a->event;
  return Guard([&]() -> uopc_error* {
    if (!e) return NULL_ARG("event");
    absl::StatusOr<bool> d = e->q->Query(e->seq);
    if (!d.ok()) return FromStatus(d.status());
    a->done = *d ? 1 : 0;
    return nullptr;
  });
}

void EventDestroy(uopc_event_destroy_args* a) { delete a->event; }

uopc_error* QueueSynchronize(uopc_queue_synchronize_args* a) {
  return Guard([&]() -> uopc_error* {
    if (!a->queue) return NULL_ARG("queue");
    return FromStatus(a->queue->q->Synchronize());
  });
}

uopc_api g_api = {
    .uop_format_version = 1,
    .name = "remote",
    .version = "2.0",
    .caps = UOPC_PLUGIN_CAP_BACKEND | UOPC_PLUGIN_CAP_DEVICE,
    .initialize = Initialize,
    .backend_count = BackendCount,
    .backend_get = BackendGet,
    .backend_describe = BackendDescribe,
    .backend_supports = BackendSupports,
    .backend_target = BackendTarget,
    .render = Render,
    .compile = Compile,
    .device_count = DeviceCount,
    .device_get = DeviceGet,
    .device_describe = DeviceDescribe,
    .buffer_alloc = BufferAlloc,
    .buffer_free = BufferFree,
    .queue_create = QueueCreate,
    .queue_destroy = QueueDestroy,
    .copy_h2d = CopyH2D,
    .copy_d2h = CopyD2H,
    .copy = Copy,
    .program_load = ProgramLoad,
    .program_unload = ProgramUnload,
    .launch = Launch,
    .queue_wait_event = QueueWaitEvent,
    .event_wait = EventWait,
    .event_query = EventQuery,
    .event_destroy = EventDestroy,
    .queue_synchronize = QueueSynchronize,
    .kernel_launch = KernelLaunch,
};

}  // namespace
}  // namespace uopc

extern "C" UOPC_EXPORT const uopc_api* uopc_plugin_entry_v2(const uopc_host_api* host) {
  if (!host || host->abi_major != UOPC_ABI_MAJOR) return nullptr;
  static std::once_flag once;
  std::call_once(once, [] { uopc_sdk_fill(&uopc::g_api); });
  return &uopc::g_api;
}
