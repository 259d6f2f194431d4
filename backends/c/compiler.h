// The C compiler behind the C backend: gcc turns C source into a shared object, with an
// on-disk cache keyed by a hash of the source, the compiler's version and the flags.
//
// Cache entries are sealed: the shared object followed by a trailer (its key, a hash of
// the bytes before it, a magic), so a truncated or corrupt entry is detected and rebuilt.
// Writes go to a temporary file that is then renamed, so readers never see half an entry
// and two processes compiling the same source both succeed.
//
// The cache is an optimization: a fault of its folder moves this compiler to a private one
// (core/cache_folder.h) and compiling goes on. The source reaches gcc on its stdin and
// gcc's messages come back through a pipe, so a failed compile always says why.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/cache_folder.h"

namespace uopc {

class CCompiler {
 public:
  struct Options {
    std::string cc = "gcc";
    // -march=native: the kernels use this CPU's vector units (AVX-512 where it has them);
    // -ffp-contract=off keeps a * b + c two roundings, as the IR and its interpreter define
    // (one rounding is the IR's MULACC, rendered as __builtin_fmaf); -fno-trapping-math
    // lets a float op run where a select does not pick it (no trap is ever enabled, and
    // values are unchanged): without it gcc does not if-convert a loop with a select of
    // floats (a mask's -inf), and reads and computes it an element at a time
    std::vector<std::string> flags = {"-O3",
                                      "-march=native",
                                      "-std=gnu11",
                                      "-fPIC",
                                      "-shared",
                                      "-fwrapv",
                                      "-ffp-contract=off",
                                      "-fvisibility=hidden",
                                      "-fno-math-errno",
                                      "-fno-trapping-math"};
    /// Empty: $UOPC_CACHE_DIR, else $XDG_CACHE_HOME/uopc, else ~/.cache/uopc.
    std::string cache_dir;
    /// Receives warnings (a read-only cache folder); stderr when empty.
    std::function<void(const std::string&)> warn;
  };

  explicit CCompiler(Options options);

  /// A sealed shared object for `source` (from the cache when it holds a valid entry).
  absl::StatusOr<std::string> Compile(absl::string_view source);
  /// The same for `prelude` followed by `parts` (kernels, each complete), its cache entry
  /// that of their concatenation: on a miss the parts are compiled in groups, one gcc per
  /// core at once, each group after its own copy of the prelude, and linked into one object.
  absl::StatusOr<std::string> Compile(absl::string_view prelude,
                                      const std::vector<absl::string_view>& parts);
  /// The path of a loadable file with the sealed object `sealed` (writing it if needed).
  absl::StatusOr<std::string> Materialize(absl::string_view sealed);
  /// "gcc 12.2.0 -O2 ... on <cpu model>": what, besides the source, a cache key covers
  /// (the CPU too, since -march=native code is the CPU's).
  const std::string& fingerprint() const { return fingerprint_; }
  /// The folder in use (after any fallback).
  std::string cache_dir();

 private:
  absl::StatusOr<std::string> RunCompiler(absl::string_view prelude,
                                          const std::vector<absl::string_view>& parts,
                                          const std::string& dir, const std::string& stem);
  /// Runs the compiler on one translation unit (`link`: to a shared object; else to an
  /// object file, `out`); its error names the compiler and quotes what it said.
  absl::Status RunOne(const std::vector<std::string>& args, absl::string_view source);

  Options options_;
  std::string fingerprint_;
  CacheFolder folder_;
};


}  // namespace uopc
