// uopc_conformance: the plugin conformance suite as a standalone program, for plugin
// authors outside this tree.
//   uopc_conformance --plugin ./libuopc_plugin_mine.so [--device NAME] [--peer NAME]
//                    [--filter TEXT]
#include <cstring>
#include <iostream>
#include <string>

#include "devices/registry.h"
#include "tests/backends/conformance/conformance.h"

int main(int argc, char** argv) {
  std::string plugin, device, peer, filter;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (a.rfind(std::string(flag) + "=", 0) == 0) return argv[i] + std::strlen(flag) + 1;
      if (a == flag && i + 1 < argc) return argv[++i];
      return nullptr;
    };
    if (a == "--help" || a == "-h") {
      std::cout
          << "usage: uopc_conformance --plugin PATH [--device NAME] [--peer NAME] [--filter "
             "TEXT]\n\n"
             "Loads the plugin at PATH through uopc's plugin loader and runs the conformance "
             "suite\n"
             "on its device NAME (default: its first): ABI checks, memory with guard bytes, every\n"
             "ALU op and cast on every dtype against the reference interpreter, loops, launches\n"
             "over several blocks, events across queues, a refused launch, and copies to the\n"
             "device --peer names (default: the plugin's second device, if it has one). Prints\n"
             "each failure and skip, the support matrix, and last a line a CI can read:\n"
             "\"N passed, N failed, N skipped\"; exits 1 if anything failed.\n";
      return 0;
    }
    if (const char* v = value("--plugin"))
      plugin = v;
    else if (const char* v = value("--device"))
      device = v;
    else if (const char* v = value("--peer"))
      peer = v;
    else if (const char* v = value("--filter"))
      filter = v;
    else {
      std::cerr << "uopc_conformance: unknown argument '" << a << "' (see --help)\n";
      return 2;
    }
  }
  if (plugin.empty()) {
    std::cerr << "uopc_conformance: --plugin PATH is required (see --help)\n";
    return 2;
  }
  uopc::DiscoveryOptions o;
  o.paths = {plugin};
  o.log_failures = false;
  auto registry = uopc::DeviceRegistry::Discover(o);
  if (!registry->failures().empty()) {
    std::cerr << "uopc_conformance: " << registry->failures()[0].status.message() << "\n";
    return 1;
  }
  absl::StatusOr<uopc::Device*> d =
      device.empty() ? registry->Default() : registry->GetDevice(device);
  if (!d.ok()) {
    std::cerr << "uopc_conformance: " << d.status().message() << "\n";
    return 1;
  }
  uopc::ConformanceOptions options{filter};
  if (!peer.empty()) {
    absl::StatusOr<uopc::Device*> p = registry->GetDevice(peer);
    if (!p.ok()) {
      std::cerr << "uopc_conformance: " << p.status().message() << "\n";
      return 1;
    }
    options.peer = *p;
  } else {
    for (uopc::Device* other : registry->devices())
      if (other != *d && &other->plugin() == &(*d)->plugin()) {
        options.peer = other;
        break;
      }
  }
  uopc::ConformanceReport r = uopc::RunConformance(**d, options);
  for (const uopc::ConformanceCase& c : r.cases) {
    if (c.status == uopc::ConformanceCase::kFail)
      std::cout << "FAIL " << c.section << ": " << c.name << ": " << c.detail << "\n";
    if (c.status == uopc::ConformanceCase::kSkip)
      std::cout << "skip " << c.section << ": " << c.name << ": " << c.detail << "\n";
  }
  std::cout << r.matrix << r.passed << " passed, " << r.failed << " failed, " << r.skipped
            << " skipped\n";
  return r.failed ? 1 : 0;
}
