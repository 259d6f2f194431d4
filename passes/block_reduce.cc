#include "passes/block_reduce.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "core/substitute.h"
#include "core/symbolic/simplify.h"
#include "passes/lowered_steps.h"

namespace uopc {
namespace {

// The product of the constant ends of `loops`; nullopt where one is not a constant loop of
// `kind` (a search's unroll, a run-time length).
std::optional<int64_t> ConstantLength(const std::vector<UOp>& loops, RangeKind kind) {
  int64_t n = 1;
  for (const UOp& r : loops) {
    if (!r.is(Ops::RANGE) || r.arg().Get<RangeArg>().kind != kind) return std::nullopt;
    std::optional<int64_t> e = r.src(0).ConstIntValue();
    if (!e || *e < 1 || n > (int64_t{1} << 40) / *e) return std::nullopt;
    n *= *e;
  }
  return n;
}

// Each of `loops` (outermost first) as its index in `flat`, an index over all their elements.
void Unflatten(const std::vector<UOp>& loops, const UOp& flat,
               absl::flat_hash_map<const UOp::Node*, UOp>& at) {
  int64_t stride = *ConstantLength(loops, loops.front().arg().Get<RangeArg>().kind);
  for (const UOp& r : loops) {
    const int64_t n = *r.src(0).ConstIntValue();
    stride /= n;
    UOp q = stride == 1 ? flat : flat.FloorDiv(stride);
    at[r.get()] = r == loops.front() ? q : q.Mod(n);
  }
}

UOp Replaced(const UOp& root, const absl::flat_hash_map<const UOp::Node*, UOp>& at) {
  return RewriteNodes(root, [&](const UOp& orig, const UOp& rebuilt) {
    auto it = at.find(orig.get());
    return it == at.end() ? rebuilt : it->second;
  });
}

// The kernel's one REDUCE, if it has exactly one and none inside it.
std::optional<UOp> OnlyReduce(const UOp& statement) {
  std::optional<UOp> found;
  for (const UOp& u : statement.Toposort()) {
    if (!u.is(Ops::REDUCE)) continue;
    if (found) return std::nullopt;
    found = u;
  }
  return found;
}

// The threads a block: the largest power of two from the warp to min(256, the block's) that
// divides `n` with at least 4 inputs a thread; nullopt where none does.
std::optional<int64_t> ThreadsFor(int64_t n, const Target& t) {
  const int64_t most = std::min<int64_t>(256, t.threads_per_block > 0 ? t.threads_per_block : 256);
  for (int64_t l = most; l >= std::max(t.warp, 1); l /= 2)
    if (n % l == 0 && n / l >= 4) return l;
  return std::nullopt;
}

}  // namespace

UOp BlockReduceKernel(const UOp& kernel, const Target& t) {
  if (!t.IsGpu() || !kernel.is(Ops::SINK) || kernel.src().size() != 1) return kernel;
  const TopLoops top = TopLoopsOf(kernel);
  if (!top.statement.is(Ops::STORE)) return kernel;
  const std::optional<int64_t> outputs = ConstantLength(top.loops, RangeKind::kLoop);
  if (!outputs || *outputs > int64_t{t.cores} * std::max(t.warp, 1)) return kernel;
  const std::optional<UOp> reduce = OnlyReduce(top.statement);
  if (!reduce || reduce->dtype() != DType::kF32) return kernel;
  const Ops op = reduce->arg().Get<ReduceArg>().op;
  if (op != Ops::ADD && op != Ops::MAX) return kernel;
  const std::vector<UOp> loops(reduce->src().begin() + 1, reduce->src().end());
  if (loops.empty()) return kernel;
  const std::optional<int64_t> inputs = ConstantLength(loops, RangeKind::kReduce);
  if (!inputs || *inputs < kBlockReduceInputs) return kernel;
  const std::optional<int64_t> threads = ThreadsFor(*inputs, t);
  if (!threads || 2 * *threads * DTypeSize(reduce->dtype()) > t.shared_per_block) return kernel;
  const int64_t l_n = *threads;

  int next = NextLoopNumber(kernel), next_alloc = 0;
  for (const UOp& u : kernel.Toposort())
    if (u.is(Ops::ALLOC)) next_alloc = std::max(next_alloc, u.arg().Get<ParamArg>().slot + 1);
  const UOp block = UOp::Range(*outputs, next++, RangeKind::kGlobal);
  auto threads_loop = [&] { return UOp::Range(l_n, next++, RangeKind::kLocal); };
  const UOp thread = threads_loop();
  const UOp step = UOp::Range(*inputs / l_n, next++, RangeKind::kReduce);

  absl::flat_hash_map<const UOp::Node*, UOp> at;  // the output loops, from the block
  if (!top.loops.empty()) Unflatten(top.loops, block, at);
  // each thread's inputs: every L-th from its own on
  absl::flat_hash_map<const UOp::Node*, UOp> inner = at;
  Unflatten(loops, step * l_n + thread, inner);
  const UOp mine =
      UOp::Derived(Ops::REDUCE, {Simplify(Replaced(reduce->src(0), inner)), step}, reduce->arg());
  // thread l's partial result, then halves of them combined in pairs (l and l + half, for
  // l < half; the threads past half compute what no one reads, in range) until one is left.
  // Each stage reads one array and writes another: the block's shared memory, or, where the
  // next stage reads only what the first warp wrote (half <= warp), the warp's registers
  // (a GPU exchanges those by shuffles, no barrier for the block). The last stage writes the
  // shared array that no stage has read since the block last waited, for the block to read.
  auto array = [&](absl::string_view memory) {
    return UOp::Make(Ops::ALLOC, reduce->dtype(), {},
                     ParamArg{next_alloc++, l_n, std::string(memory)});
  };
  const UOp shared[2] = {array(kSharedMemory), array(kSharedMemory)};
  UOp warp[2];
  UOp barrier = UOp::Derived(Ops::BARRIER, {shared[0].Index(thread).Store(mine).End({thread})});
  UOp in = shared[0];
  int last_shared_read = 0;
  for (int64_t half = l_n / 2; half >= 1; half /= 2) {
    const bool warp_in = in.arg().Get<ParamArg>().device == kWarpRegisters;
    if (!warp_in) last_shared_read = in == shared[0] ? 0 : 1;
    UOp out;
    if (half == 1) {
      out = shared[last_shared_read ^ 1];
    } else if (half <= t.warp) {
      if (!warp[0]) warp[0] = array(kWarpRegisters), warp[1] = array(kWarpRegisters);
      out = warp_in && in == warp[0] ? warp[1] : warp[0];
    } else {
      out = in == shared[0] ? shared[1] : shared[0];
    }
    const UOp l = threads_loop(), from = in.After({barrier});
    const UOp a = from.Index(l).Load(), b = from.Index((l + half).Mod(l_n)).Load();
    const UOp both = op == Ops::MAX ? a.Max(b) : a + b;
    barrier = UOp::Derived(Ops::BARRIER, {out.After({barrier}).Index(l).Store(both).End({l})});
    in = out;
  }
  // the block's: what the kernel made of the reduction
  at[reduce->get()] = in.After({barrier}).Index(UOp::Int(0)).Load();
  const UOp statement = Simplify(Replaced(top.statement, at));
  return UOp::Sink({statement.End({block})});
}

absl::StatusOr<UOp> BlockReduce(const UOp& lowered, const PassContext& ctx) {
  return MapKernels(lowered, "block_reduce", [&](const UOp& k) -> absl::StatusOr<UOp> {
    const std::string device = KernelDevice(k);
    if (!ctx.MapsLaunch(device)) return k;
    return BlockReduceKernel(k, ctx.TargetOf(device));
  });
}

}  // namespace uopc
