// Kernelize and rangeify on tensor graphs, read as UIR and as plans.
#include <cmath>
#include <random>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "core/interpreter.h"
#include "core/opt.h"
#include "core/symbolic/simplify.h"
#include "core/uir.h"
#include "passes/copy_rules.h"
#include "passes/kernelize.h"
#include "passes/layout_copies.h"
#include "passes/linearize.h"
#include "passes/pipeline.h"
#include "runtime/plan_cache.h"

namespace uopc {
namespace {

// The pipeline's passes up to kernelize: copy rules, layout copies, the realize map.
absl::StatusOr<UOp> KernelizeAll(const UOp& g) {
  absl::StatusOr<UOp> c = CopyRules(g);
  if (c.ok()) c = LayoutCopies(*c);
  return c.ok() ? Kernelize(*c) : c;
}

UOp Dims(Ops op, UOp x, std::vector<int64_t> dims) {
  std::vector<UOp> src{x};
  for (int64_t d : dims) src.push_back(UOp::Int(d));
  return UOp::Derived(op, src);
}

// x: (rows, cols) from a flat input buffer
UOp Matrix(int slot, int64_t rows, int64_t cols) {
  return Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, slot, rows * cols), {rows, cols});
}

Plan LowerPlan(const std::vector<UOp>& roots, const PassContext& ctx = {}) {
  CanonicalGraph g = Canonicalize(UOp::Sink(roots));
  PassManager pm = LoweringPipeline();
  pm.set_verify(true);
  absl::StatusOr<Plan> p = Lower(g.sink, static_cast<int>(g.inputs.size()), pm, ctx);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Plan{};
}
Plan LowerPlan(const UOp& root) { return LowerPlan(std::vector<UOp>{root}); }

TEST(Kernelize, StagesTheRootsAndTheReducesThatAreBroadcastBack) {
  UOp x = Matrix(0, 4, 8);
  UOp m = UOp::Derived(Ops::REDUCE, {x}, ReduceArg{Ops::MAX, {1}});
  UOp shifted =
      x + UOp::Make(Ops::MUL, DType::kF32,
                    {Dims(Ops::EXPAND, m, {4, 8}),
                     Dims(Ops::EXPAND, Dims(Ops::RESHAPE, UOp::Const(DType::kF32, -1.0), {1, 1}),
                          {4, 8})});
  UOp sum = UOp::Derived(Ops::REDUCE, {shifted}, ReduceArg{Ops::ADD, {1}});  // not broadcast: fused
  absl::StatusOr<UOp> k = KernelizeAll(UOp::Sink({sum}));
  ASSERT_TRUE(k.ok());
  int stages = 0;
  for (const UOp& u : k->Toposort()) stages += u.is(Ops::STAGE);
  EXPECT_EQ(stages, 2);  // the root, and the max that is broadcast back
  EXPECT_TRUE(k->src(0).is(Ops::STAGE));
}

// Devices: a computation on CPU:0 copied to CPU:1 and used there.
constexpr char kTwoDevices[] = R"(%0 = buffer 4 : dtype=f32 slot=0 device=CPU:0
%1 = reshape 2.0, 1
%2 = expand %1, 4
%3 = mul %0, %2
%4 = copy %3 : device=CPU:1
%5 = add %4, %2
%6 = stage %5 : device=CPU:1
%7 = sink %6
)";

TEST(Kernelize, CutsAtEveryCopy) {
  UOp g = *ParseUir(kTwoDevices);
  absl::StatusOr<UOp> k = KernelizeAll(g);
  ASSERT_TRUE(k.ok()) << k.status();
  // the copied computation is staged on its device, the copy on its target
  EXPECT_EQ(ToUir(*k), R"(%0 = buffer 4 : dtype=f32 slot=0 device=CPU:0
%1 = reshape 2.0, 1
%2 = expand %1, 4
%3 = mul %0, %2
%4 = stage %3 : device=CPU:0
%5 = copy %4 : device=CPU:1
%6 = stage %5 : device=CPU:1
%7 = add %6, %2
%8 = stage %7 : device=CPU:1
%9 = sink %8
)");
}

TEST(Kernelize, CopiesOfConstantsAndOfBuffersAsTheyLie) {
  // a COPY of a constant is the constant computed there; a COPY to where the value is, none
  UOp c = *ParseUir("%0 = reshape 2.0, 1\n%1 = expand %0, 4\n%2 = copy %1 : device=CPU:1\n"
                    "%3 = copy %2 : device=CPU:1\n%4 = stage %3 : device=CPU:1\n%5 = sink %4\n");
  EXPECT_EQ(ToUir(*KernelizeAll(c)),
            "%0 = reshape 2.0, 1\n%1 = expand %0, 4\n%2 = stage %1 : device=CPU:1\n%3 = sink %2\n");
  // a reshaped buffer moves as it lies: no kernel before the copy
  UOp b = *ParseUir(
      "%0 = buffer 6 : dtype=f32 slot=0 device=CPU:0\n%1 = reshape %0, 2, 3\n"
      "%2 = copy %1 : device=CPU:1\n%3 = stage %2 : device=CPU:1\n%4 = sink %3\n");
  EXPECT_EQ(ToUir(*KernelizeAll(b)),
            "%0 = buffer 6 : dtype=f32 slot=0 device=CPU:0\n%1 = copy %0 : device=CPU:1\n"
            "%2 = stage %1 : device=CPU:1\n%3 = reshape %2, 2, 3\n%4 = stage %3 : device=CPU:1\n"
            "%5 = sink %4\n");
}

TEST(Kernelize, ARootThatIsAlsoCopiedIsStagedOnce) {
  // y = x * 2 is realized, and copied to CPU:1 in the same plan
  UOp g = *ParseUir(
      "%0 = buffer 4 : dtype=f32 slot=0 device=CPU:0\n%1 = reshape 2.0, 1\n%2 = expand %1, 4\n"
      "%3 = mul %0, %2\n%4 = stage %3 : device=CPU:0\n%5 = copy %3 : device=CPU:1\n"
      "%6 = stage %5 : device=CPU:1\n%7 = sink %4, %6\n");
  absl::StatusOr<UOp> k = KernelizeAll(g);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(ToUir(*k),
            "%0 = buffer 4 : dtype=f32 slot=0 device=CPU:0\n%1 = reshape 2.0, 1\n"
            "%2 = expand %1, 4\n%3 = mul %0, %2\n%4 = stage %3 : device=CPU:0\n"
            "%5 = copy %4 : device=CPU:1\n%6 = stage %5 : device=CPU:1\n%7 = sink %4, %6\n");
  CanonicalGraph c = Canonicalize(g);
  PassManager pm = LoweringPipeline();
  absl::StatusOr<Plan> p = Lower(c.sink, static_cast<int>(c.inputs.size()), pm);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kernels().size(), 1u);
  EXPECT_EQ(p->copies().size(), 1u);
}

TEST(Kernelize, RefusesAStageOfAValueOnAnotherDevice) {
  UOp g = *ParseUir("%0 = buffer 4 : dtype=f32 slot=0 device=CPU:0\n"
                    "%1 = stage %0 : device=CPU:1\n%2 = sink %1\n");
  EXPECT_EQ(KernelizeAll(g).status().message(),
            "kernelize: a STAGE on CPU:1 of a value on CPU:0; COPY it there first");
  UOp mixed = *ParseUir("%0 = buffer 4 : dtype=f32 slot=0 device=CPU:0\n"
                        "%1 = buffer 4 : dtype=f32 slot=1 device=CPU:1\n%2 = add %0, %1\n"
                        "%3 = sink %2\n");
  EXPECT_EQ(KernelizeAll(mixed).status().message(),
            "add: sources on CPU:0 and CPU:1; only a COPY moves data between devices");
}

// A COLLECTIVE is a step of its own between the kernels that make and read its value, on
// its value's device; an identity (f's forward) or a group of one rank is no step at all.
TEST(Plan, ACollectiveIsAStepBetweenKernels) {
  const std::string text =
      "%0 = buffer 8 : dtype=f32 slot=0 device=CPU:0\n%1 = add %0, %0\n"
      "%2 = collective %1 : kind=all_gather grad=reduce_scatter op=add group=1 size=2\n"
      "%3 = mul %2, %2\n%4 = sink %3\n";
  auto lower = [](const std::string& uir) {
    CanonicalGraph c = Canonicalize(*ParseUir(uir));
    PassManager pm = LoweringPipeline();
    pm.set_verify(true);
    return Lower(c.sink, static_cast<int>(c.inputs.size()), pm);
  };
  absl::StatusOr<Plan> p = lower(text);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->steps.size(), 3u) << PlanString(*p);
  const auto* c = std::get_if<Plan::Collective>(&p->steps[1].op);
  ASSERT_NE(c, nullptr) << PlanString(*p);
  EXPECT_EQ(c->count, 8);
  EXPECT_EQ(p->buffers[c->dst].count, 16);
  EXPECT_EQ(p->steps[1].device, "CPU:0");
  EXPECT_NE(PlanString(*p).find("(2 kernels, 0 copies, 1 collectives)"), std::string::npos);
  EXPECT_NE(PlanString(*p).find("   1 all_gather on CPU:0  group 1 of 2  32 B\n"),
            std::string::npos)
      << PlanString(*p);
  for (const char* gone : {"kind=identity grad=all_reduce op=add group=1 size=2",
                           "kind=all_reduce grad=all_reduce op=add group=1 size=1"}) {
    const std::string was = "kind=all_gather grad=reduce_scatter op=add group=1 size=2";
    std::string t = text;
    t.replace(t.find(was), was.size(), gone);
    absl::StatusOr<Plan> q = lower(t);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(q->steps.size(), 1u) << gone << "\n" << PlanString(*q);
  }
}

// A collective is placed as soon as its value is made, ahead of kernels that were ready
// before it (they run while it is in flight): DDP's buckets, started during the backward.
TEST(Plan, ACollectiveStartsAsSoonAsItsValueIsMade) {
  const std::string text =
      "%0 = buffer 8 : dtype=f32 slot=0 device=CPU:0\n"
      "%1 = add %0, %0\n%2 = stage %1 : device=CPU:0\n"  // A
      "%3 = mul %0, %0\n%4 = stage %3 : device=CPU:0\n"  // B1
      "%5 = add %4, %4\n%6 = stage %5 : device=CPU:0\n"  // B2, after B1
      "%7 = collective %2 : kind=all_reduce grad=all_reduce op=add group=1 size=2\n"
      "%8 = sink %2, %6, %7\n";
  CanonicalGraph c = Canonicalize(*ParseUir(text));
  PassManager pm = LoweringPipeline();
  absl::StatusOr<Plan> p = Lower(c.sink, static_cast<int>(c.inputs.size()), pm);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->steps.size(), 4u) << PlanString(*p);
  EXPECT_TRUE(std::holds_alternative<Plan::Kernel>(p->steps[0].op)) << PlanString(*p);
  EXPECT_TRUE(std::holds_alternative<Plan::Collective>(p->steps[1].op)) << PlanString(*p);
}

TEST(Plan, ACopyIsAStepBetweenTheKernelsOfTwoDevices) {
  UOp g = *ParseUir(kTwoDevices);
  CanonicalGraph c = Canonicalize(g);
  PassManager pm = LoweringPipeline();
  pm.set_verify(true);
  absl::StatusOr<Plan> p = Lower(c.sink, static_cast<int>(c.inputs.size()), pm);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->steps.size(), 3u);
  EXPECT_EQ(p->steps[0].device, "CPU:0");
  EXPECT_EQ(p->steps[1].device, "CPU:1");
  EXPECT_EQ(p->steps[2].device, "CPU:1");
  ASSERT_EQ(p->copies().size(), 1u);
  const Plan::Copy& copy = *p->copies()[0];
  EXPECT_EQ(p->buffers[copy.src].device, "CPU:0");
  EXPECT_EQ(p->buffers[copy.dst].device, "CPU:1");
  EXPECT_EQ(copy.bytes, 16u);
  EXPECT_EQ(p->buffers[p->outputs[0]].device, "CPU:1");
  std::string text = PlanString(*p);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "plan of 3 steps (2 kernels, 1 copies), 4 buffers (64 B)");
  EXPECT_NE(text.find("   1 copy   CPU:0 -> CPU:1  16 B\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" on CPU:1  2 buffers, writes 16 B\n"), std::string::npos) << text;
}

TEST(PlanCache, KeysOnDevices) {
  UOp g = *ParseUir(kTwoDevices);
  std::string other(kTwoDevices);
  for (size_t at; (at = other.find("CPU:1")) != std::string::npos;) other.replace(at, 5, "CPU:2");
  EXPECT_NE(Canonicalize(g).sink, Canonicalize(*ParseUir(other)).sink);
}

// The loops and stores of a linearized kernel, indented by depth.
std::string LoopShape(const std::vector<UOp>& prog) {
  std::string shape;
  int depth = 0;
  for (const UOp& u : prog) {
    if (u.is(Ops::END)) depth -= static_cast<int>(u.src().size()) - 1;
    if (u.is(Ops::RANGE)) shape += std::string(depth, ' ') + "range\n", ++depth;
    if (u.is(Ops::STORE)) shape += std::string(depth, ' ') + "store\n";
  }
  return shape;
}

// An (m x k) @ (k x n) matmul: summed over axis 1 of (m, k, n) and reshaped, or, with
// `transposed` (b given as n x k, as a backward pass builds a @ b^T), summed over the last
// axis of (m, n, k) and kept as a dim of 1.
UOp Matmul(int m, int k, int n, bool transposed) {
  UOp a = Matrix(0, m, k), b = transposed ? Matrix(1, n, k) : Matrix(1, k, n);
  std::vector<int64_t> full =
      transposed ? std::vector<int64_t>{m, n, k} : std::vector<int64_t>{m, k, n};
  std::vector<int64_t> as =
      transposed ? std::vector<int64_t>{m, 1, k} : std::vector<int64_t>{m, k, 1};
  std::vector<int64_t> bs =
      transposed ? std::vector<int64_t>{1, n, k} : std::vector<int64_t>{1, k, n};
  UOp prod = UOp::Derived(Ops::MUL, {Dims(Ops::EXPAND, Dims(Ops::RESHAPE, a, as), full),
                                     Dims(Ops::EXPAND, Dims(Ops::RESHAPE, b, bs), full)});
  UOp sum = UOp::Derived(Ops::REDUCE, {prod}, ReduceArg{Ops::ADD, {transposed ? 2 : 1}});
  return transposed ? sum : Dims(Ops::RESHAPE, sum, {m, n});
}

// The one kernel of Matmul(...), linearized.
std::vector<UOp> MatmulKernel(int m, int k, int n, bool transposed) {
  Plan p = LowerPlan(Matmul(m, k, n, transposed));
  EXPECT_EQ(p.kernels().size(), 1u);
  return *Linearize(p.kernels()[0]->ast);
}

// Runs `prog` (from MatmulKernel) under the reference interpreter: every output equals the
// sum over k in order, bit for bit (each step a * b + s rounded once: the reference target
// fuses multiply-add).
void ExpectExactMatmul(const std::vector<UOp>& prog, int m, int k, int n, bool transposed) {
  std::vector<float> av(m * k), bv(k * n), out(m * n, -1);
  for (int i = 0; i < m * k; ++i) av[i] = static_cast<float>(i % 9) * 0.7f - 1;
  for (int i = 0; i < k * n; ++i) bv[i] = static_cast<float>(i % 13) * 0.3f - 1;
  ASSERT_TRUE(Interpret(prog, {{av.data(), DType::kF32, m * k},
                               {bv.data(), DType::kF32, k * n},
                               {out.data(), DType::kF32, m * n}})
                  .ok());
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float s = 0;
      for (int x = 0; x < k; ++x)
        s = std::fma(av[i * k + x], transposed ? bv[j * k + x] : bv[x * n + j], s);
      ASSERT_EQ(out[i * n + j], s) << i << ", " << j;
    }
}

// The layout copies are a CPU target's: b with rows 4 KiB apart (1024 floats: the L1's set
// stride) is read from a padded copy, and a @ b^T reads transposed copies; for a GPU
// target the matmul is one kernel whose threads each sum one output over k (no tile).
TEST(LayoutCopies, OnlyForCpuTargets) {
  PassContext gpu;
  gpu.default_target = Target::ReferenceGpu();
  EXPECT_EQ(LowerPlan({Matmul(64, 64, 1024, false)}).kernels().size(), 2u);
  EXPECT_EQ(LowerPlan({Matmul(64, 32, 64, true)}).kernels().size(), 3u);  // (a and b both)
  PassContext other_l1;  // a 64 KiB 8-way L1: 16 rows 4 KiB apart fit its ways, 64 do not
  ASSERT_TRUE((other_l1.default_target = *ParseTarget("class=cpu l1d=64K/8")).IsCpu());
  EXPECT_EQ(LowerPlan({Matmul(64, 16, 1024, false)}, other_l1).kernels().size(), 1u);
  EXPECT_GT(LowerPlan({Matmul(64, 64, 1024, false)}, other_l1).kernels().size(), 1u);
  EXPECT_GT(LowerPlan({Matmul(64, 64, 2048, false)}, other_l1).kernels().size(), 1u);
  for (bool transposed : {false, true}) {
    Plan p = LowerPlan({Matmul(64, 32, transposed ? 64 : 1024, transposed)}, gpu);
    ASSERT_EQ(p.kernels().size(), 1u);
    std::vector<UOp> prog = *Linearize(p.kernels()[0]->ast);
    // per output: its accumulator set, the loop over k, the store
    EXPECT_EQ(LoopShape(prog), "range\n range\n  store\n  range\n   store\n  store\n")
        << transposed;
  }
}

// Runs the two kernels of a split sum of `in` to a scalar in the interpreter: the partial
// results into `parts` (its length theirs), the total into `out`.
bool InterpretSplitSum(const Plan& p, std::vector<float>& in, std::vector<float>* parts,
                       std::vector<float>* out) {
  const int64_t n = static_cast<int64_t>(parts->size());
  std::vector<BufferRef> bufs = {{in.data(), DType::kF32, static_cast<int64_t>(in.size())},
                                 {parts->data(), DType::kF32, n},
                                 {out->data(), DType::kF32, 1}};
  for (const Plan::Kernel* k : p.kernels()) {
    std::vector<BufferRef> at;
    for (int b : k->buffers) at.push_back(bufs[b < 1 ? 0 : p.buffers[b].count == n ? 1 : 2]);
    if (!Interpret(*Linearize(k->ast), at).ok()) return false;
  }
  return true;
}

// On a GPU target a sum of 66,560 elements to a scalar is two kernels: 260 partial sums of
// 256 elements, each a thread's, then their sum; on a CPU target, one kernel.
TEST(SplitReduces, ALongSumIsSplitForAGpu) {
  UOp x = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, 66560), {1024, 65});
  UOp sum = UOp::Derived(Ops::REDUCE, {x}, ReduceArg{Ops::ADD, {0, 1}});
  PassContext gpu;
  gpu.default_target = Target::ReferenceGpu();
  EXPECT_EQ(LowerPlan({sum}).kernels().size(), 1u);
  Plan p = LowerPlan({sum}, gpu);
  ASSERT_EQ(p.kernels().size(), 2u);
  std::vector<float> in(66560), parts(260, 0), out(1, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 7) - 3;  // sums to -3
  ASSERT_TRUE(InterpretSplitSum(p, in, &parts, &out));
  double want = 0;
  for (float v : in) want += v;
  EXPECT_EQ(out[0], static_cast<float>(want));  // (small integers: exact in any order)
}

// On a CPU target a sum of 2^18 elements to a scalar (a gradient's norm) is two kernels: the
// 256 columns of its elements as 1,024 rows of 256, each column summed in order (vectors'
// lanes and threads' shares, where one chain of adds ran on one core), then the columns.
// A sum with many outputs is one kernel.
TEST(SplitReduces, ALongSumToAScalarIsSplitIntoColumnsForACpu) {
  const int64_t n = int64_t{1} << 18;
  UOp x = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, n), {512, 512});
  Plan p = LowerPlan({UOp::Derived(Ops::REDUCE, {x}, ReduceArg{Ops::ADD, {0, 1}})});
  ASSERT_EQ(p.kernels().size(), 2u);
  EXPECT_EQ(LowerPlan({UOp::Derived(Ops::REDUCE, {x}, ReduceArg{Ops::ADD, {1}})}).kernels().size(),
            1u);
  std::vector<float> in(n), parts(256, 0), out(1, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 7) - 3;
  ASSERT_TRUE(InterpretSplitSum(p, in, &parts, &out));
  double want = 0;
  for (int64_t c = 0; c < 256; ++c) {
    float column = 0;  // (small integers: exact in any order)
    for (int64_t r = 0; r < 1024; ++r) column += in[r * 256 + c];
    EXPECT_EQ(parts[c], column) << "column " << c;
    want += column;
  }
  EXPECT_EQ(out[0], static_cast<float>(want));
}

TEST(Rangeify, MatmulIsOneKernelThatReducesARowOfAccumulatorsAtOnce) {
  std::vector<UOp> prog = MatmulKernel(4, 8, 3, false);
  // for each row: reset a row of accumulators; for k: for each column: accumulate; store the row
  EXPECT_EQ(LoopShape(prog),
            "range\n range\n  store\n range\n  range\n   store\n range\n  store\n");
  ExpectExactMatmul(prog, 4, 8, 3, false);  // and the numbers are right
}

// a @ b^T as a backward pass builds it: a sum over the last axis, kept as a dim of 1, of
// operands that both run along it. Each sum reads its rows in memory order, a few sums at
// once (4 or 2 where they divide the columns); with 3 rows of b, one at a time: for each
// output, reset its accumulator, accumulate along k, store it.
TEST(Rangeify, MatmulByATransposeReducingTheLastAxisSumsAlongMemory) {
  std::vector<UOp> prog = MatmulKernel(4, 8, 3, true);
  EXPECT_EQ(LoopShape(prog), "range\n range\n  store\n  range\n   store\n  store\n");
  ExpectExactMatmul(prog, 4, 8, 3, true);
}

// With 16 rows of b or more (dY @ W^T in a backward pass), kernelize reads b from a
// transposed copy, a kernel of its own: the matmul then runs along contiguous rows of the
// copy as a plain matmul does. The sums keep their order: bit for bit the same.
// A value that a matmul broadcasts (through a RESHAPE) and a sum reads as it is (a bias
// gradient of the same gradient): materialized once, and the sum reads it, not computing it
// again.
TEST(Kernelize, AValueAMatmulBroadcastsIsComputedOnceForItsOtherUsers) {
  UOp x = Matrix(0, 8, 4), w = Matrix(1, 4, 3);
  UOp g = UOp::Derived(Ops::EXP2, {x}) * x + UOp::Derived(Ops::SQRT, {x});  // (8, 4)
  UOp prod =
      UOp::Derived(Ops::MUL, {Dims(Ops::EXPAND, Dims(Ops::RESHAPE, g, {8, 4, 1}), {8, 4, 3}),
                              Dims(Ops::EXPAND, Dims(Ops::RESHAPE, w, {1, 4, 3}), {8, 4, 3})});
  UOp mm = UOp::Derived(Ops::REDUCE, {prod}, ReduceArg{Ops::ADD, {1}});
  UOp bias = UOp::Derived(Ops::REDUCE, {g}, ReduceArg{Ops::ADD, {0}});
  CanonicalGraph c = Canonicalize(UOp::Sink({mm, bias}));
  PassManager pm = LoweringPipeline();
  absl::StatusOr<Plan> p = Lower(c.sink, static_cast<int>(c.inputs.size()), pm);
  ASSERT_TRUE(p.ok()) << p.status();
  int computes = 0;
  for (const Plan::Kernel* k : p->kernels())
    for (const UOp& u : k->ast.Toposort()) computes += u.is(Ops::EXP2);
  EXPECT_EQ(computes, 1) << PlanString(*p);
}

// The plan's kernels run in order under the reference interpreter, each buffer a host
// array: inputs from `inputs` (the rest -1); every buffer after the run.
std::vector<std::vector<float>> RunPlan(const Plan& p,
                                        const std::vector<std::vector<float>>& inputs) {
  std::vector<std::vector<float>> bufs;
  for (size_t b = 0; b < p.buffers.size(); ++b)
    bufs.push_back(b < inputs.size() ? inputs[b] : std::vector<float>(p.buffers[b].count, -1));
  for (const Plan::Kernel* kernel : p.kernels()) {
    std::vector<UOp> prog = *Linearize(kernel->ast);
    std::vector<BufferRef> at;
    for (int b : kernel->buffers) at.push_back({bufs[b].data(), DType::kF32, p.buffers[b].count});
    absl::Status s = Interpret(prog, at);
    EXPECT_TRUE(s.ok()) << s;
  }
  return bufs;
}

// Runs the two kernels of `p`, a copy of b (n x k) transposed and an (m x k) @ b^T that
// reads it, under the reference interpreter: the matmul has a plain matmul's loops over
// (k, n), and every output is the sum over k in order, bit for bit (fused, as the reference
// target does).
void ExpectTransposedCopyAndMatmul(const Plan& p, int m, int k, int n) {
  ASSERT_EQ(p.kernels().size(), 2u);
  std::vector<float> a(m * k), b(n * k);
  for (int i = 0; i < m * k; ++i) a[i] = static_cast<float>(i % 9) * 0.7f - 1;
  for (int i = 0; i < n * k; ++i) b[i] = static_cast<float>(i % 13) * 0.3f - 1;
  const std::vector<std::vector<float>> bufs = RunPlan(p, {a, b});
  EXPECT_EQ(LoopShape(*Linearize(p.kernels()[1]->ast)), LoopShape(MatmulKernel(m, k, n, false)));
  const std::vector<float>& out = bufs[p.outputs[0]];
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float s = 0;
      for (int x = 0; x < k; ++x) s = std::fma(bufs[0][i * k + x], bufs[1][j * k + x], s);
      ASSERT_EQ(out[i * n + j], s) << i << ", " << j;
    }
}

// A weight's gradient, a sum over a batch's and a sequence's tokens (4 x 32) of x (.., m)
// times dy (.., 64): with m = 512, x's rows lie 2 KiB apart, so the sum reads x from a copy
// packed in panels of the register tile's 8 rows, (64, 128, 8) (a kernel of its own); dy's
// rows, 256 B apart, as they are. The sums keep their order: the bits of the plain loop.
// With m = 128 (rows 512 B apart) nothing is copied.
TEST(LayoutCopies, AWeightGradientReadsRowsFarApartFromPackedPanels) {
  const int b = 4, t = 32, n = 64;
  auto gradient = [&](int m) {
    UOp x = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, b * t * m), {b, t, m, 1});
    UOp dy = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 1, b * t * n), {b, t, 1, n});
    UOp prod = Dims(Ops::EXPAND, x, {b, t, m, n}) * Dims(Ops::EXPAND, dy, {b, t, m, n});
    return Dims(Ops::RESHAPE, UOp::Derived(Ops::REDUCE, {prod}, ReduceArg{Ops::ADD, {0, 1}}),
                {m, n});
  };
  EXPECT_EQ(LowerPlan(gradient(128)).kernels().size(), 1u);
  const int m = 512;
  const Plan p = LowerPlan(gradient(m));
  ASSERT_EQ(p.kernels().size(), 2u);
  std::vector<float> x(b * t * m), dy(b * t * n);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i);
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = std::cos(0.11f * i);
  const std::vector<float> out = RunPlan(p, {x, dy})[p.outputs[0]];
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float s = 0;
      for (int k = 0; k < b * t; ++k) s = std::fma(x[k * m + i], dy[k * n + j], s);
      ASSERT_EQ(out[i * n + j], s) << i << ", " << j;
    }
}

// Runs matmul plan `p` of x (rows, k) and w ((k, n), or (n, k) where `w_transposed`) on
// fixed values, and expects each output to be the plain loop's sum, bit for bit.
void ExpectPlainLoopSums(const Plan& p, int rows, int k, int n, bool w_transposed) {
  std::vector<float> x(rows * k), w(k * n);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.11f * i);
  const std::vector<float> out = RunPlan(p, {x, w})[p.outputs[0]];
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < n; ++j) {
      float s = 0;
      for (int kk = 0; kk < k; ++kk)
        s = std::fma(x[i * k + kk], w_transposed ? w[j * k + kk] : w[kk * n + j], s);
      ASSERT_EQ(out[i * n + j], s) << i << ", " << j;
    }
}

// x @ w with w a (256, 1024) buffer: its panels of the 8 x 32 register tile's 32 columns
// span 256 rows 4 KiB apart, 2 MiB together with w, more than the reference CPU's 1 MiB L2:
// w is read from a copy packed in panels, (32, 256, 32) (a kernel of its own). The sums keep
// their order: the bits of the plain loop. A (64, 512) w stays as it is.
TEST(LayoutCopies, AMatmulReadsALargeOperandFromPackedColumnPanels) {
  auto matmul = [](int m, int k, int n) {
    UOp x = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, m * k), {m, k, 1});
    UOp w = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 1, k * n), {1, k, n});
    UOp prod = Dims(Ops::EXPAND, x, {m, k, n}) * Dims(Ops::EXPAND, w, {m, k, n});
    return Dims(Ops::RESHAPE, UOp::Derived(Ops::REDUCE, {prod}, ReduceArg{Ops::ADD, {1}}), {m, n});
  };
  EXPECT_EQ(LowerPlan(matmul(16, 64, 512)).kernels().size(), 1u);
  EXPECT_EQ(LowerPlan(matmul(16, 64, 1024)).kernels().size(), 2u);  // (padded rows: 4 KiB apart)
  const int m = 16, k = 256, n = 1024;
  const Plan p = LowerPlan(matmul(m, k, n));
  ASSERT_EQ(p.kernels().size(), 2u);
  bool packed = false;  // (the copy: 32 panels of 256 x 32)
  for (const Plan::Kernel* kernel : p.kernels())
    for (const UOp& u : kernel->ast.Toposort())
      packed |= u.is(Ops::RANGE) && u.src(0).ConstIntValue() == n / 32;
  EXPECT_TRUE(packed);
  ExpectPlainLoopSums(p, m, k, n, false);
}

// The same with x of (batch, rows, k), as a GPT's activations are: w is broadcast over the
// batch, whose sequences are more rows of one (batch * rows, n) matmul, and is read from
// packed panels too (before, the batch axis hid the register tile and w was read as it lies).
TEST(LayoutCopies, ABatchedMatmulReadsALargeWeightFromPackedColumnPanels) {
  const int b = 2, m = 8, k = 256, n = 1024;
  UOp x = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, b * m * k), {b, m, k, 1});
  UOp w = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 1, k * n), {1, 1, k, n});
  UOp prod = Dims(Ops::EXPAND, x, {b, m, k, n}) * Dims(Ops::EXPAND, w, {b, m, k, n});
  const Plan p = LowerPlan(
      Dims(Ops::RESHAPE, UOp::Derived(Ops::REDUCE, {prod}, ReduceArg{Ops::ADD, {2}}), {b, m, n}));
  ASSERT_EQ(p.kernels().size(), 2u);
  bool packed = false;
  for (const Plan::Kernel* kernel : p.kernels())
    for (const UOp& u : kernel->ast.Toposort())
      packed |= u.is(Ops::RANGE) && u.src(0).ConstIntValue() == n / 32;
  EXPECT_TRUE(packed);
  ExpectPlainLoopSums(p, b * m, k, n, false);
}

// x @ w^T with w a (1024, 256) buffer (a sum over the last axis, as a GPT's backward
// through a weight): its transposed copy (256, 1024) has rows 4 KiB apart and is larger
// than half the L2, so it is packed in panels of the register tile's 32 columns, (32, 256,
// 32), in the one copy kernel. The sums keep their order: the bits of the plain loop.
TEST(LayoutCopies, AMatmulByALargeTransposedWeightReadsPackedPanels) {
  const int m = 16, k = 256, n = 1024;
  UOp x = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, m * k), {m, 1, k});
  UOp w = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 1, n * k), {1, n, k});
  UOp prod = Dims(Ops::EXPAND, x, {m, n, k}) * Dims(Ops::EXPAND, w, {m, n, k});
  const Plan p = LowerPlan(
      Dims(Ops::RESHAPE, UOp::Derived(Ops::REDUCE, {prod}, ReduceArg{Ops::ADD, {2}}), {m, n}));
  ASSERT_EQ(p.kernels().size(), 2u);
  int copies = 0;  // (the copy: loops over 32 panels of 256 x 32, none over w's 1024 rows)
  for (const Plan::Kernel* kernel : p.kernels()) {
    std::vector<UOp> nodes = kernel->ast.Toposort();
    if (std::any_of(nodes.begin(), nodes.end(), [](const UOp& u) { return u.is(Ops::ALLOC); }))
      continue;  // (the matmul: its sums)
    ++copies;
    for (const UOp& u : nodes)
      if (u.is(Ops::RANGE)) {
        EXPECT_NE(u.src(0).ConstIntValue(), n) << "a loop over w's rows";
      }
  }
  EXPECT_EQ(copies, 1);
  ExpectPlainLoopSums(p, m, k, n, true);
}

// An AVX2 CPU's target (16 registers of 8 floats, a 32 KiB 8-way L1), as an AMD EPYC has.
constexpr char kAvx2[] =
    "class=cpu features=avx,avx2,fma vector_bits=256 registers=16 l1d=32K/8 l2=512K";

// x @ w with w (128, 512), rows 2 KiB apart: a panel of its 128 rows falls in 2 sets of a
// 32 KiB 8-way L1 (16 lines), so w is read from packed panels where 8 or more row tiles
// read it (64 rows: 16 tiles of 4), and as it lies where fewer do (16 rows: 4). The sums
// keep their order: the bits of the plain loop.
TEST(LayoutCopies, AMatmulWhosePanelMissesL1ReadsPackedPanels) {
  PassContext avx2;
  avx2.default_target = *ParseTarget(kAvx2);
  EXPECT_EQ(LowerPlan({Matmul(16, 128, 512, false)}, avx2).kernels().size(), 1u);
  const Plan p = LowerPlan({Matmul(64, 128, 512, false)}, avx2);
  ASSERT_EQ(p.kernels().size(), 2u);
  ExpectPlainLoopSums(p, 64, 128, 512, false);
  // on the reference CPU (48 KiB, 12 ways: 24 lines) too; 16 rows 2 KiB apart fit there
  EXPECT_EQ(LowerPlan({Matmul(64, 128, 512, false)}).kernels().size(), 2u);
  EXPECT_EQ(LowerPlan({Matmul(64, 16, 512, false)}).kernels().size(), 1u);
}

// With AVX2's 16 registers a register tile's rows are an unroll range, which the C renderer
// writes out (left a loop, gcc 12 kept one sum of a 4 x 16 tile in memory); with AVX-512's
// 32 they stay a loop. The same sums, in the same order, either way.
TEST(Rangeify, ARegisterTilesRowsAreWrittenOutWithSixteenRegisters) {
  auto unrolls = [](const std::vector<UOp>& prog) {
    return std::count_if(prog.begin(), prog.end(), [](const UOp& u) {
      return u.is(Ops::RANGE) && u.arg().Get<RangeArg>().kind == RangeKind::kUnroll;
    });
  };
  PassContext avx2;
  avx2.default_target = *ParseTarget(kAvx2);
  const int m = 16, k = 8, n = 64;
  const Plan p = LowerPlan({Matmul(m, k, n, false)}, avx2);
  ASSERT_EQ(p.kernels().size(), 1u);
  const std::vector<UOp> prog = *Linearize(p.kernels()[0]->ast);
  EXPECT_EQ(unrolls(prog), 1);
  ExpectExactMatmul(prog, m, k, n, false);
  EXPECT_EQ(unrolls(MatmulKernel(m, k, n, false)), 0);
}

// An exp2 that three kernels would compute (a softmax's exp: its sum, its output, the
// backward) is computed once, and they read it; one that two would compute (a softmax
// alone) is computed by both.
TEST(Kernelize, AnExpThatThreeKernelsReadIsComputedOnce) {
  UOp x = Matrix(0, 8, 64), e = UOp::Derived(Ops::EXP2, {x});
  auto exps = [](const UOp& root) {
    int n = 0;
    const Plan p = LowerPlan(root);
    for (const Plan::Kernel* k : p.kernels())
      for (const UOp& u : k->ast.Toposort()) n += u.is(Ops::EXP2);
    return n;
  };
  UOp sum = UOp::Derived(Ops::REDUCE, {e}, ReduceArg{Ops::ADD, {1}});
  UOp max = UOp::Derived(Ops::REDUCE, {e}, ReduceArg{Ops::MAX, {1}});
  UOp both =
      UOp::Derived(Ops::ADD, {Dims(Ops::EXPAND, sum, {8, 64}), Dims(Ops::EXPAND, max, {8, 64})});
  EXPECT_EQ(exps(UOp::Derived(Ops::MUL, {e, both})), 1);
  EXPECT_EQ(exps(UOp::Derived(Ops::MUL, {e, Dims(Ops::EXPAND, sum, {8, 64})})), 2);
}

// A sum of four buffers (a residual stream of three blocks' outputs) that two kernels
// read (a layer norm's mean and variance): computed once, and both read it; read by one
// kernel only, it is not materialized.
TEST(Kernelize, AValueOfManyBuffersThatTwoKernelsReadIsComputedOnce) {
  UOp x = Matrix(0, 8, 64) + Matrix(1, 8, 64) + Matrix(2, 8, 64) + Matrix(3, 8, 64);
  UOp sum = UOp::Derived(Ops::REDUCE, {x}, ReduceArg{Ops::ADD, {1}});
  UOp max = UOp::Derived(Ops::REDUCE, {x}, ReduceArg{Ops::MAX, {1}});
  const Plan p = LowerPlan({sum, max});
  std::vector<size_t> reads;
  for (const Plan::Kernel* k : p.kernels()) reads.push_back(k->buffers.size() - k->writes.size());
  EXPECT_EQ(reads, (std::vector<size_t>{4, 1, 1})) << PlanString(p);
  EXPECT_EQ(LowerPlan(sum).kernels().size(), 1u);
}

TEST(Kernelize, MatmulByATransposeOfManyRowsReadsATransposedCopy) {
  ExpectTransposedCopyAndMatmul(LowerPlan(Matmul(4, 8, 32, true)), 4, 8, 32);
}

// x @ W^T as a head with W in PyTorch's (out, in) layout, or tied to an embedding, builds
// it: a sum over the middle axis of (m, k, n) reading W through a transpose, by columns
// along the output's rows. It reads a transposed copy, as above.
TEST(Kernelize, MatmulByATransposedMatrixReadsATransposedCopy) {
  const int m = 4, k = 8, n = 65;
  UOp wt = UOp::Derived(Ops::PERMUTE, {Matrix(1, n, k)}, Axes{{1, 0}});
  UOp prod = UOp::Derived(
      Ops::MUL, {Dims(Ops::EXPAND, Dims(Ops::RESHAPE, Matrix(0, m, k), {m, k, 1}), {m, k, n}),
                 Dims(Ops::EXPAND, Dims(Ops::RESHAPE, wt, {1, k, n}), {m, k, n})});
  UOp sum = UOp::Derived(Ops::REDUCE, {prod}, ReduceArg{Ops::ADD, {1}});
  ExpectTransposedCopyAndMatmul(LowerPlan(Dims(Ops::RESHAPE, sum, {m, n})), m, k, n);
}

// The same with W rounded to bf16 as it is read (autocast's f32 weights): the casts commute
// with the views, so the matmul still reads a transposed copy, through the casts.
TEST(Kernelize, MatmulByATransposeRoundedAsItIsReadReadsATransposedCopy) {
  const int m = 4, k = 8, n = 65;
  UOp wt = UOp::Derived(Ops::PERMUTE, {Matrix(1, n, k)}, Axes{{1, 0}});
  UOp rounded = wt.Cast(DType::kBF16).Cast(DType::kF32);
  UOp prod = UOp::Derived(
      Ops::MUL, {Dims(Ops::EXPAND, Dims(Ops::RESHAPE, Matrix(0, m, k), {m, k, 1}), {m, k, n}),
                 Dims(Ops::EXPAND, Dims(Ops::RESHAPE, rounded, {1, k, n}), {m, k, n})});
  UOp sum = UOp::Derived(Ops::REDUCE, {prod}, ReduceArg{Ops::ADD, {1}});
  const Plan p = LowerPlan(Dims(Ops::RESHAPE, sum, {m, n}));
  ASSERT_EQ(p.kernels().size(), 2u) << PlanString(p);  // the copy, then the matmul
  EXPECT_EQ(LoopShape(*Linearize(p.kernels()[1]->ast)), LoopShape(MatmulKernel(m, k, n, false)));
}

// With more rows than a tile (4), the rows come in tiles whose rows of sums are computed
// together: each value of b read once per tile. The same sums, in the same order.
TEST(Rangeify, MatmulRowsComeInTilesOfFour) {
  std::vector<UOp> prog = MatmulKernel(8, 8, 3, false);
  // for each tile: reset its rows of sums; for k: for each column: for each row of the tile;
  // then for each row of the tile, store its row
  EXPECT_EQ(LoopShape(prog),
            "range\n range\n  store\n range\n  range\n   range\n    store\n range\n  range\n"
            "   store\n");
  ExpectExactMatmul(prog, 8, 8, 3, false);
}

// Rows longer than a row of sums may be (512) come in blocks of columns, each block's sums
// computed as a row: the same sums, in the same order.
TEST(Rangeify, MatmulColumnsPast512ComeInBlocks) {
  std::vector<UOp> prog = MatmulKernel(2, 8, 1024, false);
  // rows, blocks of 512 columns: reset, accumulate across the block, store it
  EXPECT_EQ(LoopShape(prog),
            "range\n range\n  range\n   store\n  range\n   range\n    store\n  range\n   store\n");
  ExpectExactMatmul(prog, 2, 8, 1024, false);
}

// Rows and columns that a register tile (8 x 32 here) divides: blocks of the tile's columns
// outermost, then tiles of rows; each tile's sums reset, accumulated over k row by row (each
// row's columns innermost, as gcc keeps them in registers), then stored. The same sums, in
// the same order.
TEST(Rangeify, MatmulOutputsComeInRegisterTiles) {
  std::vector<UOp> prog = MatmulKernel(16, 8, 64, false);
  EXPECT_EQ(LoopShape(prog),
            "range\n range\n  range\n   store\n  range\n   range\n    range\n     store\n"
            "  range\n   range\n    store\n");
  ExpectExactMatmul(prog, 16, 8, 64, false);
  // one tile: no loops over blocks or tiles
  prog = MatmulKernel(8, 8, 32, false);
  EXPECT_EQ(LoopShape(prog),
            "range\n store\nrange\n range\n  range\n   store\nrange\n range\n  store\n");
  ExpectExactMatmul(prog, 8, 8, 32, false);
}

// Lowers `root` with the defaults, calling `look` with the space of actions rangeify offers
// for each kernel that has one (a space's build works only during the call); the number.
int WithSpaces(const UOp& root, const std::function<void(const OptSpace&)>& look) {
  int spaces = 0;
  PassContext ctx;
  ctx.choose_opts = [&](const OptSpace& space) {
    ++spaces;
    look(space);
    return space.defaults;
  };
  CanonicalGraph g = Canonicalize(UOp::Sink({root}));
  PassManager pm = LoweringPipeline();
  EXPECT_TRUE(Lower(g.sink, static_cast<int>(g.inputs.size()), pm, ctx).ok());
  return spaces;
}

// A matmul's actions: its default (the first register tile that fits 48 x 96) and every
// single change of it, each the same sums in the same order.
TEST(Rangeify, EveryActionOnAMatmulIsExact) {
  const int m = 48, k = 8, n = 96;
  auto check = [&](const OptSpace& space) {
    EXPECT_EQ(OptsToString(space.defaults), "upcast 0 8, upcast 1 48");
    EXPECT_EQ(OptsToString(space.actions),
              "upcast 1 16, upcast 1 32, upcast 1 48, upcast 0 4, upcast 0 6, "
              "upcast 0 8, group 1 16, group 1 96, group 0 2, group 0 4, group 0 8, unroll 0 4");
    std::set<std::string> kernels;
    for (const Opt& a : space.actions)
      for (const std::vector<Opt>& opts : {WithOpt(space.defaults, a), WithOpt({}, a)}) {
        absl::StatusOr<UOp> kernel = space.build(opts);
        if (!kernel.ok()) {  // (rows without columns)
          EXPECT_EQ(opts.size(), 1u) << OptsToString(opts);
          continue;
        }
        kernels.insert(ToUir(*kernel));
        SCOPED_TRACE(OptsToString(opts));
        ExpectExactMatmul(*Linearize(Simplify(*kernel)), m, k, n, false);
      }
    EXPECT_GE(kernels.size(), 12u);  // (some lists give one kernel: the defaults, twice)
    // the defaults are what a plan without a search has
    EXPECT_EQ(LoopShape(*Linearize(Simplify(*space.build(space.defaults)))),
              LoopShape(MatmulKernel(m, k, n, false)));
  };
  EXPECT_EQ(WithSpaces(Matmul(m, k, n, false), check), 1);
}

// Attention's q @ k^T (batched, so no transposed copy is made): the columns of a register
// tile, or a row of sums, would read k across its rows (a gather a step), so 4 sums at once
// read their rows of q and k along memory instead; the same product with k stored as (k, n)
// keeps its register tile.
TEST(Rangeify, ABatchedMatmulByATransposeHasNoRegisterTile) {
  using Dims4 = std::vector<int64_t>;
  const int64_t batch = 2, m = 16, k = 8, n = 32;
  // (batch, m, k) @ (batch, k, n), b stored as (batch, n, k) when `transposed`
  auto batched = [&](bool transposed) {
    UOp a = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, batch * m * k), {batch, m, k});
    UOp b = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 1, batch * n * k),
                 transposed ? Dims4{batch, n, k} : Dims4{batch, k, n});
    const Dims4 full = transposed ? Dims4{batch, m, n, k} : Dims4{batch, m, k, n};
    const Dims4 as = transposed ? Dims4{batch, m, 1, k} : Dims4{batch, m, k, 1};
    const Dims4 bs = transposed ? Dims4{batch, 1, n, k} : Dims4{batch, 1, k, n};
    UOp prod = UOp::Derived(Ops::MUL, {Dims(Ops::EXPAND, Dims(Ops::RESHAPE, a, as), full),
                                       Dims(Ops::EXPAND, Dims(Ops::RESHAPE, b, bs), full)});
    return UOp::Derived(Ops::REDUCE, {prod}, ReduceArg{Ops::ADD, {transposed ? 3 : 2}});
  };
  auto defaults = [&](bool transposed) {
    std::string opts;
    EXPECT_EQ(WithSpaces(batched(transposed),
                         [&](const OptSpace& s) { opts = OptsToString(s.defaults); }),
              1);
    return opts;
  };
  EXPECT_EQ(defaults(true), "group 2 4");
  EXPECT_EQ(defaults(false), "upcast 1 8, upcast 2 32");
}

// Sums along rows that lie in memory (a layer norm's mean, a row sum): 4 rows at a time,
// each read along memory; a sum down the columns keeps its row of sums.
TEST(Rangeify, RowSumsReadAlongMemoryFourRowsAtATime) {
  auto defaults = [](int64_t rows, int64_t columns, int axis) {
    UOp x = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, rows * columns), {rows, columns});
    std::string opts;
    EXPECT_EQ(WithSpaces(UOp::Derived(Ops::REDUCE, {x}, ReduceArg{Ops::ADD, {axis}}),
                         [&](const OptSpace& s) { opts = OptsToString(s.defaults); }),
              1);
    return opts;
  };
  EXPECT_EQ(defaults(64, 128, 1), "group 0 4");
  EXPECT_EQ(defaults(4096, 4096, 1), "group 0 4");
  EXPECT_EQ(defaults(128, 64, 0), "group 0 64");
}

// An unroll added to the defaults (a row of 3 sums): the reduction over k in steps of 4, its
// inner loop a constant 4 long.
TEST(Rangeify, AnUnrolledReductionRunsInStepsOfTheSameOrder) {
  WithSpaces(Matmul(4, 8, 3, false), [](const OptSpace& space) {
    absl::StatusOr<UOp> kernel = space.build(WithOpt(space.defaults, {OptOp::kUnroll, 0, 4}));
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    std::vector<UOp> prog = *Linearize(Simplify(*kernel));
    EXPECT_EQ(LoopShape(prog),
              "range\n range\n  store\n range\n  range\n   range\n    store\n"
              " range\n  store\n");
    ExpectExactMatmul(prog, 4, 8, 3, false);
  });
}

// Lists that do not apply are refused with the action, the kernel's shape and the reason;
// a kernel without a reduction is offered none.
TEST(Rangeify, RefusesActionsThatDoNotApply) {
  WithSpaces(Matmul(48, 8, 96, false), [](const OptSpace& space) {
    for (const char* bad : {"upcast 1 7", "upcast 2 4", "group 1 1024", "upcast 0 8", "group 0 4",
                            "upcast 1 48, group 0 4", "upcast 1 96, upcast 0 8", "unroll 0 3",
                            "unroll 1 2", "upcast 1 48, upcast 1 32"}) {
      absl::StatusOr<UOp> kernel = space.build(*ParseOpts(bad));
      EXPECT_EQ(kernel.status().code(), absl::StatusCode::kInvalidArgument) << bad;
      EXPECT_NE(kernel.status().message().find("schedule_opts: opt"), std::string::npos)
          << kernel.status();
    }
    EXPECT_NE(space.build(*ParseOpts("upcast 1 7")).status().message().find("(48, 96)"),
              std::string::npos);
  });
  EXPECT_EQ(WithSpaces(Matrix(0, 4, 8) + Matrix(1, 4, 8), [](const OptSpace&) {}), 0);
}

// Three matmuls (a two-layer MLP's forward and a weight's gradient) and a sum of squares of
// a computed value, each kernel built with actions picked at random (one to three changes
// of the defaults or of none): the bits of the defaults, every time.
TEST(Rangeify, RandomActionListsGiveTheBitsOfTheDefaults) {
  const int m = 32, k = 24, h = 96, n = 64;
  UOp x = Matrix(0, m, k), w1 = Matrix(1, k, h), w2 = Matrix(2, h, n);
  auto matmul = [](UOp a, UOp b, int64_t rows, int64_t inner, int64_t cols) {
    UOp prod = UOp::Derived(
        Ops::MUL,
        {Dims(Ops::EXPAND, Dims(Ops::RESHAPE, a, {rows, inner, 1}), {rows, inner, cols}),
         Dims(Ops::EXPAND, Dims(Ops::RESHAPE, b, {1, inner, cols}), {rows, inner, cols})});
    return Dims(Ops::RESHAPE, UOp::Derived(Ops::REDUCE, {prod}, ReduceArg{Ops::ADD, {1}}),
                {rows, cols});
  };
  UOp hidden = matmul(x, w1, m, k, h);
  UOp out = matmul(hidden, w2, m, h, n);
  UOp grad = matmul(UOp::Derived(Ops::PERMUTE, {hidden}, Axes{{1, 0}}), out, h, m, n);
  UOp e = UOp::Derived(Ops::EXP2, {out});
  UOp squares = UOp::Derived(Ops::REDUCE, {e * e}, ReduceArg{Ops::ADD, {0}});  // (column sums)
  CanonicalGraph g = Canonicalize(UOp::Sink({out, grad, squares}));
  std::vector<std::vector<float>> in(3);
  for (int b = 0; b < 3; ++b)
    for (int i = 0; i < static_cast<int>(g.inputs[b].arg().Get<ParamArg>().size); ++i)
      in[b].push_back(std::sin(0.37f * i + b));
  auto run = [&](const PassContext& ctx) {
    PassManager pm = LoweringPipeline();
    absl::StatusOr<Plan> p = Lower(g.sink, static_cast<int>(g.inputs.size()), pm, ctx);
    EXPECT_TRUE(p.ok()) << p.status();
    std::vector<std::vector<float>> bufs = RunPlan(*p, in);
    std::vector<std::vector<float>> outs;
    for (int o : p->outputs) outs.push_back(bufs[o]);
    return outs;
  };
  const std::vector<std::vector<float>> want = run({});
  std::mt19937 random(7);
  int spaces = 0;
  std::set<std::string> tried;
  for (int round = 0; round < 8; ++round) {
    PassContext ctx;
    ctx.choose_opts = [&](const OptSpace& space) {
      ++spaces;
      std::vector<Opt> opts = random() % 2 ? space.defaults : std::vector<Opt>{};
      for (int c = 1 + random() % 3; c > 0; --c)
        opts = WithOpt(opts, space.actions[random() % space.actions.size()]);
      tried.insert(OptsToString(opts));
      return opts;
    };
    EXPECT_EQ(run(ctx), want) << round;
  }
  EXPECT_EQ(spaces, 8 * 4);  // each of the four reducing kernels had a space
  EXPECT_GE(tried.size(), 20u);
}

// b's rows 4 KiB apart (1024 floats) and 64 of them or more: the matmul reads a copy of b
// with rows 16 floats longer, made by a kernel of its own (the values: cpu_threads_test,
// as the interpreter loads a padded read's border eagerly, where C does not).
TEST(Kernelize, AMatmulByRowsFourKibApartReadsAPaddedCopy) {
  const int m = 8, k = 64, n = 1024;
  const Plan p = LowerPlan(Matmul(m, k, n, false));
  ASSERT_EQ(p.kernels().size(), 2u);
  EXPECT_EQ(p.buffers[p.kernels()[0]->writes[0]].count, k * (n + 16));
  EXPECT_EQ(p.kernels()[1]->buffers.size(), 3u);                         // a, the copy, the output
  EXPECT_EQ(LowerPlan(Matmul(m, 32, n, false)).kernels().size(), 1u);    // 32 rows: no copy
  EXPECT_EQ(LowerPlan(Matmul(m, k, 1000, false)).kernels().size(), 1u);  // rows 4000 B apart
}

TEST(Rangeify, IndicesAreSimplified) {
  // a reshape round trip (4, 8) -> (32) -> (8, 4) -> (4, 8) indexes the buffer directly
  UOp x = Matrix(0, 4, 8);
  UOp y = Dims(Ops::RESHAPE, Dims(Ops::RESHAPE, Dims(Ops::RESHAPE, x, {32}), {8, 4}), {4, 8});
  Plan p = LowerPlan(y + y);
  ASSERT_EQ(p.kernels().size(), 1u);
  std::string uir = ToUir(p.kernels()[0]->ast);
  EXPECT_EQ(uir.find("floordiv"), std::string::npos) << uir;
  EXPECT_EQ(uir.find("mod"), std::string::npos) << uir;
}

TEST(PlanCache, KeysOnStructureNotOnBuffers) {
  UOp a = Matrix(100, 4, 8), b = Matrix(200, 4, 8), c = Matrix(300, 4, 8);
  CanonicalGraph g1 = Canonicalize(UOp::Sink({a + b})), g2 = Canonicalize(UOp::Sink({b + c}));
  EXPECT_EQ(g1.sink, g2.sink);  // same structure, other buffers: one key
  EXPECT_EQ(g1.inputs.size(), 2u);
  CanonicalGraph g3 = Canonicalize(UOp::Sink({a + a}));
  EXPECT_NE(g1.sink, g3.sink);  // one buffer twice is another structure
  CanonicalGraph g4 = Canonicalize(UOp::Sink({Matrix(1, 4, 9) + Matrix(2, 4, 9)}));
  EXPECT_NE(g1.sink, g4.sink);  // another size
  PlanCache cache;
  int builds = 0;
  auto build = [&](const UOp& s, int n) -> absl::StatusOr<Plan> {
    ++builds;
    PassManager pm = LoweringPipeline();
    return Lower(s, n, pm);
  };
  ASSERT_TRUE(cache.Get(g1, build).ok());
  ASSERT_TRUE(cache.Get(g2, build).ok());
  ASSERT_TRUE(cache.Get(g4, build).ok());
  EXPECT_EQ(builds, 2);
  EXPECT_EQ(cache.hits(), 1);
}

TEST(PlanCache, VarsKeyByTheirDeclarationNotTheirValue) {
  UOp n = UOp::Var("n", 1, 8);
  UOp x = Matrix(7, 4, 8);
  CanonicalGraph g1 = Canonicalize(UOp::Sink(
      {x + UOp::Derived(Ops::EXPAND, {UOp::Derived(Ops::RESHAPE,
                                                   {n.Cast(DType::kF32), UOp::Int(1), UOp::Int(1)}),
                                      UOp::Int(4), UOp::Int(8)})}));
  CanonicalGraph g2 = Canonicalize(UOp::Sink(
      {Matrix(9, 4, 8) +
       UOp::Derived(Ops::EXPAND,
                    {UOp::Derived(Ops::RESHAPE, {n.Cast(DType::kF32), UOp::Int(1), UOp::Int(1)}),
                     UOp::Int(4), UOp::Int(8)})}));
  EXPECT_EQ(g1.sink, g2.sink);
}

}  // namespace
}  // namespace uopc
