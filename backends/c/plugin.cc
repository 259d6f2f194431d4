// The C backend plugin, libuopc_plugin_c.so: a backend ("c-gcc": render C, compile with
// gcc into one shared object per plan, cached on disk) and its CPU devices ("CPU:0" ...,
// backends/c/cpu_device.h: host memory, programs loaded with dlopen, a worker thread per
// queue). It goes through the same C ABI as any outside plugin; only uopc_plugin_entry_v2
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
#include "backends/c/cpu_device.h"
#include "backends/c/cpu_target.h"
#include "backends/c/matmul_kernels.h"
#include "backends/c/render_c.h"
#include "backends/cuda/gpu_target.h"
#include "backends/kernel_graph.h"
#include "backends/plugin_sdk.h"
#include "backends/target_args.h"
#include "core/kernel_signature.h"
#include "core/ops.h"
#include "core/serialize.h"

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
    // vectors as wide as the target's, which the kernels' register tiles are shaped for
    // (gcc's -march=native alone prefers 256 bits on CPUs with AVX-512)
    o.flags.push_back(absl::StrCat("-mprefer-vector-width=", HostCpuTarget().vector_bits));
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

uopc_error* Probe(uopc_probe_args* a) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin", ':'))
    if (access(absl::StrCat(dir, "/gcc").c_str(), X_OK) == 0) {
      a->score = 10;
      return nullptr;
    }
  return uopc_sdk_error(UOPC_UNAVAILABLE, "c plugin: no gcc on the PATH (%s)",
                        path ? path : "unset");
}

// The devices (backends/c/cpu_device.h), then the supplied kernels from the options
// UOPC_C_AMX and UOPC_C_BLAS (backends/c/matmul_kernels.h).
uopc_error* Initialize(uopc_initialize_args* a) {
  return Guard([&]() -> uopc_error* {
    if (uopc_error* e = cpu::Initialize(
            [](absl::string_view sealed) { return Compiler().Materialize(sealed); }))
      return e;
    std::vector<std::pair<std::string, std::string>> options;
    for (uint64_t i = 0; a && a->options && i < a->num_options; ++i)
      if (a->options[i].name && a->options[i].value)
        options.emplace_back(a->options[i].name, a->options[i].value);
    return FromStatus(cpu::ConfigureMatmulKernels(options));
  });
}

// ---- backend ----

uopc_error* BackendCount(uopc_backend_count_args* a) {
  a->count = 1;
  return nullptr;
}

uopc_error* BackendGet(uopc_backend_get_args* a) {
  if (a->index != 0)
    return uopc_sdk_error(UOPC_OUT_OF_RANGE, "c plugin: backend %u of 1", a->index);
  a->backend = &g_backend;
  return nullptr;
}

uopc_error* BackendDescribe(uopc_backend_describe_args* a) {
  if (!a->backend || !a->desc) return NULL_ARG(a->backend ? "desc" : "backend");
  uopc_backend_desc* out = a->desc;
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

uopc_error* BackendSupports(uopc_backend_supports_args* a) {
  if (!a->backend || !a->op) return NULL_ARG("an argument");
  std::optional<Ops> op = ParseOp(a->op);
  if (!op) return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "c plugin: unknown op '%s'", a->op);
  bool tensor_level = IsMovement(*op) || *op == Ops::REDUCE || *op == Ops::STAGE ||
                      *op == Ops::COPY || *op == Ops::ASSIGN;
  a->supported = !tensor_level && a->dtype >= UOPC_DTYPE_VOID && a->dtype <= UOPC_DTYPE_F64;
  return nullptr;
}

// The kernel's C source, its outermost output loop given to the cores (a global range of
// global[0]) when it has enough work to be worth it.
uopc_error* Render(uopc_render_args* a) {
  if (!a->kernel || !a->name) return NULL_ARG("an argument");
  return Guard([&]() -> uopc_error* {
    absl::StatusOr<UOp> sink = ReadKernel(a->kernel, a->kernel_size);  // through its form
    if (!sink.ok()) return FromStatus(sink.status());
    absl::StatusOr<KernelSignature> sig = SignatureOf(*sink);
    if (!sig.ok()) return FromStatus(sig.status());
    cpu::NoteKernelWrites(a->name, *sig);
    LaunchDims dims;
    absl::StatusOr<std::string> src = RenderCKernel(*sink, a->name, &dims);
    if (!src.ok()) return FromStatus(src.status());
    a->source = uopc_sdk_blob(src->data(), src->size());
    if (!a->source) return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory");
    for (int i = 0; i < 3; ++i) {
      a->global[i] = dims.global[i];
      a->local[i] = dims.local[i];
    }
    a->shared_bytes = 0;
    return nullptr;
  });
}

uopc_error* Compile(uopc_compile_args* a) {
  if (!a->sources && a->num_sources) return NULL_ARG("sources");
  return Guard([&]() -> uopc_error* {
    std::vector<absl::string_view> kernels;  // (compiled a group per core at once)
    for (uint64_t i = 0; i < a->num_sources; ++i)
      kernels.emplace_back(a->sources[i].text, a->sources[i].size);
    absl::StatusOr<std::string> sealed = Compiler().Compile(CPrelude(), kernels);
    if (!sealed.ok()) return FromStatus(sealed.status());
    a->binary = uopc_sdk_blob(sealed->data(), sealed->size());
    return a->binary ? nullptr : uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "c plugin: out of memory");
  });
}

// This machine's CPU (backends/c/cpu_target.h), with the kernels the plugin supplies for it:
// every CPU device of the plugin runs on it; EMU:0's, the GPU it emulates, with the kernels
// that GPU's plugin supplies (backends/c/matmul_kernels.h: EmulatedGpuKernels). A named
// arch other than this CPU's is refused.
uopc_error* BackendTarget(uopc_backend_target_args* a) {
  if (!a->backend) return NULL_ARG("backend");
  return Guard([&]() -> uopc_error* {
    if (a->device && !a->device->emulates.empty() && !a->arch) {  // EMU:0: its GPU's
      static const TargetStrings* gpu = [&] {
        Target t = *NamedGpuTarget(a->device->emulates);  // (checked at Configure)
        t.kernels = a->device->supplies;
        return new TargetStrings(std::move(t));
      }();
      FillTargetArgs(*gpu, a);
      return nullptr;
    }
    static const TargetStrings* host = [] {
      Target t = HostCpuTarget();
      const auto kernels = cpu::MatmulKernels();  // (decided at initialize)
      t.kernels.assign(kernels.begin(), kernels.end());
      return new TargetStrings(std::move(t));
    }();
    if (a->arch && host->target.arch != a->arch)
      return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                            "c plugin: compiles for this machine's CPU (%s), not for '%s'",
                            host->target.arch.c_str(), a->arch);
    FillTargetArgs(*host, a);
    return nullptr;
  });
}

uopc_api g_api = {
    .uop_format_version = kUOpFormatVersion,
    .name = UOPC_C_PLUGIN_NAME,
    .version = "2.0",
    .caps = UOPC_PLUGIN_CAP_BACKEND | UOPC_PLUGIN_CAP_DEVICE,
    .probe = Probe,
    .initialize = Initialize,
    .backend_count = BackendCount,
    .backend_get = BackendGet,
    .backend_describe = BackendDescribe,
    .backend_supports = BackendSupports,
    .backend_target = BackendTarget,
    .render = Render,
    .compile = Compile,
};

}  // namespace
}  // namespace uopc

extern "C" UOPC_EXPORT const uopc_api* uopc_plugin_entry_v2(const uopc_host_api* host) {
  if (!host || host->abi_major != UOPC_ABI_MAJOR) return nullptr;
  uopc::g_host = host;
  uopc::cpu::FillDeviceCalls(&uopc::g_api);
  uopc_sdk_fill(&uopc::g_api);
  return &uopc::g_api;
}
