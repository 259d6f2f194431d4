#include "tools/render_command.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "backends/c/c_kernel.h"
#include "backends/c/cpu_target.h"
#include "backends/cuda/gpu_target.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/render_cuda.h"
#include "core/status_macros.h"
#include "core/target.h"
#include "core/uir.h"
#include "passes/pipeline.h"
#include "runtime/plan.h"
#include "runtime/plan_cache.h"

namespace uopc {

const char kRenderUsage[] =
    "usage: uopc render [--target T] [FILE]\n"
    "\n"
    "Prints the kernels target T gets for the UIR graph in FILE (stdin when FILE is absent\n"
    "or '-'): a tensor-level graph is lowered for T by the standard pipeline; a loop-level\n"
    "kernel is taken as it is. Each kernel comes as T's backend renders it, after a line\n"
    "with its launch dims; for a GPU target NVRTC compiles them and its ptxas reports each\n"
    "kernel's registers, stack and spills (NVRTC: UOPC_CUDA_PATH/lib64, /usr/local/cuda).\n"
    "\n"
    "T is one of:\n"
    "  host              this machine's CPU (the default)\n"
    "  sm_70 ... sm_90   a CUDA GPU architecture, without the GPU\n"
    "  class=...         a target's text form, as `uopc devices` prints it\n"
    "\n"
    "example:\n"
    "  uopc render --target sm_90 examples/seed/matmul.uir\n";

namespace {

absl::StatusOr<Target> TargetNamed(const std::string& t) {
  if (t == "host") return HostCpuTarget();
  if (absl::StartsWith(t, "sm_")) return NamedGpuTarget(t);
  if (absl::StartsWith(t, "class=")) return ParseTarget(t);
  return absl::InvalidArgumentError("expected host, sm_XX or a target's text (class=...)");
}

// The kernels of `g`: itself if it is loop-level, else its plan's for `target`.
absl::StatusOr<std::vector<UOp>> KernelsOf(const UOp& g, const Target& target) {
  for (const UOp& u : g.Toposort())
    if (u.is(Ops::RANGE) || u.is(Ops::STORE)) return std::vector<UOp>{g};
  CanonicalGraph c = Canonicalize(g.is(Ops::SINK) ? g : UOp::Sink({g}));
  PassManager pm = LoweringPipeline();
  PassContext ctx;
  ctx.default_target = target;
  ASSIGN_OR_RETURN(Plan plan, Lower(c.sink, static_cast<int>(c.inputs.size()), pm, ctx));
  std::vector<UOp> out;
  for (const Plan::Kernel* k : plan.kernels()) out.push_back(k->ast);
  return out;
}

std::string DimsText(const LaunchDims& d) {
  return absl::StrFormat("global (%u, %u, %u), local (%u, %u, %u)", d.global[0], d.global[1],
                         d.global[2], d.local[0], d.local[1], d.local[2]);
}

absl::Status Render(const std::vector<UOp>& kernels, const Target& t, std::ostream& out) {
  out << "// target " << t.ToString() << "\n";
  if (t.IsCpu()) {
    for (size_t i = 0; i < kernels.size(); ++i) {
      LaunchDims dims;
      ASSIGN_OR_RETURN(std::string src, RenderCKernel(kernels[i], absl::StrCat("k", i), &dims));
      out << "// kernel k" << i << ": " << DimsText(dims) << "\n" << src;
    }
    return absl::OkStatus();
  }
  const LaunchLimits limits{static_cast<uint32_t>(std::min(256, t.threads_per_block)),
                            2147483647};
  std::string tu = CudaPrelude();
  std::vector<std::string> sources;
  std::vector<LaunchDims> dims;
  for (size_t i = 0; i < kernels.size(); ++i) {
    ASSIGN_OR_RETURN(CudaKernel k, RenderCudaKernel(kernels[i], absl::StrCat("k", i), limits));
    tu += k.source;
    sources.push_back(k.source);
    dims.push_back(k.dims);
  }
  std::vector<PtxasInfo> info;
  int arch = 0;
  absl::StatusOr<const Nvrtc*> nvrtc = Nvrtc::Load();
  if (!nvrtc.ok()) {
    out << "// no NVRTC here (" << nvrtc.status().message() << "): no register counts\n";
  } else if (absl::SimpleAtoi(t.arch.substr(3), &arch)) {
    ASSIGN_OR_RETURN(Nvrtc::Binary b,
                     (*nvrtc)->Compile(tu, arch, {"-fmad=false", "-w", "--ptxas-options=-v"}));
    info = ParsePtxasInfo(b.log);
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    out << "// kernel k" << i << ": " << DimsText(dims[i]);
    for (const PtxasInfo& p : info)
      if (p.function == absl::StrCat("k", i))
        out << absl::StrFormat("; %d registers, %d bytes stack, %d bytes spilled (stores), %d (loads)",
                               p.registers, p.stack_bytes, p.spill_store_bytes, p.spill_load_bytes);
    out << "\n" << sources[i];
  }
  return absl::OkStatus();
}

}  // namespace

int RenderCommand(int argc, char** argv) {
  std::string target = "host", file = "-";
  int files = 0;
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--target")) {
      if (i + 1 >= argc) {
        std::cerr << "uopc render: --target needs a value (host, sm_XX or class=...)\n";
        return 2;
      }
      target = argv[++i];
    } else if (absl::StartsWith(argv[i], "--target=")) {
      target = argv[i] + 9;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      std::cerr << "uopc render: unknown flag " << argv[i] << " (see --help)\n";
      return 2;
    } else {
      file = argv[i];
      ++files;
    }
  }
  if (files > 1) {
    std::cerr << "uopc render: expected at most one FILE, got " << files << "\n";
    return 2;
  }
  absl::StatusOr<Target> t = TargetNamed(target);
  if (!t.ok()) {
    std::cerr << "uopc render: --target " << target << ": " << t.status().message() << "\n";
    return 2;
  }
  std::stringstream text;
  if (file == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(file);
    if (!in) {
      std::cerr << "uopc render: cannot read " << file << ": " << std::strerror(errno) << "\n";
      return 1;
    }
    text << in.rdbuf();
  }
  absl::StatusOr<UOp> g = ParseUir(text.str());
  absl::StatusOr<std::vector<UOp>> kernels =
      g.ok() ? KernelsOf(*g, *t) : absl::StatusOr<std::vector<UOp>>(g.status());
  absl::Status s = kernels.ok() ? Render(*kernels, *t, std::cout) : kernels.status();
  if (!s.ok()) {
    std::cerr << "uopc render: " << (file == "-" ? "<stdin>" : file) << ": " << s.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace uopc
