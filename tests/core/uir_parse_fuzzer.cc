// Fuzz target for the UIR parser: any bytes must parse or fail cleanly; what parses must
// print and parse back to the same node, and verifying and simplifying it must not crash.
//   libFuzzer: bazel build --config=fuzz //tests/core:uir_parse_fuzzer
//              bazel-bin/tests/core/uir_parse_fuzzer corpus/
//   without:   the same binary, built with gcc, replays files or mutates a built-in corpus.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "core/symbolic/simplify.h"
#include "core/uir.h"
#include "core/verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<uopc::UOp> g = uopc::ParseUir(text);
  if (!g.ok()) return 0;
  std::string printed = uopc::ToUir(*g);
  absl::StatusOr<uopc::UOp> back = uopc::ParseUir(printed);
  if (!back.ok() || !(*back == *g)) {
    std::fprintf(stderr, "round trip failed for:\n%s\n", printed.c_str());
    std::abort();
  }
  if (uopc::Verify(*g).ok() && g->Toposort().size() < 200) uopc::Simplify(*g);
  return 0;
}
