// `uopc`: the command-line tool. One binary, one subcommand per job:
//   uopc simplify [FILE]     simplify a UIR graph (stdin by default), print it and its bounds
//   uopc devices             list plugins, backends and devices, with a smoke test each
//   uopc render --target T   the kernels a target gets for a UIR graph (tools/render_command.h)
// Every subcommand answers --help.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "core/bounds.h"
#include "core/serialize.h"
#include "core/symbolic/simplify.h"
#include "core/uir.h"
#include "core/verify.h"
#include "core/version.h"
#include "devices/kernel_cache.h"
#include "devices/registry.h"
#include "tools/render_command.h"

namespace uopc {
namespace {

struct Command {
  const char* name;
  const char* summary;
  const char* usage;
  int (*run)(int argc, char** argv);
};

bool WantsHelp(int argc, char** argv) {
  for (int i = 0; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) return true;
  return false;
}

// Reads all of FILE, or stdin for "-" or no file.
bool ReadInput(int argc, char** argv, std::string* text, std::string* name) {
  std::stringstream ss;
  if (argc == 0 || !std::strcmp(argv[0], "-")) {
    ss << std::cin.rdbuf();
    *name = "<stdin>";
  } else {
    std::ifstream in(argv[0]);
    if (!in) {
      std::cerr << "uopc: cannot read " << argv[0] << ": " << std::strerror(errno) << "\n";
      return false;
    }
    ss << in.rdbuf();
    *name = argv[0];
  }
  *text = ss.str();
  return true;
}

int Simplify(int argc, char** argv) {
  if (argc > 1) {
    std::cerr << "uopc simplify: expected at most one FILE, got " << argc
              << " arguments (see --help)\n";
    return 2;
  }
  std::string text, name;
  if (!ReadInput(argc, argv, &text, &name)) return 1;
  absl::StatusOr<UOp> g = ParseUir(text);
  if (!g.ok()) {
    std::cerr << "uopc simplify: " << name << ": " << g.status().message() << "\n";
    return 1;
  }
  if (absl::Status s = Verify(*g); !s.ok()) {
    std::cerr << "uopc simplify: " << name << ": invalid graph: " << s.message() << "\n";
    return 1;
  }
  // a divisor that is always 0: refused, naming it (Simplify would leave the graph as it is)
  for (const UOp& n : g->Toposort())
    if ((n.is(Ops::FLOORDIV) || n.is(Ops::MOD)) && uopc::Simplify(n.src(1)).ConstIntValue() == 0) {
      std::cerr << "uopc simplify: " << name << ": the graph divides by an expression that is "
                << "always 0 (the divisor of a " << OpName(n.op()) << ")\n";
      return 1;
    }
  UOp out = uopc::Simplify(*g);
  // the output reads back as UIR: the bounds are a comment
  std::cout << ToUir(out);
  if (HasBounds(out.dtype()))
    std::cout << "# bounds: (" << VMin(out) << ", " << VMax(out) << ")\n";
  else
    std::cout << "# bounds: none (" << DTypeName(out.dtype()) << ")\n";
  return 0;
}

// out[i] = a[i] + b[i] * 2 for three elements: PASS when the numbers come back right.
std::string Smoke(Device& d) {
  if (d.backend_name().empty()) return "none (no backend: a device-only plugin)";
  UOp a = UOp::Buffer(DType::kF32, 0, 3), b = UOp::Buffer(DType::kF32, 1, 3),
      o = UOp::Buffer(DType::kF32, 2, 3);
  UOp i = UOp::Range(3, 0);
  UOp k =
      UOp::Sink({o.Index(i)
                     .Store(a.Index(i).Load() + b.Index(i).Load() * UOp::Const(DType::kF32, 2.0))
                     .End({i})});
  float av[3] = {1, 2, 3}, bv[3] = {0.5f, -1, 4}, ov[3] = {0, 0, 0};
  auto run = [&]() -> absl::Status {
    absl::StatusOr<Buffer> ab = d.Allocate(DType::kF32, 3), bb = d.Allocate(DType::kF32, 3),
                           ob = d.Allocate(DType::kF32, 3);
    for (auto* s : {&ab, &bb, &ob})
      if (!s->ok()) return s->status();
    if (absl::Status s = d.CopyIn(*ab, av, 12); !s.ok()) return s;
    if (absl::Status s = d.CopyIn(*bb, bv, 12); !s.ok()) return s;
    KernelCache ex(d);
    if (absl::Status s = ex.Run({KernelLaunch{k, {*ab, *bb, *ob}, {}}}); !s.ok()) return s;
    return d.CopyOut(ov, *ob, 12);
  };
  absl::Status s = run();
  if (!s.ok()) return absl::StrCat("FAIL (", s.message(), ")");
  if (ov[0] != 2 || ov[1] != 0 || ov[2] != 11)
    return absl::StrCat("FAIL (got ", ov[0], ", ", ov[1], ", ", ov[2], "; want 2, 0, 11)");
  return "PASS";
}

int Devices(int argc, char** argv) {
  if (argc > 0) {
    std::cerr << "uopc devices: takes no arguments (see --help)\n";
    return 2;
  }
  DeviceRegistry& r = DeviceRegistry::Get();
  int failed = 0;
  for (const auto& p : r.plugins()) {
    std::cout << "plugin " << p->name() << " " << p->Version() << "\n  from " << p->path() << "\n";
    if (std::vector<std::string> absent = p->AbsentCalls(); !absent.empty())
      std::cout << "  without (optional calls it leaves out): " << absl::StrJoin(absent, ", ")
                << "\n";
    for (Device* d : r.DevicesOf(*p)) {
      std::string smoke = Smoke(*d);
      failed += smoke.rfind("FAIL", 0) == 0;
      std::cout << "  device " << d->name() << "  " << d->kind() << "  " << (d->mem_total() >> 20)
                << " MiB  uid " << d->uid() << "\n    backend "
                << (d->backend_name().empty() ? "none" : d->backend_fingerprint())
                << "\n    target " << d->target().ToString() << "\n    smoke kernel: " << smoke << "\n";
    }
  }
  for (const DeviceRegistry::Failure& f : r.failures())
    std::cout << "not loaded: " << f.status.message() << "\n";
  if (r.plugins().empty() && r.failures().empty())
    std::cout
        << "no plugins found (looked beside this binary; set UOPC_PLUGIN_DIRS or UOPC_PLUGINS)\n";
  if (!r.required_status().ok()) {
    std::cout << r.required_status().message() << "\n";
    return 1;
  }
  return failed ? 1 : 0;
}

const Command kCommands[] = {
    {"simplify", "simplify a graph in UIR text form and print its bounds",
     "usage: uopc simplify [FILE]\n"
     "\n"
     "Reads a graph in UIR text form from FILE (or stdin when FILE is absent or '-'),\n"
     "checks it, simplifies it (constant folding, identities, collecting terms, div/mod\n"
     "rules that use bounds, comparisons) and prints the simplified graph followed by\n"
     "`# bounds: (lo, hi)` of its root (the last line; a comment: the output reads back).\n"
     "\n"
     "example:\n"
     "  printf '%0 = var : name=n lo=1 hi=8\\n%1 = range %0 : idx=1 kind=loop\\n"
     "%2 = cmplt %1, %0\\n' | uopc simplify\n"
     "  %0 = const true\n"
     "  # bounds: (1, 1)\n",
     Simplify},
    {"devices", "list plugins, backends and devices, and smoke-test each device",
     "usage: uopc devices\n"
     "\n"
     "Lists every plugin found (beside this binary, in UOPC_PLUGIN_DIRS, in UOPC_PLUGINS) with\n"
     "its version, its devices and their backends, runs a three-element smoke kernel on each\n"
     "device and prints PASS or FAIL, and says why each plugin that did not load failed.\n"
     "Exits 1 if a smoke kernel fails or a device named in UOPC_DEVICES is missing.\n",
     Devices},
    {"render", "print the kernels a target (host, sm_90, ...) gets for a UIR graph", kRenderUsage,
     RenderCommand},
};

// This build's version, the plugin ABI and uop format it speaks, and every plugin it
// finds with the ABI that plugin speaks.
int PrintVersion() {
  std::printf("uopc %s (plugin ABI %d.%d, uop format %u)\n", kVersion, UOPC_ABI_MAJOR,
              UOPC_ABI_MINOR, kUOpFormatVersion);
  for (const auto& p : DeviceRegistry::Get().plugins())
    std::printf("plugin %s %s\n", p->name().c_str(), p->Version().c_str());
  return 0;
}

void PrintUsage(std::FILE* to) {
  std::fprintf(to,
               "usage: uopc COMMAND [ARGS]   (uopc COMMAND --help for one command)\n"
               "       uopc --version\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(to, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace
}  // namespace uopc

int main(int argc, char** argv) {
  using uopc::kCommands;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    uopc::PrintUsage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) return uopc::PrintVersion();
  for (const auto& c : kCommands) {
    if (std::strcmp(argv[1], c.name)) continue;
    if (uopc::WantsHelp(argc - 2, argv + 2)) {
      std::fputs(c.usage, stdout);
      return 0;
    }
    return c.run(argc - 2, argv + 2);
  }
  std::fprintf(stderr, "uopc: unknown command '%s'\n\n", argv[1]);
  uopc::PrintUsage(stderr);
  return 2;
}
