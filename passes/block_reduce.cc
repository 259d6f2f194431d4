#include "passes/block_reduce.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "core/substitute.h"
#include "core/symbolic/simplify.h"
#include "passes/launch_dims.h"
#include "passes/lowered_steps.h"
#include "passes/scope.h"

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

// The threads of a block an output: the largest power of two from the warp to min(256, the
// block's) that divides `n` with at least 4 inputs a thread, else the largest with at least 4
// inputs a thread (the last step gated); nullopt where none has.
std::optional<int64_t> ThreadsFor(int64_t n, const Target& t) {
  const int64_t most = std::min<int64_t>(256, t.threads_per_block > 0 ? t.threads_per_block : 256);
  for (int64_t l = most; l >= std::max(t.warp, 1); l /= 2)
    if (n % l == 0 && n / l >= 4) return l;
  for (int64_t l = most; l >= std::max(t.warp, 1); l /= 2)
    if (n / l >= 4) return l;
  return std::nullopt;
}

UOp Identity(Ops op) {
  return op == Ops::MAX ? UOp::ConstFloat(DType::kF32, -std::numeric_limits<double>::infinity())
                        : UOp::ConstFloat(DType::kF32, 0);
}

// Whether every read of a kernel buffer in `value` steps by 1 or 0 along `loop`, and one by 1
// (a row read along memory: a warp's lanes then read consecutive elements).
bool ReadsAlong(const UOp& value, const UOp& loop) {
  bool along = false;
  for (const UOp& u : value.Toposort()) {
    if (!u.is(Ops::LOAD) || !u.src(0).is(Ops::INDEX)) continue;
    UOp b = u.src(0).src(0);
    while (b.is(Ops::AFTER)) b = b.src(0);
    if (!b.is(Ops::BUFFER)) continue;
    const std::optional<int64_t> step = StepAlong(u.src(0).src(1), loop);
    if (!step || (*step != 0 && *step != 1)) return false;
    along |= *step == 1;
  }
  return along;
}

}  // namespace

UOp BlockReduceKernel(const UOp& kernel, const Target& t) {
  if (!t.IsGpu() || t.warp < 2 || !kernel.is(Ops::SINK) || kernel.src().size() != 1) return kernel;
  const TopLoops top = TopLoopsOf(kernel);
  if (!top.statement.is(Ops::STORE)) return kernel;
  const std::optional<int64_t> outputs = ConstantLength(top.loops, RangeKind::kLoop);
  if (!outputs) return kernel;
  const std::optional<UOp> reduce = OnlyReduce(top.statement);
  if (!reduce || reduce->dtype() != DType::kF32) return kernel;
  const Ops op = reduce->arg().Get<ReduceArg>().op;
  if (op != Ops::ADD && op != Ops::MAX) return kernel;
  const std::vector<UOp> loops(reduce->src().begin() + 1, reduce->src().end());
  if (loops.empty()) return kernel;
  const std::optional<int64_t> inputs = ConstantLength(loops, RangeKind::kReduce);
  if (!inputs) return kernel;
  // threads an output (t_n) and outputs a block (r_n): a block an output where there are
  // few; else a warp an output, where it reads its row along memory
  int64_t t_n = 0, r_n = 1;
  if (*outputs <= int64_t{t.cores} * t.warp && *inputs >= kBlockReduceInputs) {
    if (std::optional<int64_t> threads = ThreadsFor(*inputs, t)) t_n = *threads;
  }
  const int64_t block_threads =
      std::min<int64_t>(256, t.threads_per_block > 0 ? t.threads_per_block : 256);
  if (!t_n && *inputs >= kWarpReduceInputs && block_threads >= t.warp &&
      ReadsAlong(reduce->src(0), loops.back()))
    t_n = t.warp, r_n = LargestDivisor(*outputs, block_threads / t.warp);
  const int64_t l_n = t_n * r_n;
  if (!t_n || 2 * l_n * DTypeSize(reduce->dtype()) > t.shared_per_block) return kernel;

  int next = NextLoopNumber(kernel), next_alloc = 0;
  for (const UOp& u : kernel.Toposort())
    if (u.is(Ops::ALLOC)) next_alloc = std::max(next_alloc, u.arg().Get<ParamArg>().slot + 1);
  const UOp block = UOp::Range(*outputs / r_n, next++, RangeKind::kGlobal);
  auto threads_loop = [&] { return UOp::Range(l_n, next++, RangeKind::kLocal); };
  const UOp thread = threads_loop();
  const UOp step = UOp::Range((*inputs + t_n - 1) / t_n, next++, RangeKind::kReduce);

  // each thread's inputs: its output's (block * r_n + thread / t_n), every t_n-th input from
  // its lane (thread % t_n) on
  absl::flat_hash_map<const UOp::Node*, UOp> inner;
  if (!top.loops.empty())
    LoopIndices(top.loops, r_n == 1 ? block : block * r_n + thread.FloorDiv(t_n), inner);
  // (where t_n does not divide the inputs, the last step's lanes past them read the last
  // input and take the op's identity instead)
  const UOp input = step * t_n + (r_n == 1 ? thread : thread.Mod(t_n));
  const bool ragged = *inputs % t_n != 0;
  const UOp in_range = input.Lt(UOp::Int(*inputs));
  LoopIndices(loops, ragged ? in_range.Where(input, UOp::Int(*inputs - 1)) : input, inner);
  UOp value = ReplaceNodes(reduce->src(0), inner);
  if (ragged) value = in_range.Where(value, Identity(op));
  const UOp mine = UOp::Derived(Ops::REDUCE, {Simplify(value), step}, reduce->arg());
  // thread l's partial result, then halves of an output's combined in pairs (lane l and
  // l + half, for lane < half; the other lanes compute what no one reads, in range) until one
  // is left. Each stage reads one array and writes another: the block's shared memory, or,
  // where the next stage reads only what its warp wrote (half <= warp), the warp's registers
  // (a GPU exchanges those by shuffles, no barrier for the block). The last stage writes the
  // shared array that no stage has read since the block last waited, for the block to read.
  auto array = [&](absl::string_view memory) {
    return UOp::Make(Ops::ALLOC, reduce->dtype(), {},
                     ParamArg{next_alloc++, l_n, std::string(memory)});
  };
  const UOp shared[2] = {array(kSharedMemory), array(kSharedMemory)};
  UOp warp[2];
  auto warp_array = [&](const UOp& other) {
    if (!warp[0]) warp[0] = array(kWarpRegisters), warp[1] = array(kWarpRegisters);
    return other == warp[0] ? warp[1] : warp[0];
  };
  UOp in = t_n <= t.warp ? warp_array(UOp()) : shared[0];
  UOp barrier = UOp::Derived(Ops::BARRIER, {in.Index(thread).Store(mine).End({thread})});
  int last_shared_read = 1;
  for (int64_t half = t_n / 2; half >= 1; half /= 2) {
    if (in.arg().Get<ParamArg>().device == kSharedMemory)
      last_shared_read = in == shared[0] ? 0 : 1;
    UOp out;
    if (half == 1) {
      out = shared[last_shared_read ^ 1];
    } else if (half <= t.warp) {
      out = warp_array(in);
    } else {
      out = in == shared[0] ? shared[1] : shared[0];
    }
    const UOp l = threads_loop(), from = in.After({barrier});
    const UOp a = from.Index(l).Load(), b = from.Index((l + half).Mod(l_n)).Load();
    const UOp both = op == Ops::MAX ? a.Max(b) : a + b;
    barrier = UOp::Derived(Ops::BARRIER, {out.After({barrier}).Index(l).Store(both).End({l})});
    in = out;
  }
  // the block's: each of its outputs, with what the kernel made of the reduction (a loop over
  // them where there are several)
  const UOp output = r_n == 1 ? UOp() : UOp::Range(r_n, next++);
  absl::flat_hash_map<const UOp::Node*, UOp> at;
  if (!top.loops.empty()) LoopIndices(top.loops, r_n == 1 ? block : block * r_n + output, at);
  at[reduce->get()] = in.After({barrier}).Index(r_n == 1 ? UOp::Int(0) : output * t_n).Load();
  const UOp statement = Simplify(ReplaceNodes(top.statement, at));
  return UOp::Sink({(r_n == 1 ? statement : statement.End({output})).End({block})});
}

absl::StatusOr<UOp> BlockReduce(const UOp& lowered, const PassContext& ctx) {
  return MapKernels(lowered, "block_reduce", [&](const UOp& k) -> absl::StatusOr<UOp> {
    const std::string device = KernelDevice(k);
    if (!ctx.MapsLaunch(device)) return k;
    return BlockReduceKernel(k, ctx.TargetOf(device));
  });
}

}  // namespace uopc
