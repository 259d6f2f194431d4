// KernelSearch: picks a kernel's optimization actions (core/opt.h; PassContext::choose_opts,
// which rangeify calls for every kernel that has some) by timing candidates on the kernel's
// device, and remembers the choice on disk under the kernel (a hash of it built with no
// actions), the device's kind (a CPU device's: its model, cores and threads) and its backend
// fingerprint (the compiler, its flags, the CPU): a later run, in any process, pays nothing.
// UOPC_BEAM=N turns it on (frontend/realize.h).
//
// The search is a beam search over action lists: it times the default heuristics' list and
// the empty one, then, round after round, every list that changes one action of the `beam`
// fastest so far (WithOpt), each round's candidates compiled in one batch per core, until a round
// gains less than 2% or after 2 rounds; the fastest is kept if it beats the defaults by 5% or more.
// It stops for the run once it has taken `budget_seconds` (the kernel being searched keeps the best
// found; later kernels keep their defaults and are searched next run). A kernel whose default runs
// in under 20 us is not searched.
//
// Timing runs each candidate on zero-filled buffers of its sizes, after one untimed run,
// until it has run 3 times and for 10 ms, and keeps the fastest run. Runs take turns among
// sets of buffers of 8 MiB or more in all, so that, as in a program, a run does not find its
// buffers in the caches the run before filled. A kernel with symbolic
// sizes (VARs) is not searched. Choices are an optimization: an unreadable or stale cache
// entry is searched again and rewritten, and a cache that cannot be written only warns.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "core/cache_folder.h"
#include "core/opt.h"
#include "core/uop.h"
#include "devices/registry.h"

namespace uopc {

class KernelSearch {
 public:
  struct Options {
    int beam = 2;                 // action lists kept per round; < 1: no search
    std::string cache_root;       // empty: CacheFolder's default root; the folder is ROOT/search
    double budget_seconds = 60;   // the search stops for the run past this much time
    std::ostream* log = nullptr;  // warnings (a cache that cannot be written); null: stderr
    bool verbose = false;         // a line on `log` per kernel searched: its choice and times
  };
  KernelSearch(DeviceRegistry& registry, Options options);

  /// The fastest action list found for the kernel `space` builds (its defaults when it is
  /// not searched).
  std::vector<Opt> Choose(const OptSpace& space);

  struct Stats {
    int searched = 0;    // kernels whose candidates were timed
    int remembered = 0;  // kernels whose choice came from the cache
    int timed = 0;       // candidates compiled and timed
    double seconds = 0;  // spent searching
  };
  Stats stats();

 private:
  struct Candidate {
    std::vector<Opt> opts;
    double seconds = 0;
  };
  /// Builds, compiles (together) and times each of `lists` on `device`, skipping lists that
  /// do not apply and kernels in `seen` (which it extends); the fastest first.
  std::vector<Candidate> TimeAll(const OptSpace& space, Device& device,
                                 const std::vector<std::vector<Opt>>& lists,
                                 std::vector<UOp>& seen);
  /// The best action list a search of `space` on `device` finds (seconds 0: none ran), and
  /// the defaults' time.
  Candidate Search(const OptSpace& space, Device& device, double* defaults_seconds);
  bool OverBudget(double spent) const { return stats_.seconds + spent >= options_.budget_seconds; }

  DeviceRegistry& registry_;
  Options options_;
  CacheFolder folder_;
  std::mutex mu_;
  Stats stats_;
};

}  // namespace uopc
