#include "runtime/kernel_search.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

#include "core/file.h"
#include "core/fnv.h"
#include "core/serialize.h"
#include "core/status_macros.h"
#include "core/symbolic/simplify.h"
#include "devices/kernel_cache.h"
#include "runtime/plan.h"

namespace uopc {
namespace {

constexpr int kTimedRuns = 3;             // at least this many timed runs of a candidate
constexpr double kTimedSeconds = 0.01;    // and for at least this long
constexpr int64_t kColdBytes = 8 << 20;   // buffers run in turn: at least this many bytes
constexpr int64_t kMaxSets = 64;          // in at most this many sets
constexpr size_t kMaxBatches = 8;         // compiled at once (one per core)
constexpr int kMaxRounds = 2;             // rounds of changing one action
constexpr double kMinGain = 0.02;         // a round that gains less ends the search
constexpr double kMinWin = 0.05;          // a choice other than the defaults must gain this
constexpr double kMinSeconds = 20e-6;     // a kernel faster than this by default is left so
constexpr const char* kPrefix = "opts:";  // a cache entry: "opts: upcast 0 8, upcast 1 48"

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One kernel as the plan of one step: simplified (the pipeline's pass after rangeify), its
// buffers numbered 0..n-1 as a plan's kernel step has them.
absl::StatusOr<Plan> Alone(const UOp& kernel) {
  ASSIGN_OR_RETURN(Plan plan,
                   ExtractPlan(UOp::Sink({UOp::Sink({Simplify(kernel)}), UOp::Sink({})}), 0));
  if (plan.kernels().size() != 1 || !plan.vars.empty())
    return absl::UnimplementedError("search: a kernel with symbolic sizes is not timed");
  return plan;
}

// Seconds per run of `plan`'s kernel (compiled by `cache` already), on zero-filled buffers.
absl::StatusOr<double> Time(KernelCache& cache, const Plan& plan) {
  Device& d = cache.device();
  const Plan::Kernel& k = *plan.kernels()[0];
  int64_t bytes = 0;
  for (int slot : k.buffers) bytes += plan.buffers[slot].bytes();
  // several sets of buffers, run in turn, so that a run finds its buffers out of the caches
  // a run before it filled, as a kernel in a program mostly does
  const int64_t sets = std::clamp<int64_t>(kColdBytes / std::max<int64_t>(bytes, 1), 1, kMaxSets);
  std::vector<KernelLaunch> launches(sets, KernelLaunch{k.ast, {}, {}});
  for (KernelLaunch& launch : launches)
    for (int slot : k.buffers) {  // (the kernel's slots, numbered as in its plan)
      const Plan::BufferSpec& s = plan.buffers[slot];
      ASSIGN_OR_RETURN(Buffer b, d.Allocate(s.dtype, s.count));
      const std::vector<char> zeros(s.bytes());  // (zero indices stay in bounds)
      RETURN_IF_ERROR(d.CopyIn(b, zeros.data(), zeros.size()));
      launch.buffers.push_back(std::move(b));
    }
  RETURN_IF_ERROR(cache.Run({&launches[0], 1}));  // (warms up)
  double best = std::numeric_limits<double>::infinity(), total = 0;
  for (int runs = 0; runs < kTimedRuns || total < kTimedSeconds; ++runs) {
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(cache.Run({&launches[(runs + 1) % sets], 1}));
    const double t = Since(start);
    best = std::min(best, t);
    total += t;
  }
  return best;
}

// The choice remembered in `text` ("opts: ..."), if it reads as one.
std::optional<std::vector<Opt>> ParseChoice(absl::string_view text) {
  if (!absl::ConsumePrefix(&text, kPrefix)) return std::nullopt;
  absl::StatusOr<std::vector<Opt>> opts = ParseOpts(text);
  return opts.ok() ? std::optional(*opts) : std::nullopt;
}

}  // namespace

KernelSearch::KernelSearch(DeviceRegistry& registry, Options options)
    : registry_(registry),
      options_(std::move(options)),
      folder_(options_.cache_root, "search", [this](const std::string& w) {
        (options_.log ? *options_.log : std::cerr) << "uopc: " << w << "\n";
      }) {}

KernelSearch::Stats KernelSearch::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::vector<KernelSearch::Candidate> KernelSearch::TimeAll(
    const OptSpace& space, Device& device, const std::vector<std::vector<Opt>>& lists,
    std::vector<UOp>& seen) {
  std::vector<std::pair<std::vector<Opt>, Plan>> todo;
  for (const std::vector<Opt>& opts : lists) {
    absl::StatusOr<UOp> kernel = space.build(opts);
    if (!kernel.ok() || std::find(seen.begin(), seen.end(), *kernel) != seen.end()) continue;
    seen.push_back(*kernel);
    absl::StatusOr<Plan> plan = Alone(*kernel);
    if (plan.ok()) todo.emplace_back(opts, std::move(*plan));
  }
  // compiled in one batch per core, the batches at once (a batch that fails to compile:
  // each of its kernels alone, in Time)
  const size_t parts = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, kMaxBatches);
  std::vector<std::unique_ptr<KernelCache>> caches;
  std::vector<std::vector<UOp>> batches(parts);
  for (size_t p = 0; p < parts; ++p) caches.push_back(std::make_unique<KernelCache>(device));
  for (size_t i = 0; i < todo.size(); ++i)
    batches[i % parts].push_back(todo[i].second.kernels()[0]->ast);
  std::vector<std::thread> compiles;
  for (size_t p = 0; p < parts; ++p)
    compiles.emplace_back([&, p] { caches[p]->Prepare(batches[p]).IgnoreError(); });
  for (std::thread& t : compiles) t.join();
  std::vector<Candidate> timed;
  for (size_t i = 0; i < todo.size(); ++i) {
    const auto& [opts, plan] = todo[i];
    absl::StatusOr<double> t = Time(*caches[i % parts], plan);
    ++stats_.timed;
    if (t.ok()) timed.push_back({opts, *t});
  }
  std::stable_sort(timed.begin(), timed.end(),
                   [](const Candidate& a, const Candidate& b) { return a.seconds < b.seconds; });
  return timed;
}

KernelSearch::Candidate KernelSearch::Search(const OptSpace& space, Device& device,
                                             double* defaults_seconds) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<UOp> seen;
  std::vector<Candidate> beam = TimeAll(space, device, {space.defaults, {}}, seen);
  if (beam.empty()) return {space.defaults, 0};
  Candidate best = beam[0];
  const auto found = std::find_if(beam.begin(), beam.end(),
                                  [&](const Candidate& c) { return c.opts == space.defaults; });
  if (found == beam.end()) return best;  // (the defaults did not run)
  const Candidate defaults = *found;
  *defaults_seconds = defaults.seconds;
  if (defaults.seconds < kMinSeconds) return defaults;
  for (int round = 0; round < kMaxRounds && !OverBudget(Since(start)); ++round) {
    beam.resize(std::min<size_t>(beam.size(), options_.beam));
    std::vector<std::vector<Opt>> lists;
    for (const Candidate& c : beam)
      for (const Opt& a : space.actions) lists.push_back(WithOpt(c.opts, a));
    beam = TimeAll(space, device, lists, seen);
    if (beam.empty() || beam[0].seconds >= best.seconds * (1 - kMinGain)) break;
    best = beam[0];
  }
  // (timed alone, on hot caches and zeros, a small gain may not be one inside a program)
  return best.seconds < defaults.seconds * (1 - kMinWin) ? best : defaults;
}

std::vector<Opt> KernelSearch::Choose(const OptSpace& space) {
  if (options_.beam < 1 || space.actions.empty()) return space.defaults;
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<UOp> base = space.build({});
  absl::StatusOr<Plan> plan = base.ok() ? Alone(*base) : base.status();
  if (!plan.ok()) return space.defaults;
  const std::string& name = plan->steps[0].device;
  absl::StatusOr<Device*> d = name.empty() ? registry_.Default() : registry_.GetDevice(name);
  if (!d.ok() || (*d)->peer_rank() >= 0) return space.defaults;  // (another rank's: not here)
  const uint64_t key = Fnv1a(absl::StrCat((*d)->kind(), " ", (*d)->backend_fingerprint(), " ",
                                          (*d)->target().ToString()),
                             Fnv1a(SerializeGraph(plan->kernels()[0]->ast)));
  const std::string file = absl::StrCat(absl::Hex(key, absl::kZeroPad16), ".txt");
  absl::StatusOr<std::string> dir = folder_.Get();
  if (dir.ok())
    if (absl::StatusOr<std::string> text = ReadFile(*dir + "/" + file, 4096); text.ok())
      if (std::optional<std::vector<Opt>> opts = ParseChoice(*text);
          opts && space.build(*opts).ok()) {
        ++stats_.remembered;
        return *opts;
      }
  if (OverBudget(0)) return space.defaults;
  const auto start = std::chrono::steady_clock::now();
  const int timed = stats_.timed;
  double defaults = 0;
  const Candidate best = Search(space, **d, &defaults);
  ++stats_.searched;
  stats_.seconds += Since(start);
  if (options_.verbose)
    (options_.log ? *options_.log : std::cerr) << absl::StreamFormat(
        "uopc: searched kernel %d, %s: \"%s\" %.1f us (the defaults \"%s\": %.1f us); %d "
        "candidates in %.2f s\n",
        stats_.searched, space.kernel, OptsToString(best.opts), best.seconds * 1e6,
        OptsToString(space.defaults), defaults * 1e6, stats_.timed - timed, Since(start));
  if (best.seconds == 0) return space.defaults;  // (none ran: not kept)
  const std::string text = absl::StrCat(kPrefix, " ", OptsToString(best.opts), "\n");
  for (int attempt = 0; attempt < 2 && dir.ok(); ++attempt) {
    const absl::Status written = WriteFileAtomic(*dir + "/" + file, {text});
    if (written.ok()) break;
    dir = folder_.Fallback(*dir, written.message());
  }
  return best.opts;
}

}  // namespace uopc
