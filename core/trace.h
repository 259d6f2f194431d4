// Trace: what ran, in the Chrome / Perfetto trace-event format, when UOPC_TRACE=FILE is set
// (open the file in ui.perfetto.dev or chrome://tracing). Each event is a span with a
// category (plan, kernel, copy, compile, collective), a name, the track it is drawn on (a
// device's name, "plans", "collectives") and arguments (bytes, device, ...); a process
// is a rank ("rank R", pid R; a single process is rank 0). Timestamps are CLOCK_MONOTONIC
// microseconds, which every process of a host shares, so the ranks' files line up.
//
// Events are kept in memory and written when the process exits (or on Flush). A rank of a
// job of several (SetRank) writes FILE.rank<R>; uopc_launch merges those into FILE when the
// job ends (MergeRankFiles). Tracing costs nothing when UOPC_TRACE is unset: Enabled() is
// one load of a cached flag.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace uopc::trace {

/// Whether UOPC_TRACE is set (read once).
bool Enabled();
/// Now, in microseconds of CLOCK_MONOTONIC.
int64_t NowMicros();
/// One finished span; `args` are shown with it (numbers as numbers when they parse).
void Record(const char* category, std::string name, const std::string& track, int64_t start_us,
            int64_t end_us, std::vector<std::pair<std::string, std::string>> args = {});
/// This process is rank `rank` of `world` (called when it joins a job).
void SetRank(int rank, int world);
/// Writes the events so far to the trace file (again at exit, with everything).
absl::Status Flush();

/// A span from its construction to its destruction (when Enabled()).
class Span {
 public:
  Span(const char* category, std::string name, std::string track)
      : on_(Enabled()), category_(category) {
    if (!on_) return;
    name_ = std::move(name);
    track_ = std::move(track);
    start_ = NowMicros();
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  ~Span() {
    if (on_) Record(category_, std::move(name_), track_, start_, NowMicros(), std::move(args_));
  }
  void Arg(std::string key, std::string value) {
    if (on_) args_.emplace_back(std::move(key), std::move(value));
  }

 private:
  bool on_;
  const char* category_;
  std::string name_, track_;
  int64_t start_ = 0;
  std::vector<std::pair<std::string, std::string>> args_;
};

/// The files ranks 0..world-1 wrote for `path` (path.rank<R>), merged into `path` (a
/// missing one is skipped: a rank that died before writing); the rank files are removed.
/// NOT_FOUND, and `path` untouched, if there is none.
absl::Status MergeRankFiles(const std::string& path, int world);

}  // namespace uopc::trace
