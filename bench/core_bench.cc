// Speed of core/: interning nodes (new nodes and hash-cons hits, next to a plain heap
// allocation of a node-sized object as the baseline) and simplifying a 10,000-node index
// expression (unravel a flat index into 8 loops, ravel it back; the simplifier must see
// that ((flat // s) % d) is the loop variable itself).
//   bazel run -c opt //bench:core_bench
#include <chrono>
#include <memory>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/symbolic/simplify.h"
#include "core/uop.h"
#include "tests/testing/random_expr.h"

namespace uopc {
namespace {

void BM_InternNew(benchmark::State& state) {
  UOp x = UOp::Var("x", 0, 100);
  int64_t i = 0;
  for (auto _ : state) {
    UOp n = x + (i++);  // a new CONST and a new ADD
    benchmark::DoNotOptimize(n.get());
  }
  state.counters["nodes/s"] =
      benchmark::Counter(2.0 * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_InternNew);

void BM_InternHit(benchmark::State& state) {
  UOp x = UOp::Var("x", 0, 100);
  UOp keep = x + 7;
  for (auto _ : state) {
    UOp n = x + 7;  // both nodes exist: two lookups
    benchmark::DoNotOptimize(n.get());
  }
  state.counters["nodes/s"] =
      benchmark::Counter(2.0 * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_InternHit);

// Baseline: what allocating two node-sized objects without interning costs.
void BM_PlainAlloc(benchmark::State& state) {
  struct Fake {
    char bytes[160];
  };
  for (auto _ : state) {
    auto a = std::make_shared<Fake>(), b = std::make_shared<Fake>();
    benchmark::DoNotOptimize(a.get());
    benchmark::DoNotOptimize(b.get());
  }
  state.counters["nodes/s"] =
      benchmark::Counter(2.0 * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PlainAlloc);

// sum_k ((flat // s_k) % d_k) * s_k over 8 loops of 4, repeated with fresh loops until the
// graph has about 10,000 nodes.
UOp IndexExpression(size_t* nodes) {
  std::vector<UOp> parts;
  int idx = 0;
  for (;;) {
    std::vector<UOp> r;
    for (int k = 0; k < 8; ++k) r.push_back(UOp::Range(4, idx++));
    UOp flat = UOp::Int(0);
    for (const UOp& x : r) flat = flat * 4 + x;
    UOp again = UOp::Int(0);
    int64_t stride = 1;
    for (int k = 7; k >= 0; --k, stride *= 4) again = again + flat.FloorDiv(stride).Mod(4) * stride;
    parts.push_back(again);
    UOp sink = UOp::Sink(parts);
    *nodes = sink.Toposort().size();
    if (*nodes >= 10000) return sink;
  }
}

void BM_Simplify10kIndex(benchmark::State& state) {
  size_t nodes = 0;
  UOp e = IndexExpression(&nodes);
  size_t out_nodes = 0;
  for (auto _ : state) {
    UOp s = Simplify(e);
    out_nodes = s.Toposort().size();
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["nodes_after"] = static_cast<double>(out_nodes);
  state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(nodes) * state.iterations(),
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Simplify10kIndex)->Unit(benchmark::kMillisecond);

// A sum of n distinct VARs, left-nested as a program builds it: nothing to collect, and
// every prefix a sum to look at.
void BM_SimplifyLongSum(benchmark::State& state) {
  const int64_t n = state.range(0);
  UOp sum = UOp::Var("v0", 0, 9);
  for (int64_t k = 1; k < n; ++k) sum = sum + UOp::Var("v" + std::to_string(k), 0, 9);
  for (auto _ : state) benchmark::DoNotOptimize(Simplify(sum));
  state.counters["terms"] = static_cast<double>(n);
}
BENCHMARK(BM_SimplifyLongSum)->Arg(1000)->Arg(4000)->Arg(16000)->Unit(benchmark::kMillisecond);

// 2,000 random index expressions (the simplifier's random test's), each simplified: the
// time per expression, and the mean node count before and after.
void BM_SimplifyRandomIndex(benchmark::State& state) {
  testing::RandomExpr gen(2024);
  std::vector<UOp> exprs;
  double before = 0, after = 0;
  for (int k = 0; k < 2000; ++k) {
    exprs.push_back(gen.Expr(static_cast<int>(gen.Int(1, 5))));
    before += static_cast<double>(exprs.back().Toposort().size());
    after += static_cast<double>(Simplify(exprs.back()).Toposort().size());
  }
  auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state)
    for (const UOp& e : exprs) benchmark::DoNotOptimize(Simplify(e));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.counters["us/expr"] = s / (static_cast<double>(state.iterations()) * exprs.size()) * 1e6;
  state.counters["nodes_before"] = before / exprs.size();
  state.counters["nodes_after"] = after / exprs.size();
}
BENCHMARK(BM_SimplifyRandomIndex)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace uopc

BENCHMARK_MAIN();
