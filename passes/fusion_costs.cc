#include "passes/fusion_costs.h"

#include <vector>

namespace uopc {

bool IsKernel(const UOp& u) { return u.is(Ops::STAGE) || u.is(Ops::ASSIGN); }

// Whether `u` reads more than three buffers (materialized values) through no materialized
// node: a residual stream that no kernel writes is the sum of every block's output.
bool ReadsManyBuffers(const UOp& u, const absl::flat_hash_set<const UOp::Node*>& staged) {
  std::vector<UOp> stack{u};
  absl::flat_hash_set<const UOp::Node*> seen;
  int reads = 0;
  while (!stack.empty()) {
    UOp x = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(x.get()).second) continue;
    if (IsKernel(x) || staged.contains(x.get()) || x.is(Ops::BUFFER)) {
      if (++reads > 3) return true;
      continue;
    }
    if (IsMovement(x.op()) || x.is(Ops::AFTER))
      stack.push_back(x.src(0));
    else
      for (const UOp& s : x.src()) stack.push_back(s);
  }
  return false;
}

// How many kernels may compute `u` each (reaching it through no materialized node) before
// it is worth materializing once: a reduction, one; an elementwise value that reads many
// buffers, one (a GPT's residual stream, summed again from every block's output by each of
// a layer norm's kernels, forward and backward); a transcendental (exp2, log2, sin), two: a
// softmax's exp, read by its sum, its output and three backward kernels, costs each of them
// a call per element (1 ns) where reading it back costs a load, but a softmax alone (its
// sum and output) stays three kernels. Anything else: any number.
size_t KernelsThatMayRepeat(const UOp& u, const absl::flat_hash_set<const UOp::Node*>& staged) {
  if (u.is(Ops::REDUCE)) return 1;
  if (IsTranscendental(u.op())) return 2;
  if (IsAlu(u.op()) && ReadsManyBuffers(u, staged)) return 1;
  return SIZE_MAX;
}

// Whether recomputing `u` (up to the next materialized node) for every element it is
// broadcast to costs more than reading it back: it holds a REDUCE, more than three ALU ops,
// or reads more than two buffers. (Broadcasting -m into a softmax's sum is cheap; a layer
// norm's output broadcast into a matmul is not.)
bool Expensive(const UOp& u, const absl::flat_hash_set<const UOp::Node*>& staged) {
  std::vector<UOp> stack{u};
  absl::flat_hash_set<const UOp::Node*> seen;
  int alu = 0, reads = 0;
  while (!stack.empty()) {
    UOp x = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(x.get()).second) continue;
    if (IsKernel(x) || staged.contains(x.get()) || x.is(Ops::BUFFER)) {
      ++reads;
      continue;
    }
    if (x.is(Ops::REDUCE)) return true;
    if (IsAlu(x.op())) ++alu;
    if (IsMovement(x.op()) || x.is(Ops::AFTER))
      stack.push_back(x.src(0));  // (the other sources are dims, or writes it waits for)
    else
      for (const UOp& s : x.src()) stack.push_back(s);
  }
  return alu > 3 || reads > 2;
}

}  // namespace uopc
