#include "backends/c/cpu_device.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>

#include <dlfcn.h>
#include <unistd.h>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "backends/c/matmul_kernels.h"
#include "backends/c/packed_b_cache.h"
#include "backends/c/thread_pool.h"
#include "backends/cuda/emulated_matmul_kernels.h"
#include "backends/cuda/gpu_target.h"
#include "backends/plugin_sdk.h"
#include "core/parse_number.h"

namespace uopc::cpu {
namespace {

using EntryFn = void (*)(void* const*, const long long*, long long, long long);

constexpr int kMaxDevices = 64;
// Chunks of a kernel's global range a thread: with one a thread, a worker that is asleep
// when the launch comes (the host computed for a while) wakes to find its chunk taken by
// the launcher, which then runs the whole kernel alone.
constexpr int kChunksPerThread = 4;

std::mutex g_live_mu;
absl::flat_hash_set<const uopc_buffer*> g_live;  // handles allocated and not yet freed

std::mutex g_writes_mu;
absl::flat_hash_map<std::string, std::vector<bool>> g_writes;  // of each kernel rendered

std::once_flag g_once;
uopc_error* g_init_error = nullptr;  // the first Initialize's outcome, repeated after
std::vector<std::unique_ptr<uopc_device>> g_devices;
Materializer g_materialize;

#define NULL_ARG(name) uopc_sdk_error(UOPC_INVALID_ARGUMENT, "c plugin: %s is NULL", name)

uopc_error* Error(const WorkStatus& s) {
  return s.ok() ? nullptr : uopc_sdk_error(s.code, "%s", s.message.c_str());
}

std::string Env(const std::string& suffix) {
  const char* v = std::getenv(absl::StrCat("UOPC_", kPrefix, "_", suffix).c_str());
  return v ? v : "";
}

std::string ReadLine(const char* path, const char* key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return line.substr(line.find(':') + 2);
  return "";
}

uint64_t PhysicalMemory() {
  return static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
}

// "4096", "64k", "512M", "2g" (powers of 1024); false if it is none of these.
bool ParseBytes(std::string text, uint64_t* out) {
  uint64_t unit = 1;
  if (!text.empty()) {
    switch (absl::ascii_tolower(text.back())) {
      case 'k': unit = 1ull << 10; break;
      case 'm': unit = 1ull << 20; break;
      case 'g': unit = 1ull << 30; break;
      default: break;
    }
    if (unit != 1) text.pop_back();
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n > ~uint64_t{0} / unit) return false;
  *out = n * unit;
  return true;
}

uopc_error* Configure() {
  const std::string var = absl::StrCat("UOPC_", kPrefix, "_");
  int64_t n = 1;
  if (std::string v = Env("DEVICES"); !v.empty()) {
    absl::StatusOr<int64_t> parsed = ParseInt(var + "DEVICES", v, 1, kMaxDevices);
    if (!parsed.ok())
      return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "c plugin: %s",
                            std::string(parsed.status().message()).c_str());
    n = *parsed;
  }
  uint64_t limit = PhysicalMemory();
  if (std::string v = Env("MEMORY"); !v.empty() && !ParseBytes(v, &limit))
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                          "c plugin: %sMEMORY=%s; expected bytes per device (4096, 64k, 512M, 2G)",
                          var.c_str(), v.c_str());
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  std::string model = ReadLine("/proc/cpuinfo", "model name");
  for (int i = 0; i < n; ++i) {
    auto d = std::make_unique<uopc_device>();
    d->name = absl::StrCat(kPrefix, ":", i);
    // (the threads too: a kernel's speed, and so the kernel search's choice, depends on them)
    const int threads = ThreadsFromEnvironment();
    d->kind = absl::StrCat(model.empty() ? "cpu" : model, ", ", sysconf(_SC_NPROCESSORS_ONLN),
                           " cores, ", threads, threads == 1 ? " thread" : " threads");
    d->uid = absl::StrCat(absl::AsciiStrToLower(kPrefix), "://", host, "/", i);
    d->limit = limit;
    g_devices.push_back(std::move(d));
  }
  if (std::string v = Env("EMULATE"); !v.empty()) {
    absl::StatusOr<Target> gpu = NamedGpuTarget(v);
    if (!gpu.ok())
      return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "c plugin: %sEMULATE=%s: %s", var.c_str(),
                            v.c_str(), std::string(gpu.status().message()).c_str());
    auto d = std::make_unique<uopc_device>();
    d->name = "EMU:0";
    d->emulates = gpu->arch;
    d->multiprocessors = gpu->cores;
    d->supplies = cpu::EmulatedGpuKernels(gpu->arch);
    d->kind = absl::StrCat(gpu->arch, " emulated on ", model.empty() ? "this cpu" : model);
    d->uid = absl::StrCat("emu://", host, "/", gpu->arch);
    d->limit = limit;
    g_devices.push_back(std::move(d));
  }
  if (std::string v = Env("FAULT"); !v.empty()) {
    size_t at = v.find('@');
    int64_t launch = 0;
    uopc_device* hit = nullptr;
    for (auto& d : g_devices)
      if (at != std::string::npos && v.substr(0, at) == d->name) hit = d.get();
    if (!hit || !absl::SimpleAtoi(v.substr(at + 1), &launch) || launch < 1)
      return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                            "c plugin: %sFAULT=%s; expected DEVICE@N (the device is lost at its "
                            "N-th launch, N >= 1), e.g. %s:0@3",
                            var.c_str(), v.c_str(), kPrefix);
    hit->fail_at = launch;
  }
  return nullptr;
}

// ---- references that keep buffers alive while work uses them ----

// An id for a new buffer: never 0, never reused (packed_b_cache.h keys on it).
uint64_t NewBufferId() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

// What queued work calls once it has written b (before its completion is signalled, so that
// work ordered after it sees the count).
void Wrote(uopc_buffer* b) { b->writes.fetch_add(1, std::memory_order_release); }

BufferVersion VersionOf(const uopc_buffer* b) {
  const uint64_t writes = b->writes.load(std::memory_order_acquire);
  return {b->exposed.load(std::memory_order_acquire) ? 0 : b->id, writes};
}

void Unref(uopc_buffer* b) {
  if (b->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (b->id) PackedBCache::Get().Forget(b->id);
  if (b->release) {
    b->release(b->release_ctx);
    delete b;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(b->device->mu);
    b->device->in_use -= b->size;
  }
  std::free(b->data);
  delete b;
}

struct Ref {
  explicit Ref(const uopc_buffer* b) : b(const_cast<uopc_buffer*>(b)) {
    this->b->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Ref(const Ref& o) : Ref(o.b) {}
  Ref& operator=(const Ref&) = delete;
  ~Ref() { Unref(b); }
  uopc_buffer* b;
};

// A handle the caller may use: allocated here and not freed (a freed handle is refused,
// never followed).
uopc_error* CheckLive(const uopc_buffer* b, const char* what) {
  std::lock_guard<std::mutex> lock(g_live_mu);
  if (g_live.contains(b)) return nullptr;
  return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                        "c plugin: %s: %p is not a live buffer of this plugin (freed already?)",
                        what, static_cast<const void*>(b));
}

uopc_error* Lost(const uopc_device* d) {
  return uopc_sdk_error(UOPC_DEVICE_LOST, "c plugin: %s is lost (%sFAULT)", d->name.c_str(),
                        absl::StrCat("UOPC_", kPrefix, "_").c_str());
}

uopc_error* CheckRange(const uopc_buffer* b, uint64_t offset, uint64_t size, const char* what) {
  if (offset > b->size || size > b->size - offset)
    return uopc_sdk_error(
        UOPC_OUT_OF_RANGE, "c plugin: %s of %llu bytes at offset %llu of a %llu-byte buffer", what,
        (unsigned long long)size, (unsigned long long)offset, (unsigned long long)b->size);
  return nullptr;
}

// Queues `work` on `q` (or, with `inline_if_idle`, runs it at once when the queue has
// nothing else to do); `done`, when not NULL, receives its event.
uopc_error* Enqueue(uopc_queue* q, std::function<WorkStatus()> work, uopc_event** done,
                    bool inline_if_idle = false) {
  std::shared_ptr<Completion> c;
  if (done) {
    c = std::make_shared<Completion>();
    *done = new (std::nothrow) uopc_event{c};
    if (!*done) return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory");
  }
  if (inline_if_idle)
    q->work.RunOrPush(std::move(work), std::move(c));
  else
    q->work.Push(std::move(work), std::move(c));
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
    return uopc_sdk_error(UOPC_OUT_OF_RANGE, "c plugin: device %u of %zu", a->index,
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
  out->backend = "c-gcc";
  out->type = d->emulates.empty() ? UOPC_DEVICE_CPU : UOPC_DEVICE_ACCEL;
  out->mem_total = d->limit;
  out->caps = UOPC_DEVICE_CAP_ASYNC | UOPC_DEVICE_CAP_COPY_D2D | UOPC_DEVICE_CAP_COPY_PEER;
  return nullptr;
}

uopc_error* MemoryInfo(uopc_memory_args* a) {
  if (!a || !a->device) return NULL_ARG(a ? "device" : "args");
  uopc_device* d = const_cast<uopc_device*>(a->device);
  std::lock_guard<std::mutex> lock(d->mu);
  a->bytes_in_use = d->in_use;
  a->bytes_limit = d->limit;
  return nullptr;
}

uopc_error* BufferAlloc(uopc_buffer_alloc_args* a) {
  if (!a || !a->device) return NULL_ARG(a ? "device" : "args");
  uopc_device* d = a->device;
  const uint64_t size = a->size;
  uint64_t align = a->align;
  if (d->lost) return Lost(d);
  if (align & (align - 1))
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "c plugin: alignment %llu is not a power of two",
                          (unsigned long long)align);
  {
    std::lock_guard<std::mutex> lock(d->mu);
    if (size > d->limit - d->in_use)
      return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED,
                            "c plugin: cannot allocate %llu bytes on %s: %llu of its %llu bytes "
                            "are in use",
                            (unsigned long long)size, d->name.c_str(),
                            (unsigned long long)d->in_use, (unsigned long long)d->limit);
    d->in_use += size;
  }
  align = std::max<uint64_t>(align, 64);
  uint64_t rounded = (std::max<uint64_t>(size, 1) + align - 1) / align * align;
  void* p = rounded >= size ? std::aligned_alloc(align, rounded) : nullptr;
  uopc_buffer* b = p ? new (std::nothrow) uopc_buffer{p, size, d} : nullptr;
  if (!b) {
    std::free(p);
    std::lock_guard<std::mutex> lock(d->mu);
    d->in_use -= size;
    return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory allocating %llu bytes",
                          (unsigned long long)size);
  }
  b->id = NewBufferId();
  {
    std::lock_guard<std::mutex> lock(g_live_mu);
    g_live.insert(b);
  }
  a->buffer = b;
  return nullptr;
}

uopc_error* BufferFree(uopc_buffer_free_args* a) {
  if (!a || !a->buffer) return NULL_ARG(a ? "buffer" : "args");
  uopc_buffer* b = a->buffer;
  {
    std::lock_guard<std::mutex> lock(g_live_mu);
    if (!g_live.erase(b))
      return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                            "c plugin: buffer_free: %p is not a live buffer (freed twice?)",
                            static_cast<const void*>(b));
  }
  Unref(b);  // the owner's reference: freed now, or when the last queued use is done
  return nullptr;
}

uopc_error* BufferAddress(uopc_buffer_address_args* a) {
  if (!a || !a->buffer) return NULL_ARG(a ? "buffer" : "args");
  if (uopc_error* e = CheckLive(a->buffer, "buffer_address")) return e;
  a->buffer->exposed.store(true, std::memory_order_release);
  if (a->buffer->id) PackedBCache::Get().Forget(a->buffer->id);  // (never used again)
  a->address = a->buffer->data;
  return nullptr;
}

uopc_error* BufferWrap(uopc_buffer_wrap_args* a) {
  if (!a || !a->device || !a->release)
    return NULL_ARG(!a ? "args" : a->device ? "release" : "device");
  if (!a->address && a->size > 0) return NULL_ARG("address");
  if (a->device->lost) return Lost(a->device);
  auto* b = new (std::nothrow) uopc_buffer{a->address, a->size, a->device};
  if (!b) return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory");
  b->release = a->release;
  b->release_ctx = a->release_ctx;
  {
    std::lock_guard<std::mutex> lock(g_live_mu);
    g_live.insert(b);
  }
  a->buffer = b;
  return nullptr;
}

uopc_error* QueueCreate(uopc_queue_create_args* a) {
  if (!a || !a->device) return NULL_ARG(a ? "device" : "args");
  if (a->device->lost) return Lost(a->device);
  a->queue = new (std::nothrow) uopc_queue{a->device};
  return a->queue ? nullptr : uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory");
}

uopc_error* QueueDestroy(uopc_queue_destroy_args* a) {
  if (!a || !a->queue) return NULL_ARG(a ? "queue" : "args");
  delete a->queue;  // runs what is queued first
  return nullptr;
}

uopc_error* CopyH2D(uopc_copy_h2d_args* a) {
  if (!a || !a->queue || !a->dst || (!a->src && a->size)) return NULL_ARG("an argument");
  uopc_queue* q = a->queue;
  uopc_buffer* dst = a->dst;
  const void* src = a->src;
  const uint64_t off = a->dst_offset, size = a->size;
  if (q->device->lost) return Lost(q->device);
  if (uopc_error* e = CheckLive(dst, "copy in")) return e;
  if (uopc_error* e = CheckRange(dst, off, size, "copy in")) return e;
  return Enqueue(
      q,
      [r = Ref(dst), off, src, size] {
        if (size) std::memcpy(static_cast<char*>(r.b->data) + off, src, size);
        Wrote(r.b);
        return WorkStatus{};
      },
      a->done, /*inline_if_idle=*/true);
}

uopc_error* CopyD2H(uopc_copy_d2h_args* a) {
  if (!a || !a->queue || !a->src || (!a->dst && a->size)) return NULL_ARG("an argument");
  uopc_queue* q = a->queue;
  void* dst = a->dst;
  const uopc_buffer* src = a->src;
  const uint64_t off = a->src_offset, size = a->size;
  if (q->device->lost) return Lost(q->device);
  if (uopc_error* e = CheckLive(src, "copy out")) return e;
  if (uopc_error* e = CheckRange(src, off, size, "copy out")) return e;
  return Enqueue(
      q,
      [r = Ref(src), off, dst, size] {
        if (size) std::memcpy(dst, static_cast<const char*>(r.b->data) + off, size);
        return WorkStatus{};
      },
      a->done, /*inline_if_idle=*/true);
}

uopc_error* Copy(uopc_copy_args* a) {
  if (!a || !a->queue || !a->dst || !a->src) return NULL_ARG("an argument");
  if (uopc_error* e = CheckLive(a->src, "copy from")) return e;
  if (uopc_error* e = CheckLive(a->dst, "copy to")) return e;
  for (const uopc_device* d : {a->queue->device, a->dst->device, a->src->device})
    if (d->lost) return Lost(d);
  if (uopc_error* e = CheckRange(a->dst, a->dst_offset, a->size, "copy to")) return e;
  if (uopc_error* e = CheckRange(a->src, a->src_offset, a->size, "copy from")) return e;
  return Enqueue(
      a->queue,
      [d = Ref(a->dst), s = Ref(a->src), doff = a->dst_offset, soff = a->src_offset,
       size = a->size] {
        if (size)
          std::memmove(static_cast<char*>(d.b->data) + doff,
                       static_cast<const char*>(s.b->data) + soff, size);
        Wrote(d.b);
        return WorkStatus{};
      },
      a->done);
}

uopc_error* ProgramLoad(uopc_program_load_args* a) {
  if (!a || !a->device || !a->binary || (!a->entries && a->num_entries))
    return NULL_ARG("an argument");
  uopc_device* d = a->device;
  const char* const* entries = a->entries;
  const uint32_t n = a->num_entries;
  if (d->lost) return Lost(d);
  absl::StatusOr<std::string> path = absl::InternalError("c plugin: out of memory");
  try {
    path = g_materialize(absl::string_view(static_cast<const char*>(a->binary), a->size));
  } catch (const std::exception& e) {
    path = absl::InternalError(absl::StrCat("c plugin: ", e.what()));
  }
  if (!path.ok())
    return uopc_sdk_error(static_cast<uopc_code>(path.status().code()), "%s",
                          std::string(path.status().message()).c_str());
  void* h = dlopen(path->c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return uopc_sdk_error(UOPC_INTERNAL, "c plugin: dlopen %s: %s", path->c_str(), dlerror());
  auto prog = std::make_unique<uopc_program>(uopc_program{h, {}, {}});
  for (uint32_t i = 0; i < n; ++i) {
    std::string sym = absl::StrCat(entries[i], "_entry");
    auto fn = reinterpret_cast<EntryFn>(dlsym(h, sym.c_str()));
    if (!fn) {
      dlclose(h);
      return uopc_sdk_error(UOPC_NOT_FOUND, "c plugin: the program has no kernel '%s'", entries[i]);
    }
    prog->entries.push_back(fn);
    std::lock_guard<std::mutex> lock(g_writes_mu);
    auto it = g_writes.find(entries[i]);
    prog->writes.push_back(it == g_writes.end() ? std::vector<bool>() : it->second);
  }
  a->program = prog.release();
  return nullptr;
}

uopc_error* ProgramUnload(uopc_program_unload_args* a) {
  if (!a || !a->program) return NULL_ARG(a ? "program" : "args");
  uopc_program* p = a->program;
  dlclose(p->handle);
  delete p;
  return nullptr;
}

uopc_error* Launch(uopc_launch_args* a) {
  if (!a || !a->queue || !a->program) return NULL_ARG("an argument");
  uopc_queue* q = a->queue;
  uopc_device* dev = q->device;
  if (dev->lost) return Lost(dev);
  if (a->entry >= a->program->entries.size())
    return uopc_sdk_error(UOPC_OUT_OF_RANGE, "c plugin: entry %u of a program with %zu", a->entry,
                          a->program->entries.size());
  if ((a->num_buffers && !a->buffers) || (a->num_vars && !a->vars))
    return NULL_ARG("buffers or vars");
  std::vector<void*> ptrs(a->num_buffers);
  std::vector<Ref> refs, written;  // (the buffers it takes; those it may write)
  refs.reserve(a->num_buffers);
  const std::vector<bool>& writes = a->program->writes[a->entry];
  for (uint32_t i = 0; i < a->num_buffers; ++i) {
    const uopc_buffer* b = a->buffers[i];
    if (!b) continue;
    if (uopc_error* e = CheckLive(b, "launch")) return e;
    uint64_t off = a->offsets ? a->offsets[i] : 0;
    if (off > b->size)
      return uopc_sdk_error(UOPC_OUT_OF_RANGE, "c plugin: offset %llu past buffer %u",
                            (unsigned long long)off, i);
    if (b->device != dev)
      return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                            "c plugin: launch on %s with buffer %u of %s; copy it there first",
                            dev->name.c_str(), i, b->device->name.c_str());
    ptrs[i] = static_cast<char*>(b->data) + off;
    refs.emplace_back(b);
    if (writes.empty() || (i < writes.size() && writes[i])) written.emplace_back(b);
  }
  std::vector<long long> vars(a->vars, a->vars + a->num_vars);
  EntryFn fn = a->program->entries[a->entry];
  // a kernel with a global range of grid[0] runs it in chunks, kChunksPerThread a thread,
  // taken in turn by whichever thread is free (one that wakes late takes fewer)
  const int chunks = static_cast<int>(std::min<uint64_t>(
      std::max<uint32_t>(a->grid[0], 1),
      ThreadPool::Get().threads() == 1 ? 1 : ThreadPool::Get().threads() * kChunksPerThread));
  return Enqueue(
      q,
      [dev, fn, chunks, ptrs = std::move(ptrs), vars = std::move(vars), refs = std::move(refs),
       written = std::move(written)] {
        if (dev->fail_at && dev->launches.fetch_add(1) + 1 >= dev->fail_at) dev->lost = true;
        if (dev->lost)
          return WorkStatus{UOPC_DEVICE_LOST,
                            absl::StrCat("c plugin: ", dev->name, " was lost during a launch (",
                                         "UOPC_", kPrefix, "_FAULT)")};
        if (chunks == 1)
          fn(ptrs.data(), vars.data(), 0, 1);
        else
          ThreadPool::Get().ParallelFor(chunks,
                                        [&](int c) { fn(ptrs.data(), vars.data(), c, chunks); });
        for (const Ref& r : written) Wrote(r.b);
        return WorkStatus{};
      },
      a->done);
}

// A supplied kernel (backends/c/matmul_kernels.h): its params checked against the buffers
// here, as a generated kernel's are by the host, then queued as a launch is.
uopc_error* KernelLaunch(uopc_kernel_launch_args* a) {
  if (!a || !a->queue || !a->name) return NULL_ARG("an argument");
  uopc_device* const on = a->queue->device;
  const SuppliedKernel* k = on->emulates.empty() ? FindMatmulKernel(a->name) : nullptr;
  for (const SuppliedKernel& s : on->supplies)
    if (s.name == a->name) k = &s;
  if (!k)
    return uopc_sdk_error(UOPC_NOT_FOUND, "c plugin: %s supplies no kernel '%s'", on->name.c_str(),
                          a->name);
  if (a->num_buffers != 3 || !a->buffers || (a->num_params && !a->params))
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "c plugin: %s takes 3 buffers; got %u", a->name,
                          a->num_buffers);
  uopc_device* dev = a->queue->device;
  if (dev->lost) return Lost(dev);
  void* ptrs[3];
  std::array<uint64_t, 3> bytes;
  std::vector<Ref> refs;
  for (int i = 0; i < 3; ++i) {
    const uopc_buffer* b = a->buffers[i];
    if (!b) return NULL_ARG("a buffer");
    if (uopc_error* e = CheckLive(b, a->name)) return e;
    const uint64_t off = a->offsets ? a->offsets[i] : 0;
    if (uopc_error* e = CheckRange(b, off, 0, a->name)) return e;
    if (b->device != dev)
      return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "c plugin: %s on %s with buffer %d of %s",
                            a->name, dev->name.c_str(), i, b->device->name.c_str());
    ptrs[i] = static_cast<char*>(b->data) + off;
    bytes[i] = b->size - off;
    refs.emplace_back(b);
  }
  const absl::StatusOr<MatmulParams> checked = CheckedMatmulLaunch(
      absl::MakeConstSpan(a->params, a->num_params), {k->out, k->a, k->b}, bytes);
  if (!checked.ok())
    return uopc_sdk_error(static_cast<uopc_code>(checked.status().code()), "c plugin: %s: %s",
                          a->name, std::string(checked.status().message()).c_str());
  const MatmulParams p = *checked;
  if (dev->emulates.empty() && p.Flops() >= kMinThreadedFlops) ThreadPool::Get().Wake();
  return Enqueue(
      a->queue,
      [dev, k = *k, p, out = ptrs[0], x = ptrs[1], y = ptrs[2], refs = std::move(refs)] {
        if (dev->fail_at && dev->launches.fetch_add(1) + 1 >= dev->fail_at) dev->lost = true;
        if (dev->lost)
          return WorkStatus{UOPC_DEVICE_LOST,
                            absl::StrCat("c plugin: ", dev->name,
                                         " was lost during a launch (UOPC_", kPrefix, "_FAULT)")};
        absl::Status s =
            dev->emulates.empty()
                ? RunMatmulKernel(k.name.c_str(), p, out, x, y, VersionOf(refs[2].b))
                : cuda::RunEmulatedMatmul(k.name, p, dev->multiprocessors, out, x, y,
                                          [](int n, const std::function<void(int)>& body) {
                                            ThreadPool::Get().ParallelFor(n, body);
                                          });
        Wrote(refs[0].b);
        return s.ok() ? WorkStatus{}
                      : WorkStatus{static_cast<uopc_code>(s.code()), std::string(s.message())};
      },
      a->done);
}

uopc_error* QueueWaitEvent(uopc_queue_wait_event_args* a) {
  if (!a || !a->queue || !a->event) return NULL_ARG("an argument");
  return Enqueue(
      a->queue,
      [c = a->event->completion] {
        WorkStatus s;
        c->Wait(~uint64_t{0}, &s);
        if (!s.ok()) s.message = "c plugin: the work this queue waited for failed: " + s.message;
        return s;
      },
      nullptr);
}

uopc_error* EventWait(uopc_event_wait_args* a) {
  if (!a || !a->event) return NULL_ARG(a ? "event" : "args");
  WorkStatus s;
  if (!a->event->completion->Wait(a->timeout_ns, &s))
    return uopc_sdk_error(UOPC_DEADLINE_EXCEEDED, "c plugin: event not done after %llu ns",
                          (unsigned long long)a->timeout_ns);
  return Error(s);
}

uopc_error* EventQuery(uopc_event_query_args* a) {
  if (!a || !a->event) return NULL_ARG(a ? "event" : "args");
  a->done = a->event->completion->Done();
  return nullptr;
}

void EventDestroy(uopc_event_destroy_args* a) {
  if (a) delete a->event;
}

uopc_error* QueueSynchronize(uopc_queue_synchronize_args* a) {
  if (!a || !a->queue) return NULL_ARG(a ? "queue" : "args");
  return Error(a->queue->work.Synchronize());
}

}  // namespace

uopc_error* Initialize(Materializer materialize) {
  std::call_once(g_once, [&] {
    g_materialize = std::move(materialize);
    g_init_error = Configure();
    if (g_init_error) g_devices.clear();
  });
  if (!g_init_error) return nullptr;
  return uopc_sdk_error(g_init_error->code, "%s", g_init_error->msg);
}

void NoteKernelWrites(const std::string& name, const KernelSignature& sig) {
  std::vector<bool> writes;
  for (const KernelSignature::Buffer& b : sig.buffers) writes.push_back(b.written);
  std::lock_guard<std::mutex> lock(g_writes_mu);
  g_writes[name] = std::move(writes);
}

void FillDeviceCalls(uopc_api* api) {
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

}  // namespace uopc::cpu
