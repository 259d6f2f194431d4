#include "runtime/kernel_search.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "core/file.h"
#include "core/fnv.h"
#include "core/serialize.h"
#include "core/status_macros.h"
#include "core/symbolic/simplify.h"
#include "devices/kernel_cache.h"
#include "runtime/plan.h"

namespace uopc {
namespace {

constexpr int kTimedRuns = 3;           // at least this many timed runs of a form
constexpr double kTimedSeconds = 0.02;  // and for at least this long

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One form as the plan of one kernel: simplified (the pipeline's pass after rangeify), its
// buffers numbered 0..n-1 as a plan's kernel step has them.
absl::StatusOr<Plan> Alone(const UOp& form) {
  return ExtractPlan(UOp::Sink({UOp::Sink({Simplify(form)}), UOp::Sink({})}), 0);
}

// The choice remembered in `text` ("forms N best I"), if it is one of `forms` forms.
std::optional<int> ParseChoice(absl::string_view text, size_t forms) {
  std::vector<absl::string_view> w = absl::StrSplit(text, ' ', absl::SkipWhitespace());
  int n = 0, best = 0;
  if (w.size() != 4 || w[0] != "forms" || w[2] != "best" || !absl::SimpleAtoi(w[1], &n) ||
      !absl::SimpleAtoi(w[3], &best) || n != static_cast<int>(forms) || best < 0 || best >= n)
    return std::nullopt;
  return best;
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

absl::StatusOr<double> KernelSearch::Time(const UOp& form) {
  ASSIGN_OR_RETURN(Plan plan, Alone(form));
  if (plan.kernels().size() != 1 || !plan.vars.empty())
    return absl::UnimplementedError("search: a form with symbolic sizes is not timed");
  const std::string& name = plan.steps[0].device;
  ASSIGN_OR_RETURN(Device * d, name.empty() ? registry_.Default() : registry_.GetDevice(name));
  if (d->peer_rank() >= 0)
    return absl::FailedPreconditionError(absl::StrCat("search: ", name, " is another rank's"));
  const Plan::Kernel& k = *plan.kernels()[0];
  KernelLaunch launch{k.ast, {}, {}};
  for (int slot : k.buffers) {  // (the form's slots, numbered as in its whole plan)
    const Plan::BufferSpec& s = plan.buffers[slot];
    ASSIGN_OR_RETURN(Buffer b, d->Allocate(s.dtype, s.count));
    const std::vector<char> zeros(s.bytes());  // (zero indices stay in bounds)
    RETURN_IF_ERROR(d->CopyIn(b, zeros.data(), zeros.size()));
    launch.buffers.push_back(std::move(b));
  }
  KernelCache cache(*d);
  RETURN_IF_ERROR(cache.Run({&launch, 1}));  // compiles it, and warms up
  double best = std::numeric_limits<double>::infinity(), total = 0;
  for (int runs = 0; runs < kTimedRuns || total < kTimedSeconds; ++runs) {
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(cache.Run({&launch, 1}));
    const double t = Since(start);
    best = std::min(best, t);
    total += t;
  }
  return best;
}

int KernelSearch::Choose(const std::vector<UOp>& forms) {
  if (forms.size() < 2 || options_.beam < 2) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<Plan> first = Alone(forms[0]);
  if (!first.ok() || first->kernels().size() != 1 || !first->vars.empty()) return 0;
  const std::string& name = first->steps[0].device;
  absl::StatusOr<Device*> d = name.empty() ? registry_.Default() : registry_.GetDevice(name);
  if (!d.ok()) return 0;
  const uint64_t key = Fnv1a(absl::StrCat((*d)->kind(), " ", (*d)->backend_fingerprint()),
                             Fnv1a(SerializeGraph(first->kernels()[0]->ast)));
  const std::string file = absl::StrCat(absl::Hex(key, absl::kZeroPad16), ".txt");
  absl::StatusOr<std::string> dir = folder_.Get();
  if (dir.ok())
    if (absl::StatusOr<std::string> text = ReadFile(*dir + "/" + file, 4096); text.ok())
      if (std::optional<int> best = ParseChoice(*text, forms.size())) {
        ++stats_.remembered;
        return *best;
      }
  if (stats_.seconds >= options_.budget_seconds) return 0;
  const auto start = std::chrono::steady_clock::now();
  int best = 0;
  double fastest = std::numeric_limits<double>::infinity();
  for (int f = 0; f < std::min<int>(options_.beam, forms.size()); ++f) {
    absl::StatusOr<double> t = Time(forms[f]);
    ++stats_.forms_timed;
    if (t.ok() && *t < fastest) fastest = *t, best = f;
  }
  ++stats_.searched;
  stats_.seconds += Since(start);
  if (fastest == std::numeric_limits<double>::infinity()) return 0;  // (none ran: not kept)
  const std::string text = absl::StrCat("forms ", forms.size(), " best ", best, "\n");
  for (int attempt = 0; attempt < 2 && dir.ok(); ++attempt) {
    const absl::Status written = WriteFileAtomic(*dir + "/" + file, {text});
    if (written.ok()) break;
    dir = folder_.Fallback(*dir, written.message());
  }
  return best;
}

}  // namespace uopc
