// KernelSearch: picks the fastest of a kernel's forms (PassContext::choose_form, which
// rangeify calls with a matmul's register tiles) by timing each on the kernel's device, and
// remembers the choice on disk under the kernel (a hash of its default form) and the
// device's kind and backend fingerprint (the compiler, its flags, the CPU): a later run, in
// any process, pays nothing. UOPC_BEAM=N turns it on (frontend/realize.h): up to N forms of
// each kernel are timed, the default first; the search stops for the run once it has
// taken `budget_seconds` (later kernels keep their default form and are searched next run).
//
// Timing runs each form on zero-filled buffers of its sizes, after one untimed run, until it
// has run 3 times and for 20 ms, and keeps the fastest run. A form with symbolic sizes
// (VARs) is not searched. Choices are an optimization: an unreadable or stale cache entry
// is searched again and rewritten, and a cache that cannot be written only warns.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "core/cache_folder.h"
#include "core/uop.h"
#include "devices/registry.h"

namespace uopc {

class KernelSearch {
 public:
  struct Options {
    int beam = 2;                 // forms timed per kernel (the default's first); <2: none
    std::string cache_root;       // empty: CacheFolder's default root; the folder is ROOT/search
    double budget_seconds = 60;   // the search stops for the run past this much time
    std::ostream* log = nullptr;  // warnings (a cache that cannot be written); null: stderr
  };
  KernelSearch(DeviceRegistry& registry, Options options);

  /// The index of the fastest of `forms` (SINKs of loop IR, as rangeify makes them).
  int Choose(const std::vector<UOp>& forms);

  struct Stats {
    int searched = 0;     // kernels whose forms were timed
    int remembered = 0;   // kernels whose choice came from the cache
    int forms_timed = 0;  // forms compiled and timed
    double seconds = 0;   // spent searching
  };
  Stats stats();

 private:
  /// Seconds per run of `form` (after Simplify) on its device.
  absl::StatusOr<double> Time(const UOp& form);

  DeviceRegistry& registry_;
  Options options_;
  CacheFolder folder_;
  std::mutex mu_;
  Stats stats_;
};

}  // namespace uopc
