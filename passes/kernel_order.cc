#include "passes/kernel_order.h"

#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

#include "core/status_macros.h"
#include "passes/indexing.h"

namespace uopc {
namespace {

bool IsKernel(const UOp& u) { return u.is(Ops::STAGE) || u.is(Ops::ASSIGN); }

// The kernels (STAGEs and in-place writes) of `order`, in the order they run: each after the
// kernels it reads (or whose writes it reads, through AFTER), and each write after every
// kernel that reads the buffer it writes without depending on the write (those read the
// old contents); otherwise a collective as soon as it can run, and the rest in the order of
// `order`.
absl::StatusOr<std::vector<UOp>> RunOrder(const std::vector<UOp>& order) {
  std::vector<UOp> kernels;
  absl::flat_hash_map<const UOp::Node*, int> index;
  for (const UOp& u : order)
    if (IsKernel(u)) {
      index[u.get()] = static_cast<int>(kernels.size());
      kernels.push_back(u);
    }
  const size_t n = kernels.size();
  std::vector<std::vector<int>> deps(n);                     // kernels each one needs first
  std::vector<absl::flat_hash_set<const UOp::Node*>> reads(n);  // input buffers it reads
  for (size_t k = 0; k < n; ++k) {
    const UOp& u = kernels[k];
    // (an ASSIGN reads its value; its target only orders it after earlier writes)
    std::vector<std::pair<UOp, bool>> stack{{u.is(Ops::ASSIGN) ? u.src(1) : u.src(0), true}};
    if (u.is(Ops::ASSIGN)) stack.push_back({u.src(0), false});
    absl::flat_hash_set<std::pair<const UOp::Node*, bool>> seen;
    while (!stack.empty()) {
      auto [x, read] = stack.back();
      stack.pop_back();
      if (!seen.insert({x.get(), read}).second) continue;
      if (IsKernel(x)) {
        deps[k].push_back(index.at(x.get()));
        continue;
      }
      if (x.is(Ops::BUFFER) && read) reads[k].insert(x.get());
      for (size_t i = 0; i < x.src().size(); ++i)
        stack.push_back({x.src(i), read && !(x.is(Ops::AFTER) && i > 0)});
    }
  }
  // needs[k]: every kernel k depends on, transitively (kernels come sources first)
  std::vector<std::vector<bool>> needs(n, std::vector<bool>(n, false));
  for (size_t k = 0; k < n; ++k)
    for (int d : deps[k]) {
      needs[k][d] = true;
      for (size_t j = 0; j < n; ++j) needs[k][j] = needs[k][j] || needs[d][j];
    }
  for (size_t a = 0; a < n; ++a) {
    if (!kernels[a].is(Ops::ASSIGN)) continue;
    const UOp::Node* written = ViewedBuffer(kernels[a].src(0)).get();
    for (size_t k = 0; k < n; ++k)
      if (k != a && !needs[k][a] && reads[k].contains(written)) deps[a].push_back(k);
  }
  // the kernels in dependency order, the earliest in `order` first where several are ready
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> users(n);
  for (size_t k = 0; k < n; ++k)
    for (int d : deps[k]) {
      ++waiting[k];
      users[d].push_back(static_cast<int>(k));
    }
  // (a collective first: it runs while the kernels after it do)
  auto key = [&](int k) {
    return std::pair{!(kernels[k].is(Ops::STAGE) && kernels[k].src(0).is(Ops::COLLECTIVE)), k};
  };
  std::set<std::pair<bool, int>> ready;
  for (size_t k = 0; k < n; ++k)
    if (!waiting[k]) ready.insert(key(static_cast<int>(k)));
  std::vector<UOp> out;
  while (!ready.empty()) {
    int k = ready.begin()->second;
    ready.erase(ready.begin());
    out.push_back(kernels[k]);
    for (int u : users[k])
      if (--waiting[u] == 0) ready.insert(key(u));
  }
  if (out.size() != n)
    return absl::InvalidArgumentError(
        "kernel_order: a kernel reads a buffer both before and after an in-place write to it; "
        "realize the read of the old contents first");
  return out;
}

}  // namespace

absl::StatusOr<UOp> KernelOrder(const UOp& staged, const PassContext&) {
  if (!staged.is(Ops::SINK))
    return absl::InvalidArgumentError(
        "kernel_order: expected a SINK of STAGEs (run kernelize first)");
  ASSIGN_OR_RETURN(std::vector<UOp> run, RunOrder(staged.Toposort()));
  return UOp::Sink({UOp::Sink(run), UOp::Sink(staged.src())});
}

}  // namespace uopc
