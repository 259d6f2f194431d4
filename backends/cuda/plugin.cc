// The CUDA plugin, libuopc_plugin_cuda.so: a backend per GPU architecture present
// ("cuda-nvrtc-sm_90": render CUDA C++ with the kernel's loops mapped to threads, compile
// with NVRTC to a cubin, cached on disk under the architecture, NVRTC's version and the
// options) and a device per GPU (backends/cuda/cuda_device.h). It links nothing of CUDA:
// the driver and NVRTC are loaded with dlopen, so the plugin loads everywhere; where there
// is no driver or no GPU it says so (its probe says no, and initialize says why), and the
// host goes on without it. Only uopc_plugin_entry_v2 is exported.
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/driver.h"
#include "backends/cuda/gpu_target.h"
#include "backends/cuda/matmul_kernels.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/render_cuda.h"
#include "backends/kernel_graph.h"
#include "backends/plugin_sdk.h"
#include "core/cache_folder.h"
#include "core/file.h"
#include "core/fnv.h"
#include "core/ops.h"
#include "core/serialize.h"

struct uopc_backend {
  int arch;
  std::string name, target, fingerprint;
  uopc::LaunchLimits limits;
};

namespace uopc {
namespace {

const uopc_host_api* g_host = nullptr;
const Nvrtc* g_nvrtc = nullptr;
std::vector<std::unique_ptr<uopc_backend>> g_backends;
std::unique_ptr<CacheFolder> g_cache;
const std::vector<std::string> kOptions = {"-fmad=false", "-w"};  // exact: no contraction

#define NULL_ARG(name) uopc_sdk_error(UOPC_INVALID_ARGUMENT, "cuda plugin: %s is NULL", name)

void Log(uopc_log_level level, const std::string& msg) {
  if (g_host && g_host->log) g_host->log(g_host->log_ctx, level, msg.data(), msg.size());
}

uopc_error* FromStatus(const absl::Status& s) {
  if (s.ok()) return nullptr;
  return uopc_sdk_error(static_cast<uopc_code>(s.code()), "cuda plugin: %s",
                        std::string(s.message()).c_str());
}

template <typename F>
uopc_error* Guard(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "cuda plugin: out of host memory");
  } catch (const std::exception& e) {
    return uopc_sdk_error(UOPC_INTERNAL, "cuda plugin: %s", e.what());
  }
}

// Cheap: the driver's library is opened, not initialized (no cuInit).
uopc_error* Probe(uopc_probe_args* a) {
  absl::StatusOr<const cuda::Driver*> driver = cuda::Driver::Load();
  if (!driver.ok()) return FromStatus(driver.status());
  a->score = 20;
  return nullptr;
}

uopc_error* Initialize(uopc_initialize_args*) {
  return Guard([]() -> uopc_error* {
    if (!g_backends.empty()) return nullptr;
    absl::StatusOr<const cuda::Driver*> driver = cuda::Driver::Load();
    if (!driver.ok()) return FromStatus(driver.status());
    absl::StatusOr<const Nvrtc*> nvrtc = Nvrtc::Load();
    if (!nvrtc.ok()) return FromStatus(nvrtc.status());
    g_nvrtc = *nvrtc;
    if (absl::Status s = cuda::OpenDevices(**driver); !s.ok()) return FromStatus(s);
    for (uopc_device* d : cuda::Devices()) {
      bool known = false;
      for (const auto& b : g_backends) known |= b->arch == d->arch;
      if (known) continue;
      auto b = std::make_unique<uopc_backend>();
      b->arch = d->arch;
      b->name = d->backend;
      b->target = absl::StrCat("CUDA:CUDA:sm_", d->arch);
      b->fingerprint = absl::StrCat("nvrtc ", g_nvrtc->version(), " sm_", d->arch, " ",
                                    absl::StrJoin(kOptions, " "));
      b->limits = {std::min<uint32_t>(256, d->max_threads), d->max_grid};
      g_backends.push_back(std::move(b));
    }
    g_cache = std::make_unique<CacheFolder>(
        "", "cuda", [](const std::string& m) { Log(UOPC_LOG_WARNING, m); });
    return nullptr;
  });
}

// ---- backend ----

uopc_error* BackendCount(uopc_backend_count_args* a) {
  a->count = static_cast<uint32_t>(g_backends.size());
  return nullptr;
}

uopc_error* BackendGet(uopc_backend_get_args* a) {
  if (a->index >= g_backends.size())
    return uopc_sdk_error(UOPC_OUT_OF_RANGE, "cuda plugin: backend %u of %zu", a->index,
                          g_backends.size());
  a->backend = g_backends[a->index].get();
  return nullptr;
}

uopc_error* BackendDescribe(uopc_backend_describe_args* a) {
  if (!a->backend || !a->desc) return NULL_ARG(a->backend ? "desc" : "backend");
  const uopc_backend* b = a->backend;
  uopc_backend_desc* out = a->desc;
  UOPC_SDK_CLEAR(out);
  out->name = b->name.c_str();
  out->target = b->target.c_str();
  out->fingerprint = b->fingerprint.c_str();
  out->lang = UOPC_LANG_CUDA;
  for (int t = UOPC_DTYPE_BOOL; t <= UOPC_DTYPE_F64; ++t) out->dtypes |= 1ull << t;
  out->global_max[0] = static_cast<uint32_t>(std::min<uint64_t>(b->limits.max_global, UINT32_MAX));
  out->global_max[1] = out->global_max[2] = 65535;
  out->local_max[0] = out->local_max[1] = b->limits.max_local;
  out->local_max[2] = 64;
  out->shared_max = 48 << 10;
  return nullptr;
}

uopc_error* BackendSupports(uopc_backend_supports_args* a) {
  if (!a->backend || !a->op) return NULL_ARG("an argument");
  std::optional<Ops> op = ParseOp(a->op);
  if (!op) return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "cuda plugin: unknown op '%s'", a->op);
  bool tensor_level = IsMovement(*op) || *op == Ops::REDUCE || *op == Ops::STAGE ||
                      *op == Ops::COPY || *op == Ops::ASSIGN;
  a->supported = !tensor_level && a->dtype >= UOPC_DTYPE_VOID && a->dtype <= UOPC_DTYPE_F64;
  return nullptr;
}

// A kernel rendered within its backend's launch limits, with the dims it is launched with.
uopc_error* Render(uopc_render_args* a) {
  if (!a->backend || !a->kernel || !a->name) return NULL_ARG("an argument");
  return Guard([&]() -> uopc_error* {
    absl::StatusOr<UOp> sink = ReadKernel(a->kernel, a->kernel_size);  // through its form
    if (!sink.ok()) return FromStatus(sink.status());
    absl::StatusOr<CudaKernel> k = RenderCudaKernel(*sink, a->name, a->backend->limits);
    if (!k.ok()) return FromStatus(k.status());
    a->source = uopc_sdk_blob(k->source.data(), k->source.size());
    if (!a->source) return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "cuda plugin: out of memory");
    for (int i = 0; i < 3; ++i) {
      a->global[i] = k->dims.global[i];
      a->local[i] = k->dims.local[i];
    }
    a->shared_bytes = 0;
    return nullptr;
  });
}

// `tu` compiled for backend `b`'s arch (PackBinary's form), from the disk cache when it has it.
absl::StatusOr<std::string> CompileCached(const std::string& tu, const uopc_backend& b) {
  std::string key = Hex64(Fnv1a(tu)) + Hex64(Fnv1a(b.fingerprint, Fnv1a(tu)));
  absl::StatusOr<std::string> dir = g_cache->Get();
  std::string path = dir.ok() ? absl::StrCat(*dir, "/", key, ".cubin") : "";
  if (absl::StatusOr<std::string> hit = ReadFile(path); dir.ok() && hit.ok()) {
    absl::StatusOr<std::string> k = CheckSealed(*hit);
    if (k.ok() && *k == key) return std::string(SealedObject(*hit));
  }
  absl::StatusOr<Nvrtc::Binary> bin = g_nvrtc->Compile(tu, b.arch, kOptions);
  if (!bin.ok()) return bin.status();
  std::string binary = cuda::PackBinary(bin->ptx, bin->bytes);
  if (dir.ok())
    if (absl::Status s = WriteFileAtomic(path, {SealObject(binary, key)}); !s.ok())
      g_cache->Fallback(*dir, s.message()).IgnoreError();  // a cache fault is no failure
  return binary;
}

uopc_error* Compile(uopc_compile_args* a) {
  if (!a->backend || (!a->sources && a->num_sources)) return NULL_ARG("an argument");
  return Guard([&]() -> uopc_error* {
    std::string tu = CudaPrelude();
    for (uint64_t i = 0; i < a->num_sources; ++i) tu.append(a->sources[i].text, a->sources[i].size);
    absl::StatusOr<std::string> binary = CompileCached(tu, *a->backend);
    if (!binary.ok()) return FromStatus(binary.status());
    a->binary = uopc_sdk_blob(binary->data(), binary->size());
    return a->binary ? nullptr
                     : uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "cuda plugin: out of memory");
  });
}

// The supplied kernels (backends/cuda/matmul_kernels.h) for a device's arch.
absl::StatusOr<std::string> BuildSupplied(int arch) {
  for (const auto& b : g_backends)
    if (b->arch == arch) return CompileCached(cuda::MatmulKernelsSource(), *b);
  return absl::NotFoundError(absl::StrCat("no backend for sm_", arch));
}

// A device's target is read from its GPU (backends/cuda/gpu_target.h); a named arch's, or
// the backend's own arch's, from the table.
uopc_error* BackendTarget(uopc_backend_target_args* a) {
  if (!a->backend) return NULL_ARG("backend");
  return Guard([&]() -> uopc_error* {
    if (a->device && !a->arch) {
      FillTargetArgs(*a->device->target, a);
      return nullptr;
    }
    static std::mutex mu;
    static auto* named = new std::map<std::string, std::unique_ptr<TargetStrings>>();
    const std::string arch = a->arch ? a->arch : absl::StrCat("sm_", a->backend->arch);
    std::lock_guard<std::mutex> lock(mu);
    std::unique_ptr<TargetStrings>& t = (*named)[arch];
    if (!t) {
      absl::StatusOr<Target> target = NamedGpuTarget(arch);
      if (!target.ok()) return FromStatus(target.status());
      t = std::make_unique<TargetStrings>(*std::move(target));
    }
    FillTargetArgs(*t, a);
    return nullptr;
  });
}

uopc_api g_api = {
    .uop_format_version = kUOpFormatVersion,
    .name = "cuda",
    .version = "2.1",
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
  uopc::cuda::FillDeviceCalls(&uopc::g_api, uopc::BuildSupplied);
  uopc_sdk_fill(&uopc::g_api);
  return &uopc::g_api;
}
