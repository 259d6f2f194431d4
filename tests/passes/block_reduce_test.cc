// BlockReduce: a long reduction to few outputs on a GPU target is a block's each; the kernel,
// lowered by the whole pipeline for an H100-like target and run by the reference interpreter
// (a block's threads in turn), gives the sum in its defined order, bit for bit.
#include "passes/block_reduce.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include <gtest/gtest.h>

#include "core/interpreter.h"
#include "passes/linearize.h"
#include "passes/pipeline.h"
#include "runtime/plan.h"
#include "runtime/plan_cache.h"

namespace uopc {
namespace {

Target Gpu() {
  absl::StatusOr<Target> t = ParseTarget(
      "class=gpu arch=sm_90 cores=132 warp=32 threads_per_block=1024 "
      "shared_per_block=227K");
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// REDUCE(op) over the last axis of a (rows, cols) f32 input, then `then` of it.
UOp RowReduce(Ops op, int64_t rows, int64_t cols, double scale = 1) {
  UOp x = UOp::Derived(Ops::RESHAPE,
                       {UOp::Buffer(DType::kF32, 0, rows * cols), UOp::Int(rows), UOp::Int(cols)});
  UOp r = UOp::Derived(Ops::REDUCE, {x}, ReduceArg{op, {1}});
  if (scale == 1) return r;
  UOp s = UOp::Derived(Ops::RESHAPE, {UOp::Const(DType::kF32, scale), UOp::Int(1), UOp::Int(1)});
  return r * UOp::Derived(Ops::EXPAND, {s, UOp::Int(rows), UOp::Int(1)});
}

Plan LowerFor(const UOp& root, const Target& t) {
  CanonicalGraph g = Canonicalize(UOp::Sink({root}));
  PassManager pm = LoweringPipeline();
  pm.set_verify(true);
  PassContext ctx;
  ctx.default_target = t;
  absl::StatusOr<Plan> p = Lower(g.sink, static_cast<int>(g.inputs.size()), pm, ctx);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Plan{};
}

struct Shape {
  int globals = 0, locals = 0, barriers = 0;
  int64_t threads = 0;           // the local ranges' length (all alike)
  int64_t shared = 0, warp = 0;  // elements of the ALLOCs in shared memory, in warp registers
};
Shape ShapeOf(const UOp& kernel) {
  Shape s;
  for (const UOp& u : kernel.Toposort()) {
    if (u.is(Ops::BARRIER)) ++s.barriers;
    if (u.is(Ops::ALLOC) && u.arg().Get<ParamArg>().device == kSharedMemory)
      s.shared += u.arg().Get<ParamArg>().size;
    if (u.is(Ops::ALLOC) && u.arg().Get<ParamArg>().device == kWarpRegisters)
      s.warp += u.arg().Get<ParamArg>().size;
    if (!u.is(Ops::RANGE)) continue;
    const RangeKind k = u.arg().Get<RangeArg>().kind;
    s.globals += k == RangeKind::kGlobal;
    if (k == RangeKind::kLocal) ++s.locals, s.threads = *u.src(0).ConstIntValue();  // (all alike)
  }
  return s;
}

// The one kernel of `p` run on `in`, into `rows` outputs.
std::vector<float> RunKernel(const Plan& p, std::vector<float> in, int64_t rows) {
  std::vector<float> out(rows, -1);
  EXPECT_EQ(p.kernels().size(), 1u);
  if (p.kernels().size() != 1) return out;
  std::vector<BufferRef> at;
  for (int b : p.kernels()[0]->buffers)
    at.push_back(b < 1 ? BufferRef{in.data(), DType::kF32, static_cast<int64_t>(in.size())}
                       : BufferRef{out.data(), DType::kF32, rows});
  absl::StatusOr<std::vector<UOp>> program = Linearize(p.kernels()[0]->ast);
  EXPECT_TRUE(program.ok()) << program.status();
  absl::Status s = Interpret(*program, at);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

std::vector<float> Random(int64_t n) {
  std::mt19937 gen(7);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// Row r's sum as T threads compute it: lane l sums inputs l, T + l, ... of the row that
// there are (the rest its identity, 0), then the lanes' sums in pairs.
float TreeSum(const std::vector<float>& in, int64_t r, int64_t cols, int64_t lanes) {
  std::vector<float> part(lanes, 0);
  for (int64_t l = 0; l < lanes; ++l)
    for (int64_t c = l; c < cols; c += lanes) part[l] += in[r * cols + c];
  for (int64_t half = lanes / 2; half >= 1; half /= 2)
    for (int64_t l = 0; l < half; ++l) part[l] += part[l + half];
  return part[0];
}

// 64 rows of 4,096: a block of 256 threads a row, each summing 16 inputs 256 apart, then the
// block's 256 partial sums in pairs (l and l + 128, ..., l and l + 1). That order, bit for bit.
TEST(BlockReduce, AFewLongRowsAreABlocksEachSummedInItsOrder) {
  const int64_t rows = 64, cols = 4096, threads = 256;
  Plan p = LowerFor(RowReduce(Ops::ADD, rows, cols), Gpu());
  ASSERT_EQ(p.kernels().size(), 1u);
  Shape s = ShapeOf(p.kernels()[0]->ast);
  EXPECT_EQ(s.globals, 1);
  EXPECT_EQ(s.locals, 9);  // the threads' sums, then 8 stages of pairs
  EXPECT_EQ(s.threads, threads);
  EXPECT_EQ(s.shared, 2 * threads);
  EXPECT_EQ(s.warp, 2 * threads);  // (the stages from 32 pairs on: what the first warp wrote)
  EXPECT_EQ(s.barriers, 9);
  std::vector<float> in = Random(rows * cols);
  std::vector<float> got = RunKernel(p, in, rows);
  for (int64_t r = 0; r < rows; ++r) {
    double exact = 0;
    for (int64_t c = 0; c < cols; ++c) exact += in[r * cols + c];
    EXPECT_EQ(got[r], TreeSum(in, r, cols, threads)) << "row " << r;
    EXPECT_NEAR(got[r], exact, 1e-3) << "row " << r;
  }
}

// A max, and a mean (what the kernel computes from the sum comes after the block's sum).
TEST(BlockReduce, AMaxAndAMeanToo) {
  const int64_t rows = 16, cols = 1024;
  std::vector<float> in = Random(rows * cols);
  Plan max = LowerFor(RowReduce(Ops::MAX, rows, cols), Gpu());
  ASSERT_EQ(max.kernels().size(), 1u);
  EXPECT_EQ(ShapeOf(max.kernels()[0]->ast).barriers, 9);
  std::vector<float> got = RunKernel(max, in, rows);
  for (int64_t r = 0; r < rows; ++r)
    EXPECT_EQ(got[r], *std::max_element(in.begin() + r * cols, in.begin() + (r + 1) * cols));
  Plan mean = LowerFor(RowReduce(Ops::ADD, rows, cols, 1.0 / cols), Gpu());
  ASSERT_EQ(mean.kernels().size(), 1u);
  EXPECT_EQ(ShapeOf(mean.kernels()[0]->ast).threads, 256);
  got = RunKernel(mean, in, rows);
  for (int64_t r = 0; r < rows; ++r) {
    double exact = 0;
    for (int64_t c = 0; c < cols; ++c) exact += in[r * cols + c];
    EXPECT_NEAR(got[r], exact / cols, 1e-6) << "row " << r;
  }
}

// 1,024 rows of 128 (a layer norm's): too many for a block each, so a warp each, 8 a block:
// lane l sums the row's inputs l, l + 32, l + 64, l + 96, then the lanes' sums in pairs (l and
// l + 16, ..., l and l + 1) in the warp's registers. That order, bit for bit.
TEST(BlockReduce, ManyRowsReadAlongMemoryAreAWarpsEach) {
  const int64_t rows = 1024, cols = 128, lanes = 32;
  Plan p = LowerFor(RowReduce(Ops::ADD, rows, cols), Gpu());
  ASSERT_EQ(p.kernels().size(), 1u);
  Shape s = ShapeOf(p.kernels()[0]->ast);
  EXPECT_EQ(s.globals, 1);
  EXPECT_EQ(s.locals, 6);  // the lanes' sums, then 5 stages of pairs
  EXPECT_EQ(s.threads, 8 * lanes);
  EXPECT_EQ(s.warp, 2 * 8 * lanes);
  EXPECT_EQ(s.barriers, 6);
  std::vector<float> in = Random(rows * cols);
  std::vector<float> got = RunKernel(p, in, rows);
  for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(got[r], TreeSum(in, r, cols, lanes)) << "row " << r;
}

// Rows that the threads do not divide: 64 rows of 1,000 (a block each, 128 threads: 8 steps,
// the last gated) and 1,024 rows of 65 (a loss's over a vocabulary of 65: a warp each, 3
// steps, lane 0 alone in the last). That order, bit for bit.
TEST(BlockReduce, RaggedRowsGateTheirLastStep) {
  for (const auto& [rows, cols, lanes] : {std::tuple{int64_t{64}, int64_t{1000}, int64_t{128}},
                                          std::tuple{int64_t{1024}, int64_t{65}, int64_t{32}}}) {
    SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
    Plan p = LowerFor(RowReduce(Ops::ADD, rows, cols), Gpu());
    ASSERT_EQ(p.kernels().size(), 1u);
    EXPECT_EQ(ShapeOf(p.kernels()[0]->ast).threads, lanes == 32 ? 256 : lanes);
    std::vector<float> in = Random(rows * cols);
    std::vector<float> got = RunKernel(p, in, rows);
    for (int64_t r = 0; r < rows; ++r)
      ASSERT_EQ(got[r], TreeSum(in, r, cols, lanes)) << "row " << r;
  }
  Plan max = LowerFor(RowReduce(Ops::MAX, 1024, 65), Gpu());  // (-inf where gated)
  std::vector<float> in = Random(1024 * 65);
  for (float& v : in) v = -std::abs(v) - 1;  // (all below 0: a 0 for the gated would win)
  std::vector<float> got = RunKernel(max, in, 1024);
  for (int64_t r = 0; r < 1024; ++r)
    ASSERT_EQ(got[r], *std::max_element(in.begin() + r * 65, in.begin() + (r + 1) * 65));
}

// One thread an output where that serves: a CPU; many outputs whose sums read across memory
// (8,192 columns summed down 256 rows: neighbouring threads read neighbouring columns); rows
// shorter than kWarpReduceInputs.
TEST(BlockReduce, OneThreadAnOutputWhereThatServes) {
  Target cpu = Target::ReferenceCpu();
  for (const auto& [target, rows, cols, axis] : {std::tuple{cpu, int64_t{64}, int64_t{4096}, 1},
                                                 std::tuple{Gpu(), int64_t{256}, int64_t{8192}, 0},
                                                 std::tuple{Gpu(), int64_t{64}, int64_t{32}, 1}}) {
    SCOPED_TRACE(::testing::Message()
                 << target.arch << " " << rows << " x " << cols << " along " << axis);
    UOp x = UOp::Derived(
        Ops::RESHAPE, {UOp::Buffer(DType::kF32, 0, rows * cols), UOp::Int(rows), UOp::Int(cols)});
    Plan p = LowerFor(UOp::Derived(Ops::REDUCE, {x}, ReduceArg{Ops::ADD, {axis}}), target);
    ASSERT_EQ(p.kernels().size(), 1u);
    EXPECT_EQ(ShapeOf(p.kernels()[0]->ast).barriers, 0);
    std::vector<float> in(rows * cols);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 5);
    const int64_t outputs = axis == 1 ? rows : cols, each = axis == 1 ? cols : rows;
    std::vector<float> got = RunKernel(p, in, outputs);
    for (int64_t o = 0; o < outputs; o += 97) {
      float want = 0;  // (small integers: exact in any order)
      for (int64_t i = 0; i < each; ++i) want += in[axis == 1 ? o * cols + i : i * cols + o];
      EXPECT_EQ(got[o], want) << "output " << o;
    }
  }
}

}  // namespace
}  // namespace uopc
