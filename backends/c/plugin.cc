// The C backend plugin, libuopc_plugin_c.so: a backend ("c-gcc": render C, compile with
// gcc into one shared object per plan, cached on disk) and a device ("CPU:0": host memory,
// programs loaded with dlopen, launched on the calling thread). It goes through the same
// C ABI as any outside plugin; only uopc_plugin_entry_v1 is exported.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "backends/c/compiler.h"
#include "backends/c/render_c.h"
#include "backends/plugin_sdk.h"
#include "core/ops.h"
#include "core/serialize.h"
#include "core/verify.h"
#include "passes/linearize.h"

struct uopc_backend {
  const char* name;
};
struct uopc_device {
  std::string name, kind, uid;
};
struct uopc_buffer {
  void* data;
  uint64_t size;
};
struct uopc_program {
  void* handle;
  std::vector<void (*)(void* const*, const long long*)> entries;
};
struct uopc_queue {
  uopc_device* device;
};
struct uopc_event {
  int done;
};

namespace uopc {
namespace {

using EntryFn = void (*)(void* const*, const long long*);

const uopc_host_api* g_host = nullptr;
uopc_backend g_backend{"c-gcc"};
uopc_device g_cpu;
std::unique_ptr<CCompiler> g_compiler;

void Log(uopc_log_level level, const std::string& msg) {
  if (g_host && g_host->log) g_host->log(g_host->log_ctx, level, msg.data(), msg.size());
}

CCompiler& Compiler() {
  static std::once_flag once;
  std::call_once(once, [] {
    CCompiler::Options o;
    o.warn = [](const std::string& m) { Log(UOPC_LOG_WARNING, m); };
    g_compiler = std::make_unique<CCompiler>(std::move(o));
  });
  return *g_compiler;
}

uopc_error* FromStatus(const absl::Status& s) {
  if (s.ok()) return nullptr;
  std::string m(s.message());
  return uopc_sdk_error(static_cast<uopc_code>(s.code()), "%s", m.c_str());
}

// Every entry point runs inside Guard: nothing throws across the ABI.
template <typename F>
uopc_error* Guard(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of host memory");
  } catch (const std::exception& e) {
    return uopc_sdk_error(UOPC_INTERNAL, "c plugin: %s", e.what());
  } catch (...) {
    return uopc_sdk_error(UOPC_INTERNAL, "c plugin: unknown exception");
  }
}

#define NULL_ARG(name) uopc_sdk_error(UOPC_INVALID_ARGUMENT, "c plugin: %s is NULL", name)

std::string ReadLine(const char* path, const char* key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return line.substr(line.find(':') + 2);
  return "";
}

int32_t Probe() {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin", ':'))
    if (access(absl::StrCat(dir, "/gcc").c_str(), X_OK) == 0) return 10;
  return 0;  // no compiler: unusable here
}

uopc_error* Initialize() {
  return Guard([]() -> uopc_error* {
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    std::string model = ReadLine("/proc/cpuinfo", "model name");
    g_cpu = {
        "CPU:0",
        absl::StrCat(model.empty() ? "cpu" : model, ", ", sysconf(_SC_NPROCESSORS_ONLN), " cores"),
        absl::StrCat("cpu://", host, "/0")};
    return nullptr;
  });
}

/// Zeroes the part of a caller's struct that both sides know, keeping its struct_size (the
/// caller's, which may be older and smaller than this plugin's).
template <typename T>
void Clear(T* out) {
  const uint64_t size = out->struct_size;
  std::memset(out, 0, std::min<uint64_t>(size, sizeof *out));
  out->struct_size = size;
}

// ---- backend ----

uint32_t BackendCount() { return 1; }

uopc_error* BackendGet(uint32_t i, uopc_backend** out) {
  if (!out) return NULL_ARG("out");
  if (i != 0) return uopc_sdk_error(UOPC_OUT_OF_RANGE, "c plugin: backend %u of 1", i);
  *out = &g_backend;
  return nullptr;
}

uopc_error* BackendDescribe(const uopc_backend* b, uopc_backend_desc* out) {
  if (!b || !out) return NULL_ARG(b ? "out" : "backend");
  return Guard([&]() -> uopc_error* {
    static const std::string fingerprint = Compiler().fingerprint();
    Clear(out);
    out->name = "c-gcc";
    out->target = "CPU:C:x86_64";
    out->fingerprint = fingerprint.c_str();
    out->lang = UOPC_LANG_C;
    for (int t = UOPC_DTYPE_BOOL; t <= UOPC_DTYPE_F64; ++t) out->dtypes |= 1ull << t;
    out->global_max[0] = out->global_max[1] = out->global_max[2] = 1;
    return nullptr;
  });
}

uopc_error* BackendSupports(const uopc_backend* b, const uopc_op_query* q, int32_t* supported) {
  if (!b || !q || !supported || !q->op) return NULL_ARG("an argument");
  std::optional<Ops> op = ParseOp(q->op);
  if (!op) return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "c plugin: unknown op '%s'", q->op);
  bool tensor_level = IsMovement(*op) || *op == Ops::REDUCE || *op == Ops::STAGE ||
                      *op == Ops::COPY || *op == Ops::ASSIGN;
  *supported = !tensor_level && q->dtype >= UOPC_DTYPE_VOID && q->dtype <= UOPC_DTYPE_F64;
  return nullptr;
}

uopc_error* Render(const uopc_render_args* a, uopc_blob** out) {
  if (!a || !out || !a->kernel || !a->name) return NULL_ARG("an argument");
  return Guard([&]() -> uopc_error* {
    absl::StatusOr<UOp> sink =
        DeserializeGraph(absl::string_view(static_cast<const char*>(a->kernel), a->kernel_size));
    if (!sink.ok()) return FromStatus(sink.status());
    if (absl::Status s = Verify(*sink); !s.ok()) return FromStatus(s);
    absl::StatusOr<std::vector<UOp>> program = Linearize(*sink);
    if (!program.ok()) return FromStatus(program.status());
    absl::StatusOr<std::string> src = RenderC(*program, a->name);
    if (!src.ok()) return FromStatus(src.status());
    *out = uopc_sdk_blob(src->data(), src->size());
    return *out ? nullptr : uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory");
  });
}

uopc_error* Compile(const uopc_compile_args* a, uopc_blob** out) {
  if (!a || !out || (!a->sources && a->num_sources)) return NULL_ARG("an argument");
  return Guard([&]() -> uopc_error* {
    std::string tu = CPrelude();
    for (uint64_t i = 0; i < a->num_sources; ++i) tu.append(a->sources[i].text, a->sources[i].size);
    absl::StatusOr<std::string> sealed = Compiler().Compile(tu);
    if (!sealed.ok()) return FromStatus(sealed.status());
    *out = uopc_sdk_blob(sealed->data(), sealed->size());
    return *out ? nullptr : uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory");
  });
}

// ---- device ----

uint32_t DeviceCount() { return 1; }

uopc_error* DeviceGet(uint32_t i, uopc_device** out) {
  if (!out) return NULL_ARG("out");
  if (i != 0) return uopc_sdk_error(UOPC_OUT_OF_RANGE, "c plugin: device %u of 1", i);
  *out = &g_cpu;
  return nullptr;
}

uopc_error* DeviceDescribe(const uopc_device* d, uopc_device_props* out) {
  if (!d || !out) return NULL_ARG(d ? "out" : "device");
  Clear(out);
  out->name = d->name.c_str();
  out->kind = d->kind.c_str();
  out->uid = d->uid.c_str();
  out->backend = "c-gcc";
  out->type = UOPC_DEVICE_CPU;
  out->mem_total = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  out->caps = UOPC_DEVICE_CAP_COPY_D2D;
  return nullptr;
}

uopc_error* BufferAlloc(uopc_device* d, uint64_t size, uint64_t align, uopc_buffer** out) {
  if (!d || !out) return NULL_ARG(d ? "out" : "device");
  if (align & (align - 1))
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "c plugin: alignment %llu is not a power of two",
                          (unsigned long long)align);
  uint64_t mem = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  if (size > mem)
    return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED,
                          "c plugin: cannot allocate %llu bytes on %s (%llu bytes of memory)",
                          (unsigned long long)size, d->name.c_str(), (unsigned long long)mem);
  align = std::max<uint64_t>(align, 64);
  uint64_t rounded = (std::max<uint64_t>(size, 1) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p)
    return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory allocating %llu bytes",
                          (unsigned long long)size);
  *out = new (std::nothrow) uopc_buffer{p, size};
  if (!*out) {
    std::free(p);
    return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory");
  }
  return nullptr;
}

uopc_error* BufferFree(uopc_buffer* b) {
  if (!b) return NULL_ARG("buffer");
  std::free(b->data);
  delete b;
  return nullptr;
}

uopc_error* QueueCreate(uopc_device* d, uopc_queue** out) {
  if (!d || !out) return NULL_ARG(d ? "out" : "device");
  *out = new (std::nothrow) uopc_queue{d};
  return *out ? nullptr : uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory");
}

uopc_error* QueueDestroy(uopc_queue* q) {
  if (!q) return NULL_ARG("queue");
  delete q;
  return nullptr;
}

// Work runs on the calling thread, so its event is complete when the call returns.
uopc_error* Done(uopc_event** done) {
  if (done) {
    *done = new (std::nothrow) uopc_event{1};
    if (!*done) return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory");
  }
  return nullptr;
}

uopc_error* CheckRange(const uopc_buffer* b, uint64_t offset, uint64_t size, const char* what) {
  if (offset > b->size || size > b->size - offset)
    return uopc_sdk_error(
        UOPC_OUT_OF_RANGE, "c plugin: %s of %llu bytes at offset %llu of a %llu-byte buffer", what,
        (unsigned long long)size, (unsigned long long)offset, (unsigned long long)b->size);
  return nullptr;
}

uopc_error* CopyH2D(uopc_queue* q, uopc_buffer* dst, uint64_t off, const void* src, uint64_t size,
                    uopc_event** done) {
  if (!q || !dst || (!src && size)) return NULL_ARG("an argument");
  if (uopc_error* e = CheckRange(dst, off, size, "copy in")) return e;
  if (size) std::memcpy(static_cast<char*>(dst->data) + off, src, size);
  return Done(done);
}

uopc_error* CopyD2H(uopc_queue* q, void* dst, const uopc_buffer* src, uint64_t off, uint64_t size,
                    uopc_event** done) {
  if (!q || !src || (!dst && size)) return NULL_ARG("an argument");
  if (uopc_error* e = CheckRange(src, off, size, "copy out")) return e;
  if (size) std::memcpy(dst, static_cast<const char*>(src->data) + off, size);
  return Done(done);
}

uopc_error* CopyD2D(uopc_queue* q, uopc_buffer* dst, uint64_t doff, const uopc_buffer* src,
                    uint64_t soff, uint64_t size, uopc_event** done) {
  if (!q || !dst || !src) return NULL_ARG("an argument");
  if (uopc_error* e = CheckRange(dst, doff, size, "copy to")) return e;
  if (uopc_error* e = CheckRange(src, soff, size, "copy from")) return e;
  if (size)
    std::memmove(static_cast<char*>(dst->data) + doff, static_cast<const char*>(src->data) + soff,
                 size);
  return Done(done);
}

uopc_error* ProgramLoad(uopc_device* d, const void* binary, uint64_t size,
                        const char* const* entries, uint32_t n, uopc_program** out) {
  if (!d || !binary || !out || (!entries && n)) return NULL_ARG("an argument");
  return Guard([&]() -> uopc_error* {
    absl::StatusOr<std::string> path =
        Compiler().Materialize(absl::string_view(static_cast<const char*>(binary), size));
    if (!path.ok()) return FromStatus(path.status());
    void* h = dlopen(path->c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h)
      return uopc_sdk_error(UOPC_INTERNAL, "c plugin: dlopen %s: %s", path->c_str(), dlerror());
    auto prog = std::make_unique<uopc_program>(uopc_program{h, {}});
    for (uint32_t i = 0; i < n; ++i) {
      std::string sym = absl::StrCat(entries[i], "_entry");
      auto fn = reinterpret_cast<EntryFn>(dlsym(h, sym.c_str()));
      if (!fn) {
        dlclose(h);
        return uopc_sdk_error(UOPC_NOT_FOUND, "c plugin: the program has no kernel '%s'",
                              entries[i]);
      }
      prog->entries.push_back(fn);
    }
    *out = prog.release();
    return nullptr;
  });
}

uopc_error* ProgramUnload(uopc_program* p) {
  if (!p) return NULL_ARG("program");
  dlclose(p->handle);
  delete p;
  return nullptr;
}

uopc_error* Launch(uopc_queue* q, const uopc_launch_args* a, uopc_event** done) {
  if (!q || !a || !a->program) return NULL_ARG("an argument");
  if (a->entry >= a->program->entries.size())
    return uopc_sdk_error(UOPC_OUT_OF_RANGE, "c plugin: entry %u of a program with %zu", a->entry,
                          a->program->entries.size());
  if ((a->num_buffers && !a->buffers) || (a->num_vars && !a->vars))
    return NULL_ARG("buffers or vars");
  void* ptrs[64];
  std::vector<void*> many;
  void** bufs = ptrs;
  if (a->num_buffers > 64) {
    many.resize(a->num_buffers);
    bufs = many.data();
  }
  for (uint32_t i = 0; i < a->num_buffers; ++i) {
    const uopc_buffer* b = a->buffers[i];
    uint64_t off = a->offsets ? a->offsets[i] : 0;
    if (b && off > b->size)
      return uopc_sdk_error(UOPC_OUT_OF_RANGE, "c plugin: offset %llu past buffer %u",
                            (unsigned long long)off, i);
    bufs[i] = b ? static_cast<char*>(b->data) + off : nullptr;
  }
  a->program->entries[a->entry](bufs, reinterpret_cast<const long long*>(a->vars));
  return Done(done);
}

uopc_error* QueueWaitEvent(uopc_queue* q, uopc_event* e) {
  return !q || !e ? NULL_ARG("an argument") : nullptr;
}
uopc_error* EventWait(uopc_event* e, uint64_t) { return e ? nullptr : NULL_ARG("event"); }
uopc_error* EventQuery(uopc_event* e, int32_t* done) {
  if (!e || !done) return NULL_ARG("an argument");
  *done = 1;
  return nullptr;
}
void EventDestroy(uopc_event* e) { delete e; }
uopc_error* QueueSynchronize(uopc_queue* q) { return q ? nullptr : NULL_ARG("queue"); }

uopc_backend_api g_backend_api = {
    .backend_count = BackendCount,
    .backend_get = BackendGet,
    .backend_describe = BackendDescribe,
    .backend_supports = BackendSupports,
    .render = Render,
    .compile = Compile,
};

uopc_device_api g_device_api = {
    .device_count = DeviceCount,
    .device_get = DeviceGet,
    .device_describe = DeviceDescribe,
    .buffer_alloc = BufferAlloc,
    .buffer_free = BufferFree,
    .queue_create = QueueCreate,
    .queue_destroy = QueueDestroy,
    .copy_h2d = CopyH2D,
    .copy_d2h = CopyD2H,
    .copy_d2d = CopyD2D,
    .program_load = ProgramLoad,
    .program_unload = ProgramUnload,
    .launch = Launch,
    .queue_wait_event = QueueWaitEvent,
    .event_wait = EventWait,
    .event_query = EventQuery,
    .event_destroy = EventDestroy,
    .queue_synchronize = QueueSynchronize,
};

uopc_plugin_api g_api = {
    .uop_format_version = kUOpFormatVersion,
    .name = "c",
    .version = "1.0",
    .caps = UOPC_PLUGIN_CAP_BACKEND | UOPC_PLUGIN_CAP_DEVICE,
    .probe = Probe,
    .initialize = Initialize,
};

}  // namespace
}  // namespace uopc

extern "C" UOPC_EXPORT const uopc_plugin_api* uopc_plugin_entry_v1(const uopc_host_api* host) {
  if (!host || host->abi_major != UOPC_ABI_MAJOR) return nullptr;
  uopc::g_host = host;
  uopc_sdk_fill(&uopc::g_api, &uopc::g_backend_api, &uopc::g_device_api);
  return &uopc::g_api;
}
