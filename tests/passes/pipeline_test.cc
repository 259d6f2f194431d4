// The lowering pipeline (passes/pipeline.h), pass by pass: its order, and the form of the
// graph between passes: kernel_order's run order, rangeify's loop-level REDUCE that lasts
// until reduce_to_accumulators, reduce_collapse's loads, schedule_opts' tile (its loops'
// kinds) and that nothing of it is left for the targets' passes, which come last: a CPU
// kernel's outer loop to the cores, a GPU kernel's outputs to blocks and threads.
#include "passes/pipeline.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/symbolic/simplify.h"
#include "core/uir.h"
#include "core/verify.h"
#include "passes/launch_dims.h"
#include "passes/thread_outer_loop.h"
#include "passes/indexing.h"
#include "runtime/plan_cache.h"

namespace uopc {
namespace {

// The graph after each pass, by the pass's name, lowering `roots` for the reference CPU.
std::map<std::string, UOp> AfterEachPass(const std::vector<UOp>& roots,
                                         const PassContext& ctx = {}) {
  UOp g = Canonicalize(UOp::Sink(roots)).sink;
  std::map<std::string, UOp> after;
  for (const std::string& name : LoweringPipeline().names()) {
    absl::StatusOr<std::unique_ptr<Pass>> pass = PassRegistry::Get().Create(name);
    EXPECT_TRUE(pass.ok()) << pass.status();
    absl::StatusOr<UOp> out = (*pass)->Run(g, ctx);
    EXPECT_TRUE(out.ok()) << name << ": " << out.status();
    if (!out.ok()) break;
    EXPECT_TRUE(Verify(*out).ok()) << name << ": " << Verify(*out);
    after[name] = g = *out;
  }
  return after;
}

UOp Dims(Ops op, UOp x, std::vector<int64_t> dims) {
  std::vector<UOp> src{x};
  for (int64_t d : dims) src.push_back(UOp::Int(d));
  return UOp::Derived(op, src);
}

// a (m, k) @ b (k, n), from flat buffers 0 and 1
UOp Matmul(int64_t m, int64_t k, int64_t n) {
  UOp a = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, m * k), {m, k, 1});
  UOp b = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 1, k * n), {1, k, n});
  UOp prod = Dims(Ops::EXPAND, a, {m, k, n}) * Dims(Ops::EXPAND, b, {m, k, n});
  return Dims(Ops::RESHAPE, UOp::Derived(Ops::REDUCE, {prod}, ReduceArg{Ops::ADD, {1}}), {m, n});
}

int Count(const UOp& g, Ops op) {
  int n = 0;
  for (const UOp& u : g.Toposort()) n += u.is(op);
  return n;
}

std::vector<RangeKind> Kinds(const UOp& g) {
  std::vector<RangeKind> kinds;
  for (const UOp& u : g.Toposort())
    if (u.is(Ops::RANGE)) kinds.push_back(u.arg().Get<RangeArg>().kind);
  return kinds;
}

bool Has(const std::vector<RangeKind>& kinds, RangeKind k) {
  return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
}

TEST(Pipeline, IsOneFlatListInOrder) {
  EXPECT_EQ(LoweringPipeline().names(),
            (std::vector<std::string>{
                "copy_rules", "layout_copies", "split_reduces", "kernelize", "kernel_order",
                "rangeify", "reduce_collapse", "supplied_kernels", "schedule_opts", "block_reduce",
                "reduce_to_accumulators", "half_in_f32", "simplify", "split_gated_loops",
                "number_loops", "thread_outer_loop", "launch_dims", "index_sums"}));
}

// A matmul's sum is a loop-level REDUCE from rangeify to reduce_to_accumulators; its loops
// are split into a register tile by schedule_opts (upcast loops), which then are plain
// loops again; the accumulators come last.
TEST(Pipeline, AReductionIsALoopLevelReduceUntilItsAccumulators) {
  std::map<std::string, UOp> after = AfterEachPass({Matmul(48, 8, 96)});
  ASSERT_EQ(after.size(), LoweringPipeline().names().size());
  const UOp& ranged = after["rangeify"];
  ASSERT_EQ(Count(ranged, Ops::REDUCE), 1);
  for (const UOp& u : ranged.Toposort())
    if (u.is(Ops::REDUCE)) {
      ASSERT_EQ(u.src().size(), 2u);  // the product, and its one loop over k
      EXPECT_EQ(u.src(1).arg().Get<RangeArg>().kind, RangeKind::kReduce);
      EXPECT_EQ(u.src(1).src(0).ConstIntValue(), 8);
    }
  EXPECT_EQ(Count(ranged, Ops::ALLOC), 0);
  EXPECT_EQ(after["reduce_collapse"], ranged);  // (no one-hot: nothing collapses)
  EXPECT_TRUE(Has(Kinds(after["schedule_opts"]), RangeKind::kUpcast));
  EXPECT_EQ(Count(after["schedule_opts"], Ops::REDUCE), 1);
  const UOp& accumulated = after["reduce_to_accumulators"];
  EXPECT_EQ(Count(accumulated, Ops::REDUCE), 0);
  EXPECT_EQ(Count(accumulated, Ops::ALLOC), 1);  // (one array: the tile's sums)
  EXPECT_FALSE(Has(Kinds(accumulated), RangeKind::kUpcast));
  EXPECT_FALSE(Has(Kinds(accumulated), RangeKind::kGroup));
  // numbered in order at the end: 0, 1, 2, ...
  std::vector<int> idx;
  for (const UOp& u : after["number_loops"].Toposort())
    if (u.is(Ops::RANGE)) idx.push_back(u.arg().Get<RangeArg>().idx);
  for (size_t i = 0; i < idx.size(); ++i) EXPECT_EQ(idx[i], static_cast<int>(i));
}

// A column sum of a (64, 5) matrix: a row of sums on the stack (group loops), then plain.
// Kernels index buffers with 32 bits, but what no buffer holds may span more: a 2048
// matmul's 2^33 products, each summed where it is computed, lower (rangeify refused them
// as a tensor past 2^31-1 elements; tools/uopc_test holds the buffers that are refused).
TEST(Pipeline, AMatmulOfMoreThan2To31ProductsLowers) {
  std::map<std::string, UOp> after = AfterEachPass({Matmul(2048, 2048, 2048)});
  EXPECT_EQ(after.size(), LoweringPipeline().names().size());
}

TEST(Pipeline, ARowOfSumsIsAGroupUntilItsAccumulators) {
  UOp x = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, 64 * 5), {64, 5});
  std::map<std::string, UOp> after =
      AfterEachPass({UOp::Derived(Ops::REDUCE, {x}, ReduceArg{Ops::ADD, {0}})});
  EXPECT_TRUE(Has(Kinds(after["schedule_opts"]), RangeKind::kGroup));
  EXPECT_FALSE(Has(Kinds(after["reduce_to_accumulators"]), RangeKind::kGroup));
}

// A one-hot sum (an embedding's lookup: sum_v (ids[t] == v) * table[v, d]) has no loop over
// the vocabulary after reduce_collapse, and nothing to schedule.
TEST(Pipeline, AOneHotSumIsALoadAfterReduceCollapse) {
  const int64_t tokens = 6, vocab = 50, dim = 4;
  UOp ids = Dims(Ops::RESHAPE, UOp::Buffer(DType::kI32, 0, tokens), {tokens, 1, 1});
  UOp iota = Dims(Ops::RESHAPE, UOp::Make(Ops::IOTA, DType::kI32, {UOp::Int(vocab)}), {1, vocab, 1});
  UOp one_hot = UOp::Derived(Ops::CMPEQ, {Dims(Ops::EXPAND, ids, {tokens, vocab, 1}),
                                          Dims(Ops::EXPAND, iota, {tokens, vocab, 1})})
                    .Cast(DType::kF32);
  UOp table = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 1, vocab * dim), {1, vocab, dim});
  UOp rows = UOp::Derived(Ops::REDUCE,
                          {Dims(Ops::EXPAND, one_hot, {tokens, vocab, dim}) *
                           Dims(Ops::EXPAND, table, {tokens, vocab, dim})},
                          ReduceArg{Ops::ADD, {1}});
  std::map<std::string, UOp> after = AfterEachPass({rows});
  EXPECT_EQ(Count(after["rangeify"], Ops::REDUCE), 1);
  EXPECT_EQ(Count(after["reduce_collapse"], Ops::REDUCE), 0);
  for (const UOp& u : after["number_loops"].Toposort())
    if (u.is(Ops::RANGE)) {
      EXPECT_NE(u.src(0).ConstIntValue(), vocab);
    }
  EXPECT_EQ(after["schedule_opts"], after["reduce_collapse"]);  // (no sum left to schedule)
}

// A sum of products is a MULACC a step (one rounding) for a target that fuses multiply-add
// (the reference CPU's fma, every GPU), and a multiply and an add for one that does not.
TEST(Pipeline, ASumOfProductsIsFusedWhereTheTargetFusesMultiplyAdd) {
  auto ops = [](const char* target) {
    PassContext ctx;
    ctx.default_target = *ParseTarget(target);
    const UOp k = AfterEachPass({Matmul(8, 16, 4)}, ctx)["number_loops"];
    return std::make_pair(Count(k, Ops::MULACC), Count(k, Ops::MUL));
  };
  EXPECT_EQ(ops("class=cpu features=avx2,fma").first, 1);
  EXPECT_EQ(ops("class=gpu arch=sm_90").first, 1);
  const auto [fused, products] = ops("class=cpu features=avx2");
  EXPECT_EQ(fused, 0);
  EXPECT_GE(products, 1);
}

// kernel_order: an in-place write runs after a kernel that reads the old contents.
TEST(Pipeline, KernelOrderPutsAWriteAfterTheReadsOfTheOldContents) {
  constexpr char kUir[] = R"(%0 = buffer 4 : dtype=f32 slot=0 device=CPU:0
%1 = reshape 2.0, 1
%2 = expand %1, 4
%3 = mul %0, %2
%4 = stage %3 : device=CPU:0
%5 = add %0, %2
%6 = assign %0, %5
%7 = sink %6, %4
)";
  const UOp g = *ParseUir(kUir);
  std::map<std::string, UOp> after = AfterEachPass({g.src().begin(), g.src().end()});
  const UOp& order = after["kernel_order"];
  // the read of the old contents, then the write (computed in place: each element of the
  // value reads only the element it overwrites)
  ASSERT_EQ(order.src(0).src().size(), 2u);
  EXPECT_TRUE(order.src(0).src(0).is(Ops::STAGE));
  EXPECT_TRUE(order.src(0).src(1).is(Ops::ASSIGN));
  EXPECT_EQ(order.src(1), after["kernelize"]);  // the roots, as kernelize left them
}

// A written value that reads its buffer elsewhere than where it writes (a flip of it) is
// computed whole first, then written: in place, it would read what it had overwritten.
TEST(Pipeline, AWriteThatReadsOtherElementsOfItsBufferIsStagedFirst) {
  constexpr char kUir[] = R"(%0 = buffer 4 : dtype=f32 slot=0 device=CPU:0
%1 = flip %0 : axes=0
%2 = add %0, %1
%3 = assign %0, %2
%4 = sink %3
)";
  const UOp g = *ParseUir(kUir);
  std::map<std::string, UOp> after = AfterEachPass({g.src().begin(), g.src().end()});
  const UOp& order = after["kernel_order"];
  ASSERT_EQ(order.src(0).src().size(), 2u);
  EXPECT_TRUE(order.src(0).src(0).is(Ops::STAGE));
  EXPECT_TRUE(order.src(0).src(1).is(Ops::ASSIGN));
  // and the flip read in place would be wrong: the kernels compute x + flip(x) of the old x
}

// A write through a permuted view of the whole buffer (a KV cache's keys stored
// channel-major, written a row at a time) whose value reads that same view only where it
// writes is computed in place; one that reads the buffer through another view is staged.
TEST(Pipeline, AWriteThroughAPermutedViewReadingItInPlaceIsNotStaged) {
  auto kernels = [](const char* read_view) {
    const std::string uir = std::string(R"(%0 = buffer 6 : dtype=f32 slot=0 device=CPU:0
%1 = reshape %0, 2, 3
%2 = permute %1 : axes=1,0
)") + "%3 = " + read_view + R"(
%4 = reshape 1.0, 1, 1
%5 = expand %4, 3, 2
%6 = add %3, %5
%7 = assign %2, %6
%8 = sink %7
)";
    const UOp g = *ParseUir(uir);
    const UOp order = AfterEachPass({g.src().begin(), g.src().end()})["kernel_order"];
    return std::make_pair(order.src(0).src().size(), order.src(0).src(0).op());
  };
  EXPECT_EQ(kernels("permute %1 : axes=1,0"), std::make_pair(size_t{1}, Ops::ASSIGN));  // (%2)
  const auto [n, first] = kernels("reshape %0, 3, 2");  // (the buffer as it lies: others)
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(first, Ops::STAGE);
}

// The lowered graph's kernels (its steps that are kernels).
std::vector<UOp> KernelsOf(const UOp& lowered) {
  std::vector<UOp> kernels;
  for (const UOp& step : lowered.src(0).src())
    if (step.is(Ops::SINK)) kernels.push_back(step);
  return kernels;
}

// The target's passes: on a CPU, a kernel with the work for it has its outer loop given to
// the cores (a global range of that loop's length) and a small one stays on one; on a GPU,
// its outputs go to blocks of 256 threads. Each is the other target's no-op, each leaves
// a mapped kernel as it is (a backend may run it again: it gets the same dims), and neither
// maps a kernel for a backend that maps its own (a plugin older than ABI 1.5).
TEST(Pipeline, TheTargetsPassesMapTheLaunchLast) {
  const UOp big = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, 1024 * 512), {1024, 512});
  const UOp small = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 1, 64), {8, 8});
  const std::vector<UOp> roots{big + big, small * small};
  std::map<std::string, UOp> cpu = AfterEachPass(roots);
  EXPECT_EQ(cpu["launch_dims"], cpu["thread_outer_loop"]);
  std::vector<UOp> ks = KernelsOf(cpu["launch_dims"]);
  ASSERT_EQ(ks.size(), 2u);
  std::vector<LaunchDims> dims;
  for (const UOp& k : ks) dims.push_back(LaunchDimsOf(k));
  std::sort(dims.begin(), dims.end(), [](auto& a, auto& b) { return a.global < b.global; });
  EXPECT_EQ(dims[0], LaunchDims{});  // (64 elements: one thread)
  EXPECT_EQ(dims[1].global[0], 1024u);
  EXPECT_EQ(dims[1].local, (std::array<uint32_t, 3>{1, 1, 1}));
  for (const UOp& k : ks) {
    LaunchDims again;
    EXPECT_EQ(*ThreadOuterLoop(k, &again, kMinThreadedWork), k);
    EXPECT_EQ(again, LaunchDimsOf(k));
  }

  PassContext gpu_ctx;
  gpu_ctx.default_target = *ParseTarget("class=gpu arch=sm_90");
  std::map<std::string, UOp> gpu = AfterEachPass(roots, gpu_ctx);
  EXPECT_EQ(gpu["thread_outer_loop"], gpu["number_loops"]);
  ks = KernelsOf(gpu["launch_dims"]);
  ASSERT_EQ(ks.size(), 2u);
  for (const UOp& k : ks) {
    const LaunchDims d = LaunchDimsOf(k);
    EXPECT_TRUE(d.global[0] * d.local[0] == 1024u * 512u || d.global[0] * d.local[0] == 64u)
        << ToUir(k);
    EXPECT_EQ(d.local[0], d.global[0] * d.local[0] == 64u ? 64u : 256u);
    LaunchDims again;
    EXPECT_EQ(*MapToLaunchDims(k, LaunchLimits::For(gpu_ctx.default_target), &again), k);
    EXPECT_EQ(again, d);
  }

  PassContext old_plugin = gpu_ctx;  // (its plugin maps its own)
  old_plugin.maps_launch_of = [](absl::string_view) { return false; };
  std::map<std::string, UOp> plain = AfterEachPass(roots, old_plugin);
  EXPECT_EQ(plain["launch_dims"], plain["number_loops"]);
  old_plugin.default_target = Target::ReferenceCpu();
  plain = AfterEachPass(roots, old_plugin);
  EXPECT_EQ(plain["launch_dims"], plain["number_loops"]);
}

// A loop-level REDUCE reduces over loops: the verifier refuses another source, or axes too.
TEST(Pipeline, TheVerifierChecksALoopLevelReduce) {
  UOp r = UOp::Range(8, 0, RangeKind::kReduce);
  UOp x = UOp::Buffer(DType::kF32, 0, 8).Index(r).Load();
  EXPECT_TRUE(Verify(UOp::Make(Ops::REDUCE, DType::kF32, {x, r}, ReduceArg{Ops::ADD, {}})).ok());
  absl::Status bad = Verify(UOp::Make(Ops::REDUCE, DType::kF32, {x, x}, ReduceArg{Ops::ADD, {}}));
  EXPECT_NE(bad.message().find("reducing over a load"), std::string::npos) << bad;
  EXPECT_FALSE(Verify(UOp::Make(Ops::REDUCE, DType::kF32, {x, r}, ReduceArg{Ops::ADD, {0}})).ok());
}

// Indexing: each movement op maps its output's index to its source's; a PAD says where.
TEST(Indexing, EachMovementOpMapsTheIndexOnce) {
  UOp b = UOp::Buffer(DType::kF32, 0, 12);
  UOp x = Dims(Ops::RESHAPE, b, {3, 4});
  UOp padded = Dims(Ops::PAD, x, {1, 0, 0, 2});  // (5, 6)... rows 1 before, cols 2 after
  UOp flipped = UOp::Derived(Ops::FLIP, {x}, Axes{{1}});
  UOp permuted = UOp::Derived(Ops::PERMUTE, {x}, Axes{{1, 0}});
  ShapeMap shapes = *InferShapes(UOp::Sink({padded, flipped, permuted}));
  const Index at{UOp::Int(2), UOp::Int(3)};
  auto value = [](const UOp& u) { return u.ConstIntValue(); };
  SourceIndex p = IndexThrough(padded, {UOp::Int(0), UOp::Int(1)}, shapes);
  ASSERT_TRUE(p.valid);
  EXPECT_EQ(ToUir(Simplify(p.valid)), ToUir(UOp::ConstBool(DType::kBool, false)));
  EXPECT_EQ(value(Simplify(p.index[0])), 0);  // clamped: the load stays in bounds
  SourceIndex in = IndexThrough(padded, at, shapes);
  EXPECT_EQ(ToUir(Simplify(in.valid)), ToUir(UOp::ConstBool(DType::kBool, true)));
  EXPECT_EQ(value(Simplify(in.index[0])), 1);
  EXPECT_EQ(value(Simplify(in.index[1])), 3);
  EXPECT_EQ(value(Simplify(IndexThrough(flipped, at, shapes).index[1])), 0);
  SourceIndex t = IndexThrough(permuted, {UOp::Int(3), UOp::Int(2)}, shapes);
  EXPECT_FALSE(t.valid);
  EXPECT_EQ(value(t.index[0]), 2);
  EXPECT_EQ(value(t.index[1]), 3);
  SourceIndex flat = IndexThrough(x, at, shapes);  // (3, 4) from 12: element 11
  EXPECT_EQ(value(Simplify(flat.index[0])), 11);
}

}  // namespace
}  // namespace uopc
