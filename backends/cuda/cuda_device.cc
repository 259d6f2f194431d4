#include "backends/cuda/cuda_device.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

#include "backends/cuda/gpu_target.h"
#include "backends/cuda/matmul_kernels.h"
#include "backends/plugin_sdk.h"
#include "core/env.h"
#include "core/matmul_call.h"

namespace uopc::cuda {
namespace {

const Driver* g_driver = nullptr;
SuppliedBuild g_build_supplied = nullptr;
std::vector<std::unique_ptr<uopc_device>> g_devices;
std::mutex g_live_mu;
absl::flat_hash_set<const void*> g_live;  // buffers, queues and programs not yet destroyed

constexpr char kMagic[] = "UOPCCU01";  // then 'C' (cubin) or 'P' (PTX), then the image
constexpr size_t kHeader = 9;

#define NULL_ARG(name) uopc_sdk_error(UOPC_INVALID_ARGUMENT, "cuda plugin: %s is NULL", name)

void Live(const void* p, bool on) {
  std::lock_guard<std::mutex> lock(g_live_mu);
  if (on)
    g_live.insert(p);
  else
    g_live.erase(p);
}

uopc_error* CheckLive(const void* p, const char* what) {
  std::lock_guard<std::mutex> lock(g_live_mu);
  if (g_live.contains(p)) return nullptr;
  return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                        "cuda plugin: %s: %p is not a live handle of this plugin (freed already?)",
                        what, p);
}

uopc_error* Lost(const uopc_device* d) {
  return uopc_sdk_error(UOPC_DEVICE_LOST, "cuda plugin: %s is lost: %s", d->name.c_str(),
                        d->lost_why.c_str());
}

// CUDA's result as the ABI's error (NULL for success). Sticky errors lose the device.
uopc_error* Check(uopc_device* d, CUresult r, const char* what, const std::string& kernel = "") {
  if (r == kSuccess) return nullptr;
  std::string err = g_driver->Error(r);
  if (r == kOutOfMemory)
    return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "cuda plugin: %s on %s: %s", what,
                          d->name.c_str(), err.c_str());
  if (BreaksContext(r)) {
    std::lock_guard<std::mutex> lock(d->mu);
    if (!d->lost) {
      d->lost_why = absl::StrCat(err, kernel.empty() ? "" : " in or before kernel " + kernel);
      d->lost = true;
    }
    return Lost(d);
  }
  return uopc_sdk_error(r == kInvalidValue ? UOPC_INVALID_ARGUMENT : UOPC_INTERNAL,
                        "cuda plugin: %s on %s: %s", what, d->name.c_str(), err.c_str());
}

// Makes `d`'s context current on this thread (every call that touches the device does).
uopc_error* Use(uopc_device* d) {
  if (d->lost) return Lost(d);
  return Check(d, g_driver->CtxSetCurrent(d->ctx), "cuCtxSetCurrent");
}

// Use() for clean-up paths, which report nothing: whether the device can be used.
bool Usable(uopc_device* d) {
  uopc_error* e = Use(d);
  uopc_sdk_error_destroy(e);
  return e == nullptr;
}

// ---- pinned staging (backends/cuda/pinned_pool.h) ----

struct Staged {
  uopc_device* device;
  void* pinned;
  size_t size;
  void* out;  // where a copy-out's bytes go; null for a copy-in
};

// A host function on the stream, after a staged piece: lands a copy-out's bytes and returns
// the chunk to the pool (no CUDA call may be made here).
void FinishStaged(void* arg) {
  std::unique_ptr<Staged> s(static_cast<Staged*>(arg));
  if (s->out) std::memcpy(s->out, s->pinned, s->size);
  s->device->staging->Give(s->pinned);
}

// A copy between host memory `host` and device memory `dev` of `size` bytes, in pieces
// staged through the pool's chunks (the caller's memory is free, for a copy-in, when this
// returns); from pageable memory where no chunk can be had.
uopc_error* StagedCopy(uopc_queue* q, CUdeviceptr dev, void* host, uint64_t size, bool in) {
  uopc_device* d = q->device;
  const size_t chunk = d->staging->chunk_bytes();
  for (uint64_t at = 0; at < size; at += chunk) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, size - at));
    char* h = static_cast<char*>(host) + at;
    void* pin = d->staging->Take();
    if (!pin) {  // the rest straight from (or to) pageable memory
      CUresult r = in ? g_driver->MemcpyHtoDAsync(dev + at, h, size - at, q->stream)
                      : g_driver->MemcpyDtoHAsync(h, dev + at, size - at, q->stream);
      return Check(d, r, in ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync", q->last_kernel);
    }
    if (in) std::memcpy(pin, h, n);
    CUresult r = in ? g_driver->MemcpyHtoDAsync(dev + at, pin, n, q->stream)
                    : g_driver->MemcpyDtoHAsync(pin, dev + at, n, q->stream);
    if (r == kSuccess)
      r = g_driver->LaunchHostFunc(q->stream, FinishStaged, new Staged{d, pin, n, in ? nullptr : h});
    if (r != kSuccess) {
      d->staging->Give(pin);
      return Check(d, r, in ? "a staged copy in" : "a staged copy out", q->last_kernel);
    }
  }
  return nullptr;
}

// Records an event on `q` for `done`, if asked.
uopc_error* Done(uopc_queue* q, uopc_event** done) {
  if (!done) return nullptr;
  auto e = std::make_unique<uopc_event>();
  e->device = q->device;
  e->after_kernel = q->last_kernel;
  if (uopc_error* err =
          Check(q->device, g_driver->EventCreate(&e->event, kEventDisableTiming), "cuEventCreate"))
    return err;
  if (uopc_error* err = Check(q->device, g_driver->EventRecord(e->event, q->stream),
                              "cuEventRecord", q->last_kernel)) {
    g_driver->EventDestroy(e->event);
    return err;
  }
  *done = e.release();
  return nullptr;
}

uopc_error* CheckRange(const uopc_buffer* b, uint64_t offset, uint64_t size, const char* what) {
  if (offset > b->size || size > b->size - offset)
    return uopc_sdk_error(
        UOPC_OUT_OF_RANGE, "cuda plugin: %s of %llu bytes at offset %llu of a %llu-byte buffer",
        what, (unsigned long long)size, (unsigned long long)offset, (unsigned long long)b->size);
  return nullptr;
}

// ---- the device table ----

uopc_error* DeviceCount(uopc_device_count_args* a) {
  if (!a) return NULL_ARG("args");
  a->count = static_cast<uint32_t>(g_devices.size());
  return nullptr;
}

uopc_error* DeviceGet(uopc_device_get_args* a) {
  if (!a) return NULL_ARG("args");
  if (a->index >= g_devices.size())
    return uopc_sdk_error(UOPC_OUT_OF_RANGE, "cuda plugin: device %u of %zu", a->index,
                          g_devices.size());
  a->device = g_devices[a->index].get();
  return nullptr;
}

uopc_error* DeviceDescribe(uopc_device_describe_args* a) {
  if (!a || !a->device || !a->props) return NULL_ARG(!a ? "args" : a->device ? "props" : "device");
  const uopc_device* d = a->device;
  uopc_device_props* out = a->props;
  UOPC_SDK_CLEAR(out);
  out->name = d->name.c_str();
  out->kind = d->kind.c_str();
  out->uid = d->uid.c_str();
  out->backend = d->backend.c_str();
  out->type = UOPC_DEVICE_GPU;
  out->mem_total = d->total_mem;
  out->caps = UOPC_DEVICE_CAP_ASYNC | UOPC_DEVICE_CAP_COPY_D2D | UOPC_DEVICE_CAP_COPY_PEER;
  return nullptr;
}

uopc_error* MemoryInfo(uopc_memory_args* a) {
  if (!a || !a->device) return NULL_ARG(a ? "device" : "args");
  uopc_device* d = const_cast<uopc_device*>(a->device);
  if (uopc_error* e = Use(d)) return e;
  size_t free = 0, total = 0;
  if (uopc_error* e = Check(d, g_driver->MemGetInfo(&free, &total), "cuMemGetInfo")) return e;
  a->bytes_in_use = total - free;
  a->bytes_limit = total;
  return nullptr;
}

uopc_error* BufferAlloc(uopc_buffer_alloc_args* a) {
  if (!a || !a->device) return NULL_ARG(a ? "device" : "args");
  uopc_device* d = a->device;
  const uint64_t size = a->size, align = a->align;
  if (align & (align - 1))
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "cuda plugin: alignment %llu is not a power of two",
                          (unsigned long long)align);
  if (align > 256)  // cuMemAlloc aligns to 256 bytes
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "cuda plugin: alignment %llu is more than 256",
                          (unsigned long long)align);
  if (uopc_error* e = Use(d)) return e;
  auto b = std::make_unique<uopc_buffer>();
  b->size = size;
  b->device = d;
  if (uopc_error* e = Check(d, g_driver->MemAlloc(&b->ptr, size ? size : 1), "cuMemAlloc"))
    return e;
  Live(b.get(), true);
  a->buffer = b.release();
  return nullptr;
}

uopc_error* BufferFree(uopc_buffer_free_args* a) {
  if (!a || !a->buffer) return NULL_ARG(a ? "buffer" : "args");
  uopc_buffer* b = a->buffer;
  if (uopc_error* e = CheckLive(b, "buffer_free")) return e;
  Live(b, false);
  std::unique_ptr<uopc_buffer> owned(b);
  uopc_device* d = b->device;
  if (d->lost) {  // the context is gone; so is the memory
    if (b->release) b->release(b->release_ctx);
    return nullptr;
  }
  if (uopc_error* e = Use(d)) return e;
  // work queued on it finishes first (frees are rare: the host's allocator keeps blocks)
  uopc_error* e = Check(d, g_driver->CtxSynchronize(), "cuCtxSynchronize");
  if (b->release) {
    b->release(b->release_ctx);
    return e;
  }
  return e ? e : Check(d, g_driver->MemFree(b->ptr), "cuMemFree");
}

uopc_error* BufferAddress(uopc_buffer_address_args* a) {
  if (!a || !a->buffer) return NULL_ARG(a ? "buffer" : "args");
  if (uopc_error* e = CheckLive(a->buffer, "buffer_address")) return e;
  a->address = reinterpret_cast<void*>(static_cast<uintptr_t>(a->buffer->ptr));
  return nullptr;
}

uopc_error* BufferWrap(uopc_buffer_wrap_args* a) {
  if (!a || !a->device || !a->release)
    return NULL_ARG(!a ? "args" : a->device ? "release" : "device");
  if (a->device->lost) return Lost(a->device);
  auto* b = new (std::nothrow) uopc_buffer{};
  if (!b) return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "cuda plugin: out of memory");
  b->ptr = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(a->address));
  b->size = a->size;
  b->device = a->device;
  b->release = a->release;
  b->release_ctx = a->release_ctx;
  Live(b, true);
  a->buffer = b;
  return nullptr;
}

uopc_error* QueueCreate(uopc_queue_create_args* a) {
  if (!a || !a->device) return NULL_ARG(a ? "device" : "args");
  uopc_device* d = a->device;
  if (uopc_error* e = Use(d)) return e;
  auto q = std::make_unique<uopc_queue>();
  q->device = d;
  if (uopc_error* e = Check(d, g_driver->StreamCreate(&q->stream, kStreamNonBlocking),
                            "cuStreamCreate"))
    return e;
  Live(q.get(), true);
  a->queue = q.release();
  return nullptr;
}

uopc_error* QueueDestroy(uopc_queue_destroy_args* a) {
  if (!a || !a->queue) return NULL_ARG(a ? "queue" : "args");
  uopc_queue* q = a->queue;
  if (uopc_error* e = CheckLive(q, "queue_destroy")) return e;
  Live(q, false);
  std::unique_ptr<uopc_queue> owned(q);
  if (!Usable(q->device)) return nullptr;
  g_driver->StreamSynchronize(q->stream);
  g_driver->StreamDestroy(q->stream);
  return nullptr;
}

uopc_error* CopyH2D(uopc_copy_h2d_args* a) {
  if (!a || !a->queue || !a->dst || (!a->src && a->size)) return NULL_ARG("an argument");
  uopc_queue* q = a->queue;
  const uopc_buffer* dst = a->dst;
  const void* src = a->src;
  const uint64_t off = a->dst_offset, size = a->size;
  if (uopc_error* e = CheckLive(dst, "copy in")) return e;
  if (uopc_error* e = CheckRange(dst, off, size, "copy in")) return e;
  uopc_device* d = q->device;
  if (uopc_error* e = Use(d)) return e;
  if (uopc_error* e = StagedCopy(q, dst->ptr + off, const_cast<void*>(src), size, /*in=*/true))
    return e;
  return Done(q, a->done);
}

uopc_error* CopyD2H(uopc_copy_d2h_args* a) {
  if (!a || !a->queue || !a->src || (!a->dst && a->size)) return NULL_ARG("an argument");
  uopc_queue* q = a->queue;
  void* dst = a->dst;
  const uopc_buffer* src = a->src;
  const uint64_t off = a->src_offset, size = a->size;
  if (uopc_error* e = CheckLive(src, "copy out")) return e;
  if (uopc_error* e = CheckRange(src, off, size, "copy out")) return e;
  uopc_device* d = q->device;
  if (uopc_error* e = Use(d)) return e;
  if (uopc_error* e = StagedCopy(q, src->ptr + off, dst, size, /*in=*/false)) return e;
  return Done(q, a->done);
}

uopc_error* Copy(uopc_copy_args* a) {
  if (!a || !a->queue || !a->dst || !a->src) return NULL_ARG("an argument");
  if (uopc_error* e = CheckLive(a->src, "copy from")) return e;
  if (uopc_error* e = CheckLive(a->dst, "copy to")) return e;
  if (uopc_error* e = CheckRange(a->dst, a->dst_offset, a->size, "copy to")) return e;
  if (uopc_error* e = CheckRange(a->src, a->src_offset, a->size, "copy from")) return e;
  uopc_queue* q = a->queue;
  uopc_device* d = q->device;
  for (uopc_device* x : {a->dst->device, a->src->device})
    if (x->lost) return Lost(x);
  if (uopc_error* e = Use(d)) return e;
  if (a->size) {
    CUresult r = a->dst->device == a->src->device
                     ? g_driver->MemcpyDtoDAsync(a->dst->ptr + a->dst_offset,
                                                 a->src->ptr + a->src_offset, a->size, q->stream)
                     : g_driver->MemcpyPeerAsync(a->dst->ptr + a->dst_offset, a->dst->device->ctx,
                                                 a->src->ptr + a->src_offset, a->src->device->ctx,
                                                 a->size, q->stream);
    if (uopc_error* e = Check(d, r, "copy", q->last_kernel)) return e;
  }
  return Done(q, a->done);
}

uopc_error* ProgramLoad(uopc_program_load_args* a) {
  if (!a || !a->device || !a->binary || (!a->entries && a->num_entries))
    return NULL_ARG("an argument");
  uopc_device* d = a->device;
  const char* const* entries = a->entries;
  const uint32_t n = a->num_entries;
  const uint64_t size = a->size;
  const char* bytes = static_cast<const char*>(a->binary);
  if (size <= kHeader || std::memcmp(bytes, kMagic, kHeader - 1) != 0)
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                          "cuda plugin: not a program of this plugin's compile (no %s magic)",
                          kMagic);
  if (uopc_error* e = Use(d)) return e;
  // a PTX image is text the driver wants NUL-terminated; a cubin is taken as it is
  std::string image(bytes + kHeader, size - kHeader);
  image.push_back('\0');
  auto p = std::make_unique<uopc_program>();
  p->device = d;
  if (uopc_error* e = Check(d, g_driver->ModuleLoadData(&p->module, image.data()), "cuModuleLoadData"))
    return e;
  for (uint32_t i = 0; i < n; ++i) {
    CUfunction f = nullptr;
    if (CUresult r = g_driver->ModuleGetFunction(&f, p->module, entries[i]); r != kSuccess) {
      g_driver->ModuleUnload(p->module);
      return uopc_sdk_error(UOPC_NOT_FOUND, "cuda plugin: the program has no kernel '%s' (%s)",
                            entries[i], g_driver->Error(r).c_str());
    }
    p->functions.push_back(f);
    p->names.push_back(entries[i]);
  }
  Live(p.get(), true);
  a->program = p.release();
  return nullptr;
}

uopc_error* ProgramUnload(uopc_program_unload_args* a) {
  if (!a || !a->program) return NULL_ARG(a ? "program" : "args");
  uopc_program* p = a->program;
  if (uopc_error* e = CheckLive(p, "program_unload")) return e;
  Live(p, false);
  std::unique_ptr<uopc_program> owned(p);
  if (Usable(p->device)) g_driver->ModuleUnload(p->module);
  return nullptr;
}

uopc_error* Launch(uopc_launch_args* a) {
  if (!a || !a->queue || !a->program) return NULL_ARG("an argument");
  uopc_queue* q = a->queue;
  if (uopc_error* e = CheckLive(a->program, "launch")) return e;
  uopc_device* d = q->device;
  if (a->program->device != d)
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "cuda plugin: a program of %s launched on %s",
                          a->program->device->name.c_str(), d->name.c_str());
  if (a->entry >= a->program->functions.size())
    return uopc_sdk_error(UOPC_OUT_OF_RANGE, "cuda plugin: entry %u of a program with %zu",
                          a->entry, a->program->functions.size());
  if ((a->num_buffers && !a->buffers) || (a->num_vars && !a->vars))
    return NULL_ARG("buffers or vars");
  for (int i = 0; i < 3; ++i)
    if (a->grid[i] == 0 || a->block[i] == 0)
      return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "cuda plugin: launch dims of zero");
  // the kernel's parameters: every buffer slot, then the VARs as int
  std::vector<CUdeviceptr> ptrs(a->num_buffers, 0);
  std::vector<int> vars(a->num_vars);
  std::vector<void*> params;
  for (uint32_t i = 0; i < a->num_buffers; ++i) {
    const uopc_buffer* b = a->buffers[i];
    if (b) {
      if (uopc_error* e = CheckLive(b, "launch")) return e;
      uint64_t off = a->offsets ? a->offsets[i] : 0;
      if (off > b->size)
        return uopc_sdk_error(UOPC_OUT_OF_RANGE, "cuda plugin: offset %llu past buffer %u",
                              (unsigned long long)off, i);
      if (b->device != d)
        return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                              "cuda plugin: launch on %s with buffer %u of %s; copy it there first",
                              d->name.c_str(), i, b->device->name.c_str());
      ptrs[i] = b->ptr + off;
    }
    params.push_back(&ptrs[i]);
  }
  for (uint32_t v = 0; v < a->num_vars; ++v) {
    vars[v] = static_cast<int>(a->vars[v]);
    params.push_back(&vars[v]);
  }
  if (uopc_error* e = Use(d)) return e;
  const std::string& name = a->program->names[a->entry];
  CUresult r = g_driver->LaunchKernel(a->program->functions[a->entry], a->grid[0], a->grid[1],
                                      a->grid[2], a->block[0], a->block[1], a->block[2], 0,
                                      q->stream, params.data(), nullptr);
  if (uopc_error* e = Check(d, r, "cuLaunchKernel", name)) return e;
  q->last_kernel = name;
  return Done(q, a->done);
}

// The function of a supplied kernel's variant on `d` (allowed `shared` bytes of dynamic
// shared memory), the kernels' program loaded at the first.
uopc_error* SuppliedEntry(uopc_device* d, const std::string& entry, uint32_t shared,
                          CUfunction* f) {
  std::lock_guard<std::mutex> lock(d->supplied_mu);
  if (!d->supplied) {
    absl::StatusOr<std::string> bin =
        g_build_supplied ? g_build_supplied(d->arch)
                         : absl::FailedPreconditionError("no compiler for the supplied kernels");
    if (!bin.ok())
      return uopc_sdk_error(static_cast<uopc_code>(bin.status().code()),
                            "cuda plugin: the supplied kernels for sm_%d: %s", d->arch,
                            std::string(bin.status().message()).c_str());
    std::string image = bin->substr(kHeader);
    image.push_back('\0');
    if (uopc_error* e = Check(d, g_driver->ModuleLoadData(&d->supplied, image.data()),
                              "cuModuleLoadData (the supplied kernels)"))
      return e;
  }
  auto it = d->supplied_entries.find(entry);
  if (it == d->supplied_entries.end()) {
    CUfunction fn = nullptr;
    if (CUresult r = g_driver->ModuleGetFunction(&fn, d->supplied, entry.c_str()); r != kSuccess)
      return uopc_sdk_error(UOPC_NOT_FOUND, "cuda plugin: the supplied kernels have no '%s' (%s)",
                            entry.c_str(), g_driver->Error(r).c_str());
    if (shared > (48u << 10))  // (beyond 48 KiB a block must opt in)
      if (uopc_error* e = Check(d, g_driver->FuncSetAttribute(fn, kFuncMaxDynamicShared, shared),
                                "cuFuncSetAttribute", entry))
        return e;
    it = d->supplied_entries.emplace(entry, fn).first;
  }
  *f = it->second;
  return nullptr;
}

// A supplied kernel (backends/cuda/matmul_kernels.h): its params checked against the buffers
// here, as a generated kernel's are by the host, then the variant for the operands' layouts
// launched on the queue's stream.
uopc_error* KernelLaunch(uopc_kernel_launch_args* a) {
  if (!a || !a->queue || !a->name) return NULL_ARG("an argument");
  uopc_queue* q = a->queue;
  uopc_device* d = q->device;
  const SuppliedKernel* k = nullptr;
  for (const SuppliedKernel& s : d->target->target.kernels)
    if (s.name == a->name) k = &s;
  if (!k)
    return uopc_sdk_error(UOPC_NOT_FOUND, "cuda plugin: %s supplies no kernel '%s'",
                          d->name.c_str(), a->name);
  if (a->num_buffers != 3 || !a->buffers || (a->num_params && !a->params))
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "cuda plugin: %s takes 3 buffers; got %u", a->name,
                          a->num_buffers);
  CUdeviceptr ptrs[3];
  std::array<uint64_t, 3> bytes;
  for (int i = 0; i < 3; ++i) {
    const uopc_buffer* b = a->buffers[i];
    if (!b) return NULL_ARG("a buffer");
    if (uopc_error* e = CheckLive(b, a->name)) return e;
    const uint64_t off = a->offsets ? a->offsets[i] : 0;
    if (uopc_error* e = CheckRange(b, off, 0, a->name)) return e;
    if (b->device != d)
      return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "cuda plugin: %s on %s with buffer %d of %s",
                            a->name, d->name.c_str(), i, b->device->name.c_str());
    ptrs[i] = b->ptr + off;
    bytes[i] = b->size - off;
  }
  const absl::StatusOr<MatmulParams> p = CheckedMatmulLaunch(
      absl::MakeConstSpan(a->params, a->num_params), {k->out, k->a, k->b}, bytes);
  if (!p.ok())
    return uopc_sdk_error(static_cast<uopc_code>(p.status().code()), "cuda plugin: %s: %s", a->name,
                          std::string(p.status().message()).c_str());
  static const std::string shape = [] {  // (for measuring: the planner's choice otherwise)
    std::vector<std::string> s = EnvNames("UOPC_CUDA_MMA_SHAPE", {"n256", "n128"});
    return s.empty() ? std::string() : s[0];
  }();
  const absl::StatusOr<MatmulLaunch> l =
      PlanMatmulLaunch(k->name, *p, d->target->target.cores, shape);
  if (!l.ok())
    return uopc_sdk_error(static_cast<uopc_code>(l.status().code()), "cuda plugin: %s",
                          std::string(l.status().message()).c_str());
  if (uopc_error* e = Use(d)) return e;
  CUfunction fn = nullptr;
  if (uopc_error* e = SuppliedEntry(d, l->entry, l->shared_bytes, &fn)) return e;
  std::array<int64_t, MatmulParams::kCount> values = p->Values();
  void* params[] = {&ptrs[0], &ptrs[1], &ptrs[2], values.data()};
  CUresult r =
      g_driver->LaunchKernel(fn, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                             l->block[2], l->shared_bytes, q->stream, params, nullptr);
  if (uopc_error* e = Check(d, r, "cuLaunchKernel", l->entry)) return e;
  q->last_kernel = l->entry;
  return Done(q, a->done);
}

uopc_error* QueueWaitEvent(uopc_queue_wait_event_args* a) {
  if (!a || !a->queue || !a->event) return NULL_ARG("an argument");
  uopc_queue* q = a->queue;
  uopc_event* e = a->event;
  if (uopc_error* err = Use(q->device)) return err;
  return Check(q->device, g_driver->StreamWaitEvent(q->stream, e->event, 0), "cuStreamWaitEvent");
}

uopc_error* EventWait(uopc_event_wait_args* a) {
  if (!a || !a->event) return NULL_ARG(a ? "event" : "args");
  uopc_event* e = a->event;
  const uint64_t timeout_ns = a->timeout_ns;
  if (uopc_error* err = Use(e->device)) return err;
  if (timeout_ns == ~uint64_t{0})
    return Check(e->device, g_driver->EventSynchronize(e->event), "waiting for an event",
                 e->after_kernel);
  auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  for (;;) {
    CUresult r = g_driver->EventQuery(e->event);
    if (r != kNotReady) return Check(e->device, r, "waiting for an event", e->after_kernel);
    if (std::chrono::steady_clock::now() >= until)
      return uopc_sdk_error(UOPC_DEADLINE_EXCEEDED, "cuda plugin: event not done after %llu ns",
                            (unsigned long long)timeout_ns);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

uopc_error* EventQuery(uopc_event_query_args* a) {
  if (!a || !a->event) return NULL_ARG(a ? "event" : "args");
  uopc_event* e = a->event;
  if (uopc_error* err = Use(e->device)) return err;
  CUresult r = g_driver->EventQuery(e->event);
  a->done = r != kNotReady;
  return r == kNotReady ? nullptr : Check(e->device, r, "an event", e->after_kernel);
}

void EventDestroy(uopc_event_destroy_args* a) {
  uopc_event* e = a ? a->event : nullptr;
  if (!e) return;
  if (Usable(e->device)) g_driver->EventDestroy(e->event);
  delete e;
}

uopc_error* QueueSynchronize(uopc_queue_synchronize_args* a) {
  if (!a || !a->queue) return NULL_ARG(a ? "queue" : "args");
  uopc_queue* q = a->queue;
  if (uopc_error* e = Use(q->device)) return e;
  return Check(q->device, g_driver->StreamSynchronize(q->stream), "cuStreamSynchronize",
               q->last_kernel);
}

}  // namespace

absl::Status OpenDevices(const Driver& driver) {
  g_driver = &driver;
  if (!g_devices.empty()) return absl::OkStatus();
  int n = 0;
  if (CUresult r = driver.DeviceGetCount(&n); r != kSuccess || n == 0)
    return absl::UnavailableError(
        absl::StrCat("no CUDA device (", r == kSuccess ? "the driver found none" : driver.Error(r), ")"));
  for (int i = 0; i < n; ++i) {
    auto d = std::make_unique<uopc_device>();
    d->ordinal = i;
    char name[256] = {0}, bus[64] = {0};
    int major = 0, minor = 0, threads = 1024, grid = 0;
    size_t mem = 0;
    if (CUresult r = driver.DeviceGet(&d->dev, i); r != kSuccess)
      return absl::InternalError(absl::StrCat("cuDeviceGet(", i, "): ", driver.Error(r)));
    driver.DeviceGetName(name, sizeof name - 1, d->dev);
    driver.DeviceTotalMem(&mem, d->dev);
    driver.DeviceGetAttribute(&major, kAttrCcMajor, d->dev);
    driver.DeviceGetAttribute(&minor, kAttrCcMinor, d->dev);
    driver.DeviceGetAttribute(&threads, kAttrMaxThreadsPerBlock, d->dev);
    driver.DeviceGetAttribute(&grid, kAttrMaxGridDimX, d->dev);
    driver.DeviceGetPCIBusId(bus, sizeof bus - 1, d->dev);
    if (CUresult r = driver.DevicePrimaryCtxRetain(&d->ctx, d->dev); r != kSuccess)
      return absl::InternalError(absl::StrCat("CUDA:", i, ": no context: ", driver.Error(r)));
    d->arch = major * 10 + minor;
    GpuAttributes a{.arch = d->arch, .threads_per_block = threads};
    int l2 = 0, shared = 0;
    driver.DeviceGetAttribute(&a.multiprocessors, kAttrMultiprocessors, d->dev);
    driver.DeviceGetAttribute(&a.warp, kAttrWarpSize, d->dev);
    driver.DeviceGetAttribute(&l2, kAttrL2Bytes, d->dev);
    driver.DeviceGetAttribute(&shared, kAttrSharedPerBlockOptin, d->dev);
    a.l2_bytes = l2;
    a.shared_per_block = shared;
    Target target = GpuTarget(a);
    if (EnvBool("UOPC_CUDA_KERNELS", true)) target.kernels = MatmulKernels(d->arch);
    d->target = std::make_unique<TargetStrings>(std::move(target));
    d->max_threads = static_cast<uint32_t>(threads);
    d->max_grid = grid > 0 ? static_cast<uint64_t>(grid) : 2147483647;
    d->total_mem = mem;
    d->name = absl::StrCat("CUDA:", i);
    d->kind = absl::StrCat(name, ", sm_", d->arch);
    d->uid = absl::StrCat("cuda://", bus[0] ? bus : std::to_string(i));
    d->backend = absl::StrCat("cuda-nvrtc-sm_", d->arch);
    d->staging = new PinnedPool(  // (never deleted: no driver call at the process's exit)
        PinnedPoolOptionsFromEnvironment(),
        [](size_t n) -> void* {
          void* p = nullptr;
          return g_driver->MemAllocHost(&p, n) == kSuccess ? p : nullptr;
        },
        [](void* p) { g_driver->MemFreeHost(p); });
    g_devices.push_back(std::move(d));
  }
  return absl::OkStatus();
}

std::vector<uopc_device*> Devices() {
  std::vector<uopc_device*> out;
  for (const auto& d : g_devices) out.push_back(d.get());
  return out;
}

std::string PackBinary(bool ptx, const std::string& bytes) {
  std::string out(kMagic, kHeader - 1);
  out.push_back(ptx ? 'P' : 'C');
  return out + bytes;
}

void FillDeviceCalls(uopc_api* api, SuppliedBuild build) {
  g_build_supplied = build;
  api->device_count = DeviceCount;
  api->device_get = DeviceGet;
  api->device_describe = DeviceDescribe;
  api->buffer_alloc = BufferAlloc;
  api->buffer_free = BufferFree;
  api->queue_create = QueueCreate;
  api->queue_destroy = QueueDestroy;
  api->copy_h2d = CopyH2D;
  api->copy_d2h = CopyD2H;
  api->program_load = ProgramLoad;
  api->program_unload = ProgramUnload;
  api->launch = Launch;
  api->queue_wait_event = QueueWaitEvent;
  api->event_wait = EventWait;
  api->event_query = EventQuery;
  api->event_destroy = EventDestroy;
  api->queue_synchronize = QueueSynchronize;
  api->copy = Copy;
  api->memory_info = MemoryInfo;
  api->buffer_address = BufferAddress;
  api->buffer_wrap = BufferWrap;
  api->kernel_launch = KernelLaunch;
}

}  // namespace uopc::cuda
