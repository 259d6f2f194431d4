// The C backend plugin, libuopc_plugin_c.so: a backend ("c-gcc": render C, compile with
// gcc into one shared object per plan, cached on disk) and its CPU devices ("CPU:0" ...,
// backends/c/cpu_device.h: host memory, programs loaded with dlopen, a worker thread per
// queue). It goes through the same C ABI as any outside plugin; only uopc_plugin_entry_v1
// is exported.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "backends/c/c_kernel.h"
#include "backends/c/compiler.h"
#include "backends/c/cpu_target.h"
#include "backends/c/cpu_device.h"
#include "backends/c/render_c.h"
#include "backends/plugin_sdk.h"
#include "backends/target_args.h"
#include "core/ops.h"
#include "core/serialize.h"
#include "core/verify.h"

#ifndef UOPC_C_PLUGIN_NAME
#define UOPC_C_PLUGIN_NAME "c"
#endif

struct uopc_backend {
  const char* name;
};

namespace uopc {
namespace {

const uopc_host_api* g_host = nullptr;
uopc_backend g_backend{"c-gcc"};
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

int32_t Probe() {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin", ':'))
    if (access(absl::StrCat(dir, "/gcc").c_str(), X_OK) == 0) return 10;
  return 0;  // no compiler: unusable here
}

uopc_error* Initialize() {
  return Guard([]() -> uopc_error* {
    return cpu::Initialize([](absl::string_view sealed) { return Compiler().Materialize(sealed); });
  });
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
    UOPC_SDK_CLEAR(out);
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

// The kernel's C source; with `dims`, its outermost output loop is given to the cores
// (a global range of dims->global[0]), when it has enough work to be worth it.
uopc_error* RenderWithDims(const uopc_render_args* a, uopc_blob** out, LaunchDims* dims) {
  if (!a || !out || !a->kernel || !a->name) return NULL_ARG("an argument");
  return Guard([&]() -> uopc_error* {
    absl::StatusOr<UOp> sink =
        DeserializeGraph(absl::string_view(static_cast<const char*>(a->kernel), a->kernel_size));
    if (!sink.ok()) return FromStatus(sink.status());
    if (absl::Status s = Verify(*sink); !s.ok()) return FromStatus(s);
    absl::StatusOr<std::string> src = RenderCKernel(*sink, a->name, dims);
    if (!src.ok()) return FromStatus(src.status());
    *out = uopc_sdk_blob(src->data(), src->size());
    return *out ? nullptr : uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory");
  });
}

uopc_error* Render(const uopc_render_args* a, uopc_blob** out) {
  return RenderWithDims(a, out, nullptr);
}

// The kernel, with its outermost output loop split over the device's threads where it pays.
uopc_error* RenderKernel(const uopc_render_args* a, uopc_render_result* out) {
  if (!out) return NULL_ARG("out");
  UOPC_SDK_CLEAR(out);
  LaunchDims dims;
  if (uopc_error* e = RenderWithDims(a, &out->source, &dims)) return e;
  for (int i = 0; i < 3; ++i) {
    out->global[i] = dims.global[i];
    out->local[i] = dims.local[i];
  }
  return nullptr;
}

uopc_error* Compile(const uopc_compile_args* a, uopc_blob** out) {
  if (!a || !out || (!a->sources && a->num_sources)) return NULL_ARG("an argument");
  return Guard([&]() -> uopc_error* {
    std::vector<absl::string_view> kernels;  // (compiled a group per core at once)
    for (uint64_t i = 0; i < a->num_sources; ++i)
      kernels.emplace_back(a->sources[i].text, a->sources[i].size);
    absl::StatusOr<std::string> sealed = Compiler().Compile(CPrelude(), kernels);
    if (!sealed.ok()) return FromStatus(sealed.status());
    *out = uopc_sdk_blob(sealed->data(), sealed->size());
    return *out ? nullptr : uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory");
  });
}

// This machine's CPU (backends/c/cpu_target.h), whatever the device: every CPU device of
// the plugin runs on it. A named arch other than this CPU's is refused.
uopc_error* BackendTarget(uopc_target_args* a) {
  if (!a || !a->backend) return NULL_ARG(a ? "backend" : "args");
  return Guard([&]() -> uopc_error* {
    static const TargetStrings* host = new TargetStrings(HostCpuTarget());
    if (a->arch && host->target.arch != a->arch)
      return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                            "c plugin: compiles for this machine's CPU (%s), not for '%s'",
                            host->target.arch.c_str(), a->arch);
    FillTargetArgs(*host, a);
    return nullptr;
  });
}

uopc_backend_api g_backend_api = {
    .backend_count = BackendCount,
    .backend_get = BackendGet,
    .backend_describe = BackendDescribe,
    .backend_supports = BackendSupports,
    .render = Render,
    .compile = Compile,
    .render_kernel = RenderKernel,
    .backend_target = BackendTarget,
};

uopc_device_api g_device_api;

uopc_plugin_api g_api = {
    .uop_format_version = kUOpFormatVersion,
    .name = UOPC_C_PLUGIN_NAME,
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
  uopc::cpu::FillDeviceApi(&uopc::g_device_api);
  uopc_sdk_fill(&uopc::g_api, &uopc::g_backend_api, &uopc::g_device_api);
  return &uopc::g_api;
}
