// `uopc`: the command-line tool. One binary, one subcommand per job:
//   uopc simplify [FILE]     simplify a UIR graph (stdin by default), print it and its bounds
// Every subcommand answers --help.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

#include "core/bounds.h"
#include "core/symbolic/simplify.h"
#include "core/uir.h"
#include "core/verify.h"

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
  UOp out = uopc::Simplify(*g);
  std::cout << ToUir(out);
  if (HasBounds(out.dtype()))
    std::cout << "bounds: (" << VMin(out) << ", " << VMax(out) << ")\n";
  else
    std::cout << "bounds: none (" << DTypeName(out.dtype()) << ")\n";
  return 0;
}

const Command kCommands[] = {
    {"simplify", "simplify a graph in UIR text form and print its bounds",
     "usage: uopc simplify [FILE]\n"
     "\n"
     "Reads a graph in UIR text form from FILE (or stdin when FILE is absent or '-'),\n"
     "checks it, simplifies it (constant folding, identities, collecting terms, div/mod\n"
     "rules that use bounds, comparisons) and prints the simplified graph followed by\n"
     "`bounds: (lo, hi)` of its root (the last line).\n"
     "\n"
     "example:\n"
     "  printf '%0 = var : name=n lo=1 hi=8\\n%1 = range %0 : idx=1 kind=loop\\n"
     "%2 = cmplt %1, %0\\n' | uopc simplify\n"
     "  %0 = const true\n"
     "  bounds: (1, 1)\n",
     Simplify},
};

void PrintUsage(std::FILE* to) {
  std::fprintf(to,
               "usage: uopc COMMAND [ARGS]   (uopc COMMAND --help for one command)\n\ncommands:\n");
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
