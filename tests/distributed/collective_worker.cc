// One rank of the distributed tests, started by uopc_launch. `collective_worker SCENARIO`
// joins the job from the environment, runs the scenario, prints what it found, and exits
// 0 (all as expected), 1 (a wrong result) or 3 (a collective failed: its status printed).
//
//   collectives [big]  every collective, dtype, op and size against local arithmetic
//                      (with `big`: also 64 MiB); bit-identical across ranks and runs
//   linear             the seed's data-parallel fact: averaged half-batch gradients of a
//                      Linear layer equal the full-batch gradient
//   buckets            gradients averaged in the step's plan in buckets smaller than a
//                      weight's gradient: the kernels that make them are those without
//                      averaging, and the average of equal gradients is each
//   die | stall        rank 1 kills (SIGKILL) or stops (SIGSTOP) itself mid 64 MiB all-reduce
//   mismatch-op | mismatch-count | mismatch-dtype
//                      rank 0 calls another collective than the rest
//   exit CODE          rank 1 exits with CODE after a barrier; the others wait for a minute
//   reuse              every buffer is overwritten and freed as soon as its collective is
//                      done (the transport sends from it without copying until then)
//   quick-exit         every rank leaves with _Exit right after its last all-reduce, without
//                      closing the group: the peers still get every frame they need
//   graph              collectives as ops of the graph (distributed/graph_collectives.h): their
//                      values against local arithmetic, their gradients against central
//                      finite differences of the job's total loss
//   die-in-plan        rank 1 kills itself (SIGKILL) while a plan's 64 MiB all-reduce step runs
//   tp                 a GPT split over the ranks (Megatron tensor parallelism): its logits,
//                      loss and every gradient equal the whole model's in one process
//   hello              prints its environment and its peers' addresses, all-reduces 4 MiB
//                      and prints the bytes sent (and how many through shared memory)
//   p2p-order          rank 1 receives rank 0's messages (1 MiB each, a tag each) in the
//                      opposite order they were sent
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

#include "core/float16.h"
#include "core/fnv.h"
#include "distributed/data_parallel.h"
#include "distributed/graph_collectives.h"
#include "distributed/pipeline_link.h"
#include "distributed/process_group.h"
#include "distributed/tensor_collectives.h"
#include "frontend/nn.h"
#include "frontend/realize.h"
#include "frontend/tensor.h"

namespace uopc {
namespace {

int g_checks = 0, g_wrong = 0;

void Expect(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok && g_wrong++ < 10) std::printf("WRONG: %s\n", what.c_str());
}

void Must(absl::Status s) {
  if (s.ok()) return;
  std::printf("FAILED: %s\n", s.ToString().c_str());
  std::fflush(stdout);
  std::exit(3);
}

// ---- values of any dtype, as doubles ----

double Get(DType t, const std::vector<char>& b, int64_t i) {
  const char* p = b.data() + i * DTypeSize(t);
  uint16_t h;
  float f;
  int32_t n;
  switch (t) {
    case DType::kF16: std::memcpy(&h, p, 2); return F16ToF32(h);
    case DType::kBF16: std::memcpy(&h, p, 2); return BF16ToF32(h);
    case DType::kF32: std::memcpy(&f, p, 4); return f;
    default: std::memcpy(&n, p, 4); return n;
  }
}

void Put(DType t, std::vector<char>& b, int64_t i, double v) {
  char* p = b.data() + i * DTypeSize(t);
  uint16_t h;
  float f = static_cast<float>(v);
  int32_t n = static_cast<int32_t>(v);
  switch (t) {
    case DType::kF16: h = F32ToF16(f), std::memcpy(p, &h, 2); return;
    case DType::kBF16: h = F32ToBF16(f), std::memcpy(p, &h, 2); return;
    case DType::kF32: std::memcpy(p, &f, 4); return;
    default: std::memcpy(p, &n, 4); return;
  }
}

/// Small integers: exact in every dtype, so sums are exact whatever the order.
double Value(int rank, int64_t i) { return static_cast<double>((i * 131 + rank * 71) % 19) - 9; }

std::vector<char> Filled(DType t, int64_t n, int rank) {
  std::vector<char> b(n * DTypeSize(t));
  for (int64_t i = 0; i < n; ++i) Put(t, b, i, Value(rank, i));
  return b;
}

/// What op over all ranks of Value(., i) gives, computed here the way the owner does.
double Reduced(DType t, ReduceOp op, int p, int64_t i) {
  double acc = Value(0, i);
  for (int r = 1; r < p; ++r) {
    double v = Value(r, i);
    acc = op == ReduceOp::kMax   ? std::max(acc, v)
          : op == ReduceOp::kMin ? std::min(acc, v)
                                 : acc + v;
  }
  if (op != ReduceOp::kAvg) return acc;
  if (t == DType::kI32) return static_cast<double>(static_cast<int32_t>(acc) / p);
  std::vector<char> b(4);
  Put(DType::kF32, b, 0, static_cast<float>(acc) / static_cast<float>(p));
  std::vector<char> out(DTypeSize(t));
  Put(t, out, 0, Get(DType::kF32, b, 0));
  return Get(t, out, 0);
}

const char* OpName(ReduceOp op) {
  return op == ReduceOp::kSum   ? "sum"
         : op == ReduceOp::kAvg ? "avg"
         : op == ReduceOp::kMax ? "max"
                                : "min";
}

void CheckAllReduce(ProcessGroup& g, DType t, ReduceOp op, int64_t n) {
  std::vector<char> b = Filled(t, n, g.rank());
  Must(g.AllReduce(b.data(), n, t, op)->Wait());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (Get(t, b, i) != Reduced(t, op, g.world_size(), i) && bad++ == 0) first = i;
  Expect(bad == 0, absl::StrCat("all_reduce ", OpName(op), " of ", n, " x ", DTypeName(t), ": ",
                                bad, " wrong, first at ", first));
}

void CheckReduceScatter(ProcessGroup& g, DType t, ReduceOp op, int64_t n) {
  const int p = g.world_size();
  std::vector<char> in = Filled(t, n * p, g.rank()), out(n * DTypeSize(t));
  Must(g.ReduceScatter(in.data(), out.data(), n, t, op)->Wait());
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += Get(t, out, i) != Reduced(t, op, p, g.rank() * n + i);
  Expect(bad == 0, absl::StrCat("reduce_scatter ", OpName(op), " of ", n, " x ", DTypeName(t), ": ",
                                bad, " wrong"));
}

void CheckAllGather(ProcessGroup& g, DType t, int64_t n) {
  const int p = g.world_size();
  std::vector<char> in = Filled(t, n, g.rank()), out(n * p * DTypeSize(t));
  Must(g.AllGather(in.data(), out.data(), n, t)->Wait());
  int64_t bad = 0;
  for (int r = 0; r < p; ++r)
    for (int64_t i = 0; i < n; ++i) bad += Get(t, out, r * n + i) != Value(r, i);
  Expect(bad == 0, absl::StrCat("all_gather of ", n, " x ", DTypeName(t), ": ", bad, " wrong"));
}

void CheckBroadcast(ProcessGroup& g, DType t, int64_t n, int root) {
  std::vector<char> b = Filled(t, n, g.rank());
  Must(g.Broadcast(b.data(), n, t, root)->Wait());
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += Get(t, b, i) != Value(root, i);
  Expect(bad == 0, absl::StrCat("broadcast from ", root, " of ", n, " x ", DTypeName(t), ": ", bad,
                                " wrong"));
}

/// Around the ring: each rank sends to the next and receives from the previous.
void CheckSendRecv(ProcessGroup& g, DType t, int64_t n) {
  const int p = g.world_size(), next = (g.rank() + 1) % p, prev = (g.rank() + p - 1) % p;
  std::vector<char> mine = Filled(t, n, g.rank()), got(n * DTypeSize(t));
  auto sent = g.Send(mine.data(), n, t, next, 7);
  Must(g.Recv(got.data(), n, t, prev, 7)->Wait());
  Must(sent->Wait());
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += Get(t, got, i) != Value(prev, i);
  Expect(bad == 0, absl::StrCat("send/recv of ", n, " x ", DTypeName(t), ": ", bad, " wrong"));
}

/// Random (non-integer) f32 sums: the same bits on every rank, and in a second run.
void CheckBitIdentical(ProcessGroup& g, int64_t n) {
  std::mt19937 rng(1234 + g.rank());
  std::normal_distribution<float> normal;
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  std::vector<float> a = x, b = x;
  Must(g.AllReduce(a.data(), n, DType::kF32, ReduceOp::kSum)->Wait());
  Must(g.AllReduce(b.data(), n, DType::kF32, ReduceOp::kSum)->Wait());
  Expect(std::memcmp(a.data(), b.data(), n * 4) == 0, "two runs of one all_reduce differ");
  uint64_t h = Fnv1a(absl::string_view(reinterpret_cast<const char*>(a.data()), n * 4));
  int32_t mine[2] = {static_cast<int32_t>(h), static_cast<int32_t>(h >> 32)};
  std::vector<int32_t> all(2 * g.world_size());
  Must(g.AllGather(mine, all.data(), 2, DType::kI32)->Wait());
  for (int r = 0; r < g.world_size(); ++r)
    Expect(all[2 * r] == mine[0] && all[2 * r + 1] == mine[1],
           absl::StrCat("rank ", r, "'s all_reduce differs in bits"));
}

/// f16 and bf16 all-reduces and reduce-scatters around the ring send half the bytes of
/// f32, and give exactly the defined sum: chunk c starts at rank c+1, each rank adds its
/// value in f32 to what it received and rounds to the half as it passes it on, and the
/// owner c adds its own last and rounds once.
void CheckHalvesOnTheWire(ProcessGroup& g) {
  const int p = g.world_size();
  const int64_t n = (1 << 20) / 4 + 7;  // around the ring, not direct
  auto values = [&](DType t, int rank) {
    std::mt19937 rng(99 + rank);
    std::normal_distribution<float> normal;
    std::vector<char> b(n * DTypeSize(t));
    for (int64_t i = 0; i < n; ++i) Put(t, b, i, normal(rng));
    return b;
  };
  auto round = [](DType t, float v) {
    return t == DType::kBF16 ? BF16ToF32(F32ToBF16(v)) : F16ToF32(F32ToF16(v));
  };
  std::vector<float> f32 = [&] {
    std::vector<char> b = values(DType::kF32, g.rank());
    return std::vector<float>(reinterpret_cast<float*>(b.data()),
                              reinterpret_cast<float*>(b.data()) + n);
  }();
  uint64_t before = g.bytes_sent();
  Must(g.AllReduce(f32.data(), n, DType::kF32, ReduceOp::kSum)->Wait());
  const uint64_t f32_bytes = g.bytes_sent() - before;
  for (DType t : {DType::kBF16, DType::kF16}) {
    std::vector<std::vector<char>> all;
    for (int r = 0; r < p; ++r) all.push_back(values(t, r));
    std::vector<char> b = all[g.rank()];
    before = g.bytes_sent();
    Must(g.AllReduce(b.data(), n, t, ReduceOp::kSum)->Wait());
    const uint64_t bytes = g.bytes_sent() - before;
    Expect(bytes * 2 == f32_bytes, absl::StrCat("all_reduce of ", n, " x ", DTypeName(t), " sent ",
                                                bytes, " bytes; f32 sent ", f32_bytes));
    int64_t bad = 0, first = -1;
    for (int c = 0; c < p; ++c) {
      const int64_t begin = n / p * c + n % p * c / p, end = n / p * (c + 1) + n % p * (c + 1) / p;
      for (int64_t i = begin; i < end; ++i) {
        float sum = static_cast<float>(Get(t, all[(c + 1) % p], i));
        for (int k = 2; k < p; ++k)
          sum = round(t, sum + static_cast<float>(Get(t, all[(c + k) % p], i)));
        sum = static_cast<float>(Get(t, all[c], i)) + sum;
        if (Get(t, b, i) != round(t, sum) && bad++ == 0) first = i;
      }
    }
    Expect(bad == 0, absl::StrCat("all_reduce of ", n, " x ", DTypeName(t), " around the ring: ",
                                  bad, " not the defined sum, first at ", first));
  }
}

int Collectives(ProcessGroup& g, bool big) {
  const int p = g.world_size();
  std::vector<int64_t> sizes = {0, 1, p - 1, 1009, 100003, (1 << 20) / 4};  // direct and ring
  const DType dtypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI32};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin};
  for (int64_t n : sizes)
    for (DType t : dtypes) {
      for (ReduceOp op : ops) CheckAllReduce(g, t, op, n);
      CheckReduceScatter(g, t, ReduceOp::kSum, n);
      CheckAllGather(g, t, n);
      for (int root = 0; root < p; ++root) CheckBroadcast(g, t, n, root);
      if (p > 1) CheckSendRecv(g, t, n);
    }
  for (int64_t n : {int64_t{1} << 20, int64_t{2}})
    for (ReduceOp op : ops) CheckReduceScatter(g, DType::kF32, op, n);
  CheckBitIdentical(g, 100003);
  if (p > 1) CheckHalvesOnTheWire(g);
  // many collectives in flight at once complete in order
  std::vector<std::vector<char>> bufs;
  std::vector<std::shared_ptr<Work>> works;
  for (int k = 0; k < 16; ++k) bufs.push_back(Filled(DType::kF32, 1000 + k, g.rank()));
  for (int k = 0; k < 16; ++k)
    works.push_back(g.AllReduce(bufs[k].data(), 1000 + k, DType::kF32, ReduceOp::kSum));
  for (int k = 0; k < 16; ++k) {
    Must(works[k]->Wait());
    int64_t bad = 0;
    for (int64_t i = 0; i < 1000 + k; ++i)
      bad += Get(DType::kF32, bufs[k], i) != Reduced(DType::kF32, ReduceOp::kSum, p, i);
    Expect(bad == 0, absl::StrCat("all_reduce ", k, " of 16 in flight: ", bad, " wrong"));
  }
  if (big) {
    const int64_t n = (64 << 20) / 4;  // 64 MiB of f32
    CheckAllReduce(g, DType::kF32, ReduceOp::kSum, n);
    CheckReduceScatter(g, DType::kF32, ReduceOp::kSum, n / p);
    CheckAllGather(g, DType::kF32, n / p);
    CheckBroadcast(g, DType::kF32, n, p - 1);
    if (p > 1) CheckSendRecv(g, DType::kF32, n);
  }
  Must(g.Barrier()->Wait());
  std::printf("%d checks, %d wrong\n", g_checks, g_wrong);
  return g_wrong ? 1 : 0;
}

/// Four ranks in the groups of a 2 x 2 layout (pairs {0,1} {2,3}, and across {0,2} {1,3}),
/// and one in reversed order ({3,1}): every collective in each, with the two kinds in flight
/// at once, equals the local arithmetic over that group's ranks only.
int Groups(ProcessGroup& world) {
  Expect(world.world_size() == 4, "groups: run it on 4 ranks");
  const int r = world.rank();
  std::vector<std::unique_ptr<ProcessGroup>> mine;
  for (std::vector<int> ranks :
       std::vector<std::vector<int>>{{0, 1}, {2, 3}, {0, 2}, {1, 3}, {3, 1}}) {
    absl::StatusOr<std::unique_ptr<ProcessGroup>> g = world.NewGroup(ranks);
    Must(g.status());
    const bool member = std::count(ranks.begin(), ranks.end(), r) == 1;
    Expect((*g != nullptr) == member, absl::StrCat("new group: rank ", r, " member? ", member));
    if (*g) mine.push_back(*std::move(g));
  }
  ProcessGroup &pair = *mine[0], &across = *mine[1];
  Expect(pair.world_size() == 2 && pair.rank() == r % 2 && pair.ranks()[pair.rank()] == r,
         "the pair group's ranks");
  Expect(across.rank() == r / 2, "the across group's ranks");
  if (mine.size() > 2) Expect(mine[2]->rank() == (r == 3 ? 0 : 1), "a group in reversed order");
  Expect(world.NewGroup({0, 0}).status().code() == absl::StatusCode::kInvalidArgument,
         "a rank twice is refused");
  Expect(pair.NewGroup({0}).status().code() == absl::StatusCode::kFailedPrecondition,
         "a group of a group is refused");
  std::vector<ProcessGroup*> each = {&pair, &across};
  if (mine.size() > 2) each.push_back(mine[2].get());
  for (ProcessGroup* g : each)
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1009}, int64_t{(1 << 20) / 4}})
      for (DType t : {DType::kF32, DType::kBF16, DType::kI32}) {
        CheckAllReduce(*g, t, ReduceOp::kSum, n);
        CheckReduceScatter(*g, t, ReduceOp::kAvg, n);
        CheckAllGather(*g, t, n);
        CheckBroadcast(*g, t, n, 1);
        CheckSendRecv(*g, t, n);
      }
  // both groups' all-reduces queued before either is waited for
  const int64_t n = 100003;
  std::vector<char> a = Filled(DType::kF32, n, pair.rank()),
                    b = Filled(DType::kF32, n, across.rank()),
                    c = Filled(DType::kF32, n, world.rank());
  std::shared_ptr<Work> wa = pair.AllReduce(a.data(), n, DType::kF32, ReduceOp::kSum),
                        wb = across.AllReduce(b.data(), n, DType::kF32, ReduceOp::kMax),
                        wc = world.AllReduce(c.data(), n, DType::kF32, ReduceOp::kSum);
  // and {3,1}: the same ranks as {1,3}, at the same collective number (both ran the suite)
  std::vector<char> d =
      mine.size() > 2 ? Filled(DType::kF32, n, mine[2]->rank()) : std::vector<char>();
  std::shared_ptr<Work> wd =
      mine.size() > 2 ? mine[2]->AllReduce(d.data(), n, DType::kF32, ReduceOp::kMin) : nullptr;
  Must(wa->Wait());
  Must(wb->Wait());
  Must(wc->Wait());
  if (wd) Must(wd->Wait());
  int64_t bad = 0;
  for (int64_t i = 0; wd && i < n; ++i)
    bad += Get(DType::kF32, d, i) != Reduced(DType::kF32, ReduceOp::kMin, 2, i);
  for (int64_t i = 0; i < n; ++i)
    bad += (Get(DType::kF32, a, i) != Reduced(DType::kF32, ReduceOp::kSum, 2, i)) +
           (Get(DType::kF32, b, i) != Reduced(DType::kF32, ReduceOp::kMax, 2, i)) +
           (Get(DType::kF32, c, i) != Reduced(DType::kF32, ReduceOp::kSum, 4, i));
  Expect(bad == 0, absl::StrCat("groups in flight together: ", bad, " wrong"));
  Must(world.Barrier()->Wait());
  std::printf("%d checks, %d wrong\n", g_checks, g_wrong);
  return g_wrong ? 1 : 0;
}

/// Two ranks, each with half of one batch: the average of their gradients of a Linear
/// layer's mean-squared loss is the full batch's gradient.
int DataParallelLinear(ProcessGroup& g) {
  Tensor::ManualSeed(7);
  const int64_t batch = 8, in = 5, out = 3;
  uopc::Linear layer(in, out, true, 0.5);
  Tensor x = Tensor::Randn({batch, in}), y = Tensor::Randn({batch, out});
  x.Realize();
  y.Realize();
  std::vector<Tensor*> params = {&layer.weight, &layer.bias};
  auto grads = [&](const Tensor& xs, const Tensor& ys) {
    for (Tensor* p : params) p->ZeroGrad();
    Tensor d = layer.Forward(xs) - ys;
    (d * d).Mean().Backward();
    std::vector<std::vector<float>> out;
    for (Tensor* p : params) out.push_back(p->grad().ToVector<float>());
    return out;
  };
  auto full = grads(x, y);
  const int64_t half = batch / g.world_size(), lo = g.rank() * half;
  grads(x.Slice(0, lo, lo + half), y.Slice(0, lo, lo + half));
  Must(AverageGradients(g, params));
  double max_diff = 0;
  for (size_t k = 0; k < params.size(); ++k) {
    std::vector<float> avg = params[k]->grad().ToVector<float>();
    for (size_t i = 0; i < avg.size(); ++i)
      max_diff = std::max(max_diff, std::abs(static_cast<double>(avg[i]) - full[k][i]));
  }
  std::printf("max |mean of half-batch gradients - full-batch gradient| = %.3g\n", max_diff);
  return max_diff < 1e-6 ? 0 : 1;
}

// A linear layer's gradients, the same on every rank, realized in one plan: averaged in
// buckets of `bucket_bytes` over `g`, or not at all (null); the hashes of the plan's kernels.
std::vector<std::vector<float>> LinearGradients(const GraphGroup* g, int64_t bucket_bytes,
                                                std::set<uint64_t>* kernels) {
  Tensor::ManualSeed(3);
  uopc::Linear fc(64, 256);
  Tensor x = Tensor::Randn({128, 64}).Realize();
  fc.Forward(x).Square().Mean().Backward();
  std::vector<Tensor*> params{&fc.weight, &fc.bias};
  if (g) AverageGradientsInPlan(*g, params, bucket_bytes, DType::kF32);
  Tensor w = fc.weight.grad(), b = fc.bias.grad();
  std::vector<Runtime::PlanRun> runs;
  Runtime::Get().Record(&runs);
  Tensor::RealizeAll({&w, &b});
  Runtime::Get().Record(nullptr);
  for (const Runtime::PlanRun& r : runs)
    for (const Plan::Kernel* k : r.plan->kernels()) kernels->insert(k->ast.hash());
  return {w.ToVector<float>(), b.ToVector<float>()};
}

// A gradient larger than a bucket is all-reduced in its own shape, so its kernel is the one
// it has without data parallelism. Flattened into the bucket, a weight's gradient (a matmul)
// had looped over the bucket's rows, with no supplied call and no vectors: 37 ms a step of
// the README's model with --bucket-mb 0.05, where the call takes 1.
int Buckets(ProcessGroup& pg) {
  GraphGroup g(pg);
  std::set<uint64_t> alone, averaged;
  const std::vector<std::vector<float>> want = LinearGradients(nullptr, 0, &alone),
                                        got = LinearGradients(&g, 1024, &averaged);
  int missing = 0;
  for (uint64_t k : alone) missing += !averaged.count(k);
  std::printf("kernels of the gradients not in the averaged plan: %d; values %s\n", missing,
              got == want ? "equal" : "differ");
  return missing == 0 && got == want ? 0 : 1;
}

/// A 6 x 3 tensor of rank `rank`'s values (or every rank's, `rank` = 0), realized.
Tensor RankValues(int rank, int64_t rows = 6) {
  std::vector<float> v(rows * 3);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = 0.25f * static_cast<float>(i % 7) - 0.5f + 0.1f * rank;
  return Tensor::FromVector(v, {rows, 3}).Realize();
}

int GraphCollectives(ProcessGroup& pg) {
  GraphGroup g(pg);
  const int p = g.size(), r = g.rank();
  std::vector<std::vector<float>> xs;  // every rank's values, to check against
  for (int q = 0; q < p; ++q) xs.push_back(RankValues(q).ToVector<float>());
  auto near = [](double a, double b, double tol) {
    return std::abs(a - b) <= tol * (1 + std::abs(b));
  };
  auto expect_values = [&](const std::string& what, const Tensor& t,
                           const std::vector<double>& want) {
    std::vector<float> got = t.ToVector<float>();
    Expect(got.size() == want.size(), what + ": size");
    for (size_t i = 0; i < got.size() && i < want.size(); ++i)
      Expect(near(got[i], want[i], 1e-6),
             absl::StrCat(what, "[", i, "] = ", got[i], ", expected ", want[i]));
  };
  // forward values, some inside a larger computation (one plan: kernel, collective, kernel)
  Tensor x = RankValues(r);
  std::vector<double> sum(18), max(18), gather, scatter;
  for (int i = 0; i < 18; ++i) {
    max[i] = -1e9;
    for (int q = 0; q < p; ++q) sum[i] += xs[q][i], max[i] = std::max<double>(max[i], xs[q][i]);
  }
  std::vector<double> twice(18);
  for (int i = 0; i < 18; ++i) twice[i] = 2 * sum[i] + 1;
  for (int q = 0; q < p; ++q) gather.insert(gather.end(), xs[q].begin(), xs[q].end());
  const int per = 18 / p;
  scatter.assign(sum.begin() + r * per, sum.begin() + (r + 1) * per);
  expect_values("all_reduce(2x) + 1", AllReduceOf(g, x * 2) + 1, twice);
  expect_values("all_reduce max", AllReduceOf(g, x, Ops::MAX), max);
  expect_values("all_gather", AllGatherOf(g, x), gather);
  expect_values("reduce_scatter", ReduceScatterOf(g, x), scatter);
  expect_values("f", CopyToGroup(g, x), std::vector<double>(xs[r].begin(), xs[r].end()));
  expect_values("g", ReduceFromGroup(g, x), sum);
  // gradients: each collective C in a loss L_r = sum(w_r * C(x_r)^2) / 2 of each rank; the
  // job's loss is the sum over ranks (or, where every rank computes the same one, that one)
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    bool same_input;  // x is replicated: a perturbation moves every rank's x (f)
    bool same_loss;   // every rank computes the one loss (g)
  };
  std::vector<Case> cases = {
      {"f (copy to group)", [&](const Tensor& t) { return CopyToGroup(g, t); }, true, false},
      {"g (reduce from group)", [&](const Tensor& t) { return ReduceFromGroup(g, t); }, false,
       true},
      {"all_reduce", [&](const Tensor& t) { return AllReduceOf(g, t); }, false, false},
      {"all_gather", [&](const Tensor& t) { return AllGatherOf(g, t); }, false, false},
      {"reduce_scatter", [&](const Tensor& t) { return ReduceScatterOf(g, t); }, false, false},
  };
  for (const Case& c : cases) {
    Tensor x0 = RankValues(c.same_input ? 0 : r);
    auto loss = [&](const Tensor& in) {
      Tensor y = c.op(in);
      Tensor w =
          Tensor::Arange(1, 1 + static_cast<double>(y.numel().value()), 1).Reshape(y.shape()) *
          (0.1 * (c.same_loss ? 1 : 1 + r));
      return (w * y * y).Sum() * 0.5;
    };
    auto total = [&](const Tensor& in) {
      absl::StatusOr<Tensor> all = uopc::AllReduce(pg, loss(in));
      Must(all.status());
      return all->Item<float>() / (c.same_loss ? p : 1);
    };
    Tensor xg = x0.Detach();
    xg.RequiresGrad();
    loss(xg).Backward();
    std::vector<float> grad = xg.grad().ToVector<float>();
    const double eps = 1e-2;
    for (int q = 0; q < p; ++q) {
      if (c.same_input && q > 0) break;  // one x for all
      for (int e : {0, 7, 17}) {
        std::vector<float> plus = x0.ToVector<float>(), minus = plus;
        if (c.same_input || q == r) plus[e] += eps, minus[e] -= eps;
        double fd =
            (total(Tensor::FromVector(plus, {6, 3})) - total(Tensor::FromVector(minus, {6, 3}))) /
            (2 * eps);
        if (q == r || c.same_input)
          Expect(near(grad[e], fd, 2e-3),
                 absl::StrCat(c.name, ": d loss / d x[", e, "] of rank ", r, " = ", grad[e],
                              ", finite differences ", fd));
      }
    }
  }
  std::printf("graph collectives over %d ranks: %d checks, %d wrong\n", p, g_checks, g_wrong);
  return g_wrong ? 1 : 0;
}

// Runs `run` once (its plans compiled), then again and again while rank 1 kills itself
// `after_ms` in: the others fail in the middle of a run, and say so; none finishes.
int KilledMidRun(ProcessGroup& pg, int after_ms, const std::function<void()>& run,
                 const char* finished) {
  std::thread killer;
  try {
    run();
    Must(pg.Barrier()->Wait());
    if (pg.rank() == 1)
      killer = std::thread([after_ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
        std::printf("raising %s\n", strsignal(SIGKILL));
        std::fflush(stdout);
        raise(SIGKILL);
      });
    for (int i = 0; i < 100; ++i) run();
  } catch (const Error& e) {
    std::printf("FAILED: %s\n", e.what());
    std::fflush(stdout);
    std::exit(3);
  }
  std::printf("%s\n", finished);
  if (killer.joinable()) killer.join();
  return 0;
}

int DieInPlan(ProcessGroup& pg) {
  GraphGroup g(pg);
  Tensor x = Tensor::Ones({(64 << 20) / 4}).Realize();
  return KilledMidRun(
      pg, 20, [&] { (AllReduceOf(g, x * 2) + 1).Realize(); }, "the plan finished");
}

// Checks each of `got` against `want` to 1e-5 (entry k is what(k)); with `skip_empty`, an
// empty entry of `got` is another rank's and is skipped. The largest difference, and how
// many entries were compared.
std::pair<double, int> CompareToWhole(const std::vector<std::vector<float>>& got,
                                      const std::vector<std::vector<float>>& want,
                                      const std::function<std::string(size_t)>& what,
                                      bool skip_empty) {
  double worst = 0;
  int compared = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    if (skip_empty && got[k].empty()) continue;
    ++compared;
    Expect(got[k].size() == want[k].size(), what(k) + ": size");
    for (size_t i = 0; i < got[k].size() && i < want[k].size(); ++i) {
      double d = std::abs(static_cast<double>(got[k][i]) - want[k][i]);
      worst = std::max(worst, d);
      Expect(d <= 1e-5,
             absl::StrCat(what(k), "[", i, "] = ", got[k][i], ", whole model ", want[k][i]));
    }
  }
  return {worst, compared};
}

int TensorParallelGpt(ProcessGroup& pg) {
  GraphGroup g(pg);
  GptConfig c;
  c.vocab = 11, c.context = 8, c.dim = 24, c.heads = 6, c.layers = 2;
  Tensor::ManualSeed(3);
  Gpt model(c);
  Tensor idx = Tensor::Randint(0, c.vocab, {2, 8}), target = Tensor::Randint(0, c.vocab, {16});
  auto run = [&] {
    for (Tensor* p : model.Parameters()) p->ZeroGrad();
    Tensor logits = model.Forward(idx);
    Tensor loss = logits.Reshape({16, c.vocab}).CrossEntropy(target);
    std::vector<float> l = loss.ToVector<float>();  // (first: the forward in the loss's plan)
    loss.Backward();
    std::vector<std::vector<float>> out{logits.ToVector<float>(), l};
    for (auto& [name, p] : model.NamedParameters()) out.push_back(p->grad().ToVector<float>());
    return out;
  };
  std::vector<std::vector<float>> whole = run();
  NamedParams named = model.NamedParameters();
  std::vector<std::vector<float>> want = {whole[0], whole[1]};
  for (size_t i = 0; i < named.size(); ++i) {  // this rank's part of each whole gradient
    std::optional<TensorParallelSplit> split = TensorParallelSplitOf(c, named[i].first);
    Tensor grad = Tensor::FromVector(whole[2 + i], named[i].second->shape());
    want.push_back(split ? TakeShard(grad, *split, g.rank(), g.size()).ToVector<float>()
                         : whole[2 + i]);
  }
  model.ShardTensorParallel({g.number(), g.rank(), g.size()});
  std::vector<std::vector<float>> got = run();
  const double worst = CompareToWhole(
                           got, want,
                           [&](size_t k) {
                             return k == 0   ? std::string("logits")
                                    : k == 1 ? std::string("loss")
                                             : named[k - 2].first + " gradient";
                           },
                           false)
                           .first;
  std::printf("tensor-parallel gpt over %d ranks: max |difference| %.3g, %d checks, %d wrong\n",
              g.size(), worst, g_checks, g_wrong);
  return g_wrong ? 1 : 0;
}

// A GPT split over the ranks as a pipeline ("rank0/CPU:0", "rank1/CPU:0", ...), every rank
// running the same program: each rank's logits, loss and gradients equal those of the whole
// model in one process (computed first, here), and the loss copied to rank 0 arrives there.
int PipelineGpt(ProcessGroup& pg) {
  PipelineLink link(pg);
  GptConfig c;
  c.vocab = 11, c.context = 8, c.dim = 24, c.heads = 6, c.layers = 4;
  Tensor::ManualSeed(3);
  Gpt model(c);
  // (every rank runs one program: the inputs are made on the global devices of their stages)
  std::vector<int32_t> tokens = Tensor::Randint(0, c.vocab, {2, 8}).ToVector<int32_t>(),
                       targets = Tensor::Randint(0, c.vocab, {16}).ToVector<int32_t>();
  Tensor idx = Tensor::FromVector(tokens, {2, 8}), target = Tensor::FromVector(targets, {16});
  const int here = pg.rank();
  auto mine = [&](const Tensor& t) { return t.device()->peer_rank() < 0; };
  // (what lives on another rank: nothing to read here; the whole model on each rank alone
  // gathers nothing)
  auto run = [&](bool split) {
    for (Tensor* p : model.Parameters()) p->ZeroGrad();
    Tensor logits = model.Forward(idx);
    Tensor loss = logits.Reshape({16, c.vocab}).CrossEntropy(target);
    Tensor at0 = split ? loss.To("rank0/CPU:0") : loss;
    Tensor::RealizeAll({&logits, &loss, &at0});  // (on every rank: one program)
    std::vector<std::vector<float>> out{
        mine(logits) ? logits.ToVector<float>() : std::vector<float>{},
        mine(loss) ? loss.ToVector<float>() : std::vector<float>{},
        mine(at0) ? at0.ToVector<float>() : std::vector<float>{}};
    loss.Backward();
    std::vector<Tensor> grads;
    for (auto& [name, p] : model.NamedParameters()) grads.push_back(p->grad());
    std::vector<Tensor*> all;
    for (Tensor& g : grads) all.push_back(&g);
    Tensor::RealizeAll(all);
    for (Tensor& g : grads) out.push_back(mine(g) ? g.ToVector<float>() : std::vector<float>{});
    return out;
  };
  std::vector<std::vector<float>> want = run(false);
  std::vector<DeviceRef> stages;
  for (int r = 0; r < pg.world_size(); ++r) stages.push_back(absl::StrCat("rank", r, "/CPU:0"));
  model.Split(stages);
  idx = Tensor::FromVector(tokens, {2, 8}, DType::kI32, stages.front());
  target = Tensor::FromVector(targets, {16}, DType::kI32, stages.back());
  std::vector<std::vector<float>> got = run(true);
  NamedParams named = model.NamedParameters();
  const auto [worst, compared] = CompareToWhole(
      got, want,
      [&](size_t k) {
        return k == 0   ? std::string("logits")
               : k == 1 ? std::string("loss")
               : k == 2 ? std::string("loss on rank 0")
                        : named[k - 3].first + " gradient";
      },
      true);
  Expect(here != 0 || !got[2].empty(), "rank 0 has the loss");
  Expect(here != pg.world_size() - 1 || !got[1].empty(), "the last rank computed the loss");
  try {  // another rank's parameter: its data is there, not here
    Tensor* theirs = here == 0 ? &model.lm_head : &model.wte.weight;
    theirs->ToVector<float>();
    Expect(false, "reading another rank's parameter throws");
  } catch (const Error& e) {
    Expect(std::string(e.what()).find("the device is rank " +
                                      std::to_string(here == 0 ? pg.world_size() - 1 : 0)) !=
               std::string::npos,
           e.what());
  }
  std::printf(
      "pipeline gpt over %d ranks: %d tensors here, max |difference| %.3g, %d checks, %d wrong\n",
      pg.world_size(), compared, worst, g_checks, g_wrong);
  return g_wrong ? 1 : 0;
}

// A GPT split over the ranks as a pipeline; rank 1 is killed in the middle of the step.
int DieInPipeline(ProcessGroup& pg) {
  PipelineLink link(pg);
  GptConfig c;
  c.vocab = 64, c.context = 128, c.dim = 256, c.heads = 4, c.layers = pg.world_size();
  Tensor::ManualSeed(3);
  Gpt model(c);
  std::vector<DeviceRef> stages;
  for (int r = 0; r < pg.world_size(); ++r) stages.push_back(absl::StrCat("rank", r, "/CPU:0"));
  model.Split(stages);
  Tensor idx = Tensor::Randint(0, c.vocab, {8, 128}, stages.front()),
         target = Tensor::Randint(0, c.vocab, {8 * 128}, stages.back());
  return KilledMidRun(
      pg, 50,
      [&] {
        for (Tensor* p : model.Parameters()) p->ZeroGrad();
        Tensor loss = model.Forward(idx).Reshape({8 * 128, c.vocab}).CrossEntropy(target);
        loss.Backward();
        std::vector<Tensor> grads;
        for (Tensor* p : model.Parameters()) grads.push_back(p->grad());
        std::vector<Tensor*> all{&loss};
        for (Tensor& g : grads) all.push_back(&g);
        Tensor::RealizeAll(all);
      },
      "the pipeline finished");
}

/// Rank 1 starts a 64 MiB all-reduce and then is killed or stopped (`sig`) in the middle.
int Fault(ProcessGroup& g, int sig) {
  std::vector<float> x((64 << 20) / 4, 1.0f);
  Must(g.Barrier()->Wait());
  auto w = g.AllReduce(x.data(), static_cast<int64_t>(x.size()), DType::kF32, ReduceOp::kSum);
  if (g.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::printf("raising %s\n", strsignal(sig));
    std::fflush(stdout);
    raise(sig);
  }
  Must(w->Wait());
  std::printf("the all_reduce finished\n");
  return 0;
}

int Mismatch(ProcessGroup& g, const std::string& kind) {
  std::vector<float> x(4096, 1.0f), out(4096 * g.world_size());
  std::shared_ptr<Work> w;
  if (g.rank() != 0)
    w = g.AllReduce(x.data(), 1000, DType::kF32, ReduceOp::kSum);
  else if (kind == "mismatch-op")
    w = g.AllGather(x.data(), out.data(), 1000, DType::kF32);
  else if (kind == "mismatch-count")
    w = g.AllReduce(x.data(), 1001, DType::kF32, ReduceOp::kSum);
  else
    w = g.AllReduce(x.data(), 1000, DType::kI32, ReduceOp::kSum);
  Must(w->Wait());
  std::printf("the mismatched collective finished\n");
  return 0;
}

int Reuse(ProcessGroup& g) {
  const int p = g.world_size(), r = g.rank();
  const int64_t n = int64_t{4} << 20;  // 16 MiB of f32: many segments, every one borrowed
  for (int round = 0; round < 4; ++round) {
    const float v = static_cast<float>(round + 1);
    {
      std::vector<float> x(n, v * static_cast<float>(r + 1));
      Must(g.AllReduce(x.data(), n, DType::kF32, ReduceOp::kSum)->Wait());
      const float want = v * static_cast<float>(p * (p + 1) / 2);
      int64_t bad = 0;
      for (float e : x) bad += e != want;
      Expect(bad == 0, absl::StrCat("all_reduce round ", round, ": ", bad, " wrong elements"));
      std::fill(x.begin(), x.end(), std::nanf(""));
    }  // freed: the memory goes back to the system
    if (p < 2) continue;
    std::vector<float> y(n, r == 0 ? v : 0.0f);
    if (r == 0) {
      Must(g.Send(y.data(), n, DType::kF32, 1)->Wait());
      std::fill(y.begin(), y.end(), std::nanf(""));
    } else if (r == 1) {
      Must(g.Recv(y.data(), n, DType::kF32, 0)->Wait());
      int64_t bad = 0;
      for (float e : y) bad += e != v;
      Expect(bad == 0, absl::StrCat("recv round ", round, ": ", bad, " wrong elements"));
    }
  }
  Must(g.Barrier()->Wait());
  std::printf("%d checks, %d wrong\n", g_checks, g_wrong);
  return g_wrong ? 1 : 0;
}

[[noreturn]] void QuickExit(ProcessGroup& g) {
  const int p = g.world_size();
  for (int64_t n : {int64_t{4} << 20, int64_t{256}}) {  // the ring, then the direct path
    std::vector<int32_t> x(n, g.rank() + 1);
    Must(g.AllReduce(x.data(), n, DType::kI32, ReduceOp::kSum)->Wait());
    Expect(std::count(x.begin(), x.end(), p * (p + 1) / 2) == n, "quick-exit all_reduce");
  }
  std::printf("%d checks, %d wrong\n", g_checks, g_wrong);
  std::fflush(stdout);
  std::_Exit(g_wrong ? 1 : 0);  // no goodbye, no flush by the group's destructor
}

/// Rank 0 sends 12 messages of 1 MiB, each on its own tag; rank 1 receives them in the
/// opposite order, so that what came first waits longest.
int P2pOrder(ProcessGroup& group) {
  constexpr int kMessages = 12;
  constexpr int64_t n = 1 << 18;
  std::vector<std::vector<float>> m(kMessages, std::vector<float>(n));
  for (int k = 0; k < kMessages; ++k)
    for (int64_t i = 0; i < n; ++i) m[k][i] = static_cast<float>(k * n + i);
  if (group.rank() == 0)
    for (int k = 0; k < kMessages; ++k) Must(group.Send(m[k].data(), n, DType::kF32, 1, k)->Wait());
  if (group.rank() == 1)
    for (int k = kMessages - 1; k >= 0; --k) {
      std::vector<float> got(n);
      Must(group.Recv(got.data(), n, DType::kF32, 0, k)->Wait());
      Expect(got == m[k], absl::StrCat("message ", k, " came wrong"));
    }
  Must(group.Barrier()->Wait());
  std::printf("%d checks, %d wrong\n", g_checks, g_wrong);
  return g_wrong ? 1 : 0;
}

}  // namespace
}  // namespace uopc

int main(int argc, char** argv) {
  using namespace uopc;
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::printf(
        "usage: collective_worker SCENARIO [ARG] (started by uopc_launch; see the source)\n");
    return argc < 2 ? 2 : 0;
  }
  const std::string scenario = argv[1];
  absl::StatusOr<JobEnv> env = JobEnv::FromEnvironment();
  Must(env.status());
  absl::StatusOr<std::unique_ptr<ProcessGroup>> g = ProcessGroup::Create(*env);
  Must(g.status());
  ProcessGroup& group = **g;
  if (scenario == "collectives")
    return Collectives(group, argc > 2 && std::string(argv[2]) == "big");
  if (scenario == "linear") return DataParallelLinear(group);
  if (scenario == "buckets") return Buckets(group);
  if (scenario == "groups") return Groups(group);
  if (scenario == "graph") return GraphCollectives(group);
  if (scenario == "tp") return TensorParallelGpt(group);
  if (scenario == "pp") return PipelineGpt(group);
  if (scenario == "die-in-pipeline") return DieInPipeline(group);
  if (scenario == "die-in-plan") return DieInPlan(group);
  if (scenario == "reuse") return Reuse(group);
  if (scenario == "die") return Fault(group, SIGKILL);
  if (scenario == "stall") return Fault(group, SIGSTOP);
  if (scenario.rfind("mismatch", 0) == 0) return Mismatch(group, scenario);
  if (scenario == "exit") {
    Must(group.Barrier()->Wait());
    if (group.rank() == 1) std::exit(std::atoi(argv[2]));
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  if (scenario == "quick-exit") QuickExit(group);
  if (scenario == "hello") {
    std::printf("hello from rank %d of %d (local %d of %d, via %s)\n", group.rank(),
                group.world_size(), env->local_rank, env->local_world_size, env->source.c_str());
    for (int r = 0; r < group.world_size(); ++r)
      if (r != group.rank()) std::printf("reaches rank %d at %s\n", r, group.address_of(r).c_str());
    std::vector<float> x(1 << 20, 1.0f);
    Must(group.AllReduce(x.data(), static_cast<int64_t>(x.size()), DType::kF32, ReduceOp::kSum)
             ->Wait());
    std::printf(
        "a 4 MiB all-reduce sent %llu bytes, %llu through shared memory, %llu through TCP "
        "links\n",
        static_cast<unsigned long long>(group.bytes_sent()),
        static_cast<unsigned long long>(group.shared_bytes_sent()),
        static_cast<unsigned long long>(group.tcp_link_bytes_sent()));
    Must(group.Barrier()->Wait());
    return 0;
  }
  if (scenario == "p2p-order") return P2pOrder(group);
  std::printf("unknown scenario %s\n", scenario.c_str());
  return 2;
}
