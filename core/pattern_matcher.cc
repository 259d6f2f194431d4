#include "core/pattern_matcher.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

#include "core/env.h"

namespace uopc {
namespace {

bool Counting() {
  static const bool on = EnvInt("UOPC_DEBUG", 0, 9, 0) >= 3;
  return on;
}

std::mutex& CountsMutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
absl::flat_hash_map<std::string, int64_t>& Counts() {
  static auto* counts = new absl::flat_hash_map<std::string, int64_t>();
  return *counts;
}

}  // namespace

PatternMatcher::PatternMatcher(std::string name, std::vector<Rule> rules)
    : rules_(std::move(rules)) {
  for (size_t i = 0; i < rules_.size(); ++i) names_.push_back(absl::StrCat(name, "[", i, "]"));
  Index();
}

PatternMatcher& PatternMatcher::operator=(const PatternMatcher& o) {
  rules_ = o.rules_;
  names_ = o.names_;
  Index();
  return *this;
}

void PatternMatcher::Index() {
  for (auto& v : by_op_) v.clear();
  for (size_t i = 0; i < rules_.size(); ++i)
    for (int op = 0; op < kNumOps; ++op)
      if (rules_[i].pat.ops().Empty() || rules_[i].pat.ops().Has(static_cast<Ops>(op)))
        by_op_[op].push_back(static_cast<int>(i));
}

UOp PatternMatcher::Rewrite(const UOp& u, const Match& base, int* fired) const {
  Match m = base;
  for (int i : by_op_[static_cast<int>(u.op())]) {
    m.captures_.clear();
    if (!rules_[i].pat.MatchInto(u, m)) continue;
    UOp out = rules_[i].fn(m);
    if (!out || out == u) continue;
    if (fired) *fired = i;
    if (Counting()) {
      std::lock_guard<std::mutex> lock(CountsMutex());
      ++Counts()[names_[i]];
    }
    return out;
  }
  return UOp();
}

UOp PatternMatcher::Rewrite(const UOp& u, void* ctx) const {
  Match m;
  m.ctx_ = ctx;
  return Rewrite(u, m);
}

PatternMatcher operator+(const PatternMatcher& a, const PatternMatcher& b) {
  PatternMatcher out = a;
  out.rules_.insert(out.rules_.end(), b.rules_.begin(), b.rules_.end());
  out.names_.insert(out.names_.end(), b.names_.begin(), b.names_.end());
  out.Index();
  return out;
}

std::vector<std::pair<std::string, int64_t>> TakeRuleCounts() {
  std::lock_guard<std::mutex> lock(CountsMutex());
  std::vector<std::pair<std::string, int64_t>> out(Counts().begin(), Counts().end());
  Counts().clear();
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return out;
}

}  // namespace uopc
