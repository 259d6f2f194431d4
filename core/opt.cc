#include "core/opt.h"

#include <algorithm>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace uopc {
namespace {

constexpr struct {
  OptOp op;
  const char* name;
} kOptNames[] = {{OptOp::kUpcast, "upcast"}, {OptOp::kGroup, "group"}, {OptOp::kUnroll, "unroll"}};

const char* Name(OptOp op) {
  for (const auto& n : kOptNames)
    if (n.op == op) return n.name;
  return "?";  // (unreachable: every OptOp has a name)
}

}  // namespace

std::string OptsToString(const std::vector<Opt>& opts) {
  return absl::StrJoin(opts, ", ", [](std::string* out, const Opt& o) {
    absl::StrAppend(out, Name(o.op), " ", o.axis, " ", o.amount);
  });
}

absl::StatusOr<std::vector<Opt>> ParseOpts(absl::string_view text) {
  std::vector<Opt> opts;
  if (absl::StripAsciiWhitespace(text).empty()) return opts;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::vector<absl::string_view> w = absl::StrSplit(part, ' ', absl::SkipWhitespace());
    Opt o;
    const auto* name = std::find_if(std::begin(kOptNames), std::end(kOptNames),
                                    [&](const auto& n) { return w.size() == 3 && w[0] == n.name; });
    if (name == std::end(kOptNames) || !absl::SimpleAtoi(w[1], &o.axis) ||
        !absl::SimpleAtoi(w[2], &o.amount) || o.axis < 0 || o.amount < 1)
      return absl::InvalidArgumentError(
          absl::StrCat("opts: cannot read \"", absl::StripAsciiWhitespace(part),
                       "\"; expected an action as \"upcast|group|unroll LOOP AMOUNT\" (LOOP >= 0, "
                       "AMOUNT >= 1)"));
    o.op = name->op;
    opts.push_back(o);
  }
  return opts;
}

std::vector<Opt> WithOpt(std::vector<Opt> opts, const Opt& action) {
  auto other_style = [&](const Opt& o) {
    return (action.op == OptOp::kUpcast && o.op == OptOp::kGroup) ||
           (action.op == OptOp::kGroup && o.op == OptOp::kUpcast);
  };
  std::erase_if(opts, [&](const Opt& o) {
    return (o.op == action.op && o.axis == action.axis) || other_style(o);
  });
  opts.push_back(action);
  return opts;
}

std::vector<Opt> RandomOpts(const OptSpace& space, uint64_t seed) {
  std::mt19937_64 random(seed);
  for (int attempt = 0; attempt < 4 && !space.actions.empty(); ++attempt) {
    std::vector<Opt> opts = random() % 2 ? space.defaults : std::vector<Opt>{};
    for (int changes = 1 + random() % 3; changes > 0; --changes)
      opts = WithOpt(opts, space.actions[random() % space.actions.size()]);
    if (space.build(opts).ok()) return opts;
  }
  return space.defaults;
}

}  // namespace uopc
