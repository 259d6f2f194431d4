// The remote device (backends/remote) against its peers, in one run. The bench starts two
// uopc_device_server processes on loopback: REMOTE:0 as fast as the wire allows and
// REMOTE:1 with --latency-us 100 (every call and batch 100 us late). Each case alternates
// the thing and its peer within every iteration, so that drift hits both alike:
//  - the round trip of one launch of a one-element kernel (launch, then synchronize),
//    against the same on the local CPU device;
//  - 1,000 such launches queued and synchronized once, against 1,000 synchronized one at
//    a time, on REMOTE:0 and REMOTE:1;
//  - copy throughput (in, then out) to REMOTE:0, against the same bytes streamed over raw
//    gRPC (bench/raw_stream.proto, same chunk size, no device) and the local CPU device;
//  - a GPT training step (2 layers, dim 64, batch 8 x 64) on REMOTE:1, against the local step.
// The servers run on the same cores as the bench.
//   bazel run -c opt //bench:remote_bench
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include "bench/raw_stream.grpc.pb.h"
#include "devices/registry.h"
#include "frontend/nn.h"
#include "frontend/optim.h"
#include "rpc/grpc_call.h"
#include "runtime/executor.h"
#include "tests/testing/server_process.h"

namespace uopc {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kChunk = 4 << 20;  // as the remote plugin's copies

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

Device* Get(const std::string& name) {
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice(name);
  if (!d.ok()) {
    std::fprintf(stderr, "remote_bench: %s\n", std::string(d.status().message()).c_str());
    std::exit(1);
  }
  return *d;
}

// out[0] = in[0] + 1
UOp Tiny() {
  UOp out = UOp::Buffer(DType::kF32, 0, 1), in = UOp::Buffer(DType::kF32, 1, 1);
  return UOp::Sink({out.Index(0).Store(in.Index(0).Load() + UOp::Const(DType::kF32, 1.0))});
}

struct TinyLaunch {
  explicit TinyLaunch(Device* d) : device(d), kernels(executor.KernelsFor(d)) {
    Buffer x = *d->Allocate(DType::kF32, 1), y = *d->Allocate(DType::kF32, 1);
    float one = 1;
    (void)d->CopyIn(x, &one, 4);
    launch = KernelLaunch{Tiny(), {y, x}, {}};
    (void)kernels.Run({launch});  // compiles
  }
  absl::Status Once() { return kernels.Launch(launch).status(); }
  Device* device;
  Executor executor{DeviceRegistry::Get()};
  KernelCache& kernels;
  KernelLaunch launch;
};

void BM_OneLaunchRoundTrip(benchmark::State& state) {
  TinyLaunch remote(Get("REMOTE:0")), local(Get("CPU:0"));
  std::vector<double> ratio;
  double remote_s = 0, local_s = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    absl::Status a = remote.Once();
    if (a.ok()) a = remote.device->Synchronize();
    auto t1 = Clock::now();
    absl::Status b = local.Once();
    if (b.ok()) b = local.device->Synchronize();
    auto t2 = Clock::now();
    if (!a.ok() || !b.ok()) state.SkipWithError((a.ok() ? b : a).ToString().c_str());
    remote_s += Seconds(t0, t1);
    local_s += Seconds(t1, t2);
    ratio.push_back(Seconds(t0, t1) / Seconds(t1, t2));
    state.SetIterationTime(Seconds(t0, t1));
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["remote_us"] = remote_s / n * 1e6;
  state.counters["local_us"] = local_s / n * 1e6;
  state.counters["remote/local"] = Median(ratio);
}
BENCHMARK(BM_OneLaunchRoundTrip)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_ThousandLaunchesBatchedAgainstOneAtATime(benchmark::State& state) {
  constexpr int kLaunches = 1000;
  TinyLaunch remote(Get(state.range(0) == 0 ? "REMOTE:0" : "REMOTE:1"));
  std::vector<double> ratio;
  double batched_s = 0, single_s = 0;
  for (auto _ : state) {
    absl::Status s;
    auto t0 = Clock::now();
    for (int i = 0; i < kLaunches && s.ok(); ++i) s = remote.Once();
    if (s.ok()) s = remote.device->Synchronize();
    auto t1 = Clock::now();
    for (int i = 0; i < kLaunches && s.ok(); ++i) {
      s = remote.Once();
      if (s.ok()) s = remote.device->Synchronize();
    }
    auto t2 = Clock::now();
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    batched_s += Seconds(t0, t1);
    single_s += Seconds(t1, t2);
    ratio.push_back(Seconds(t1, t2) / Seconds(t0, t1));
    state.SetIterationTime(Seconds(t0, t1));
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["batched_ms"] = batched_s / n * 1e3;
  state.counters["one_at_a_time_ms"] = single_s / n * 1e3;
  state.counters["speedup"] = Median(ratio);
}
BENCHMARK(BM_ThousandLaunchesBatchedAgainstOneAtATime)
    ->ArgName("latency_us")
    ->Arg(0)
    ->Arg(100)
    ->Iterations(5)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The raw gRPC peer: a server in this process that takes and gives chunks of bytes.
class RawStreamService final : public bench::RawStream::Service {
 public:
  grpc::Status Send(grpc::ServerContext*, grpc::ServerReader<bench::Chunk>* in,
                    bench::Received* out) override {
    uint64_t n = 0;
    for (bench::Chunk c; in->Read(&c);) n += c.data().size();
    out->set_bytes(n);
    return grpc::Status::OK;
  }
  grpc::Status Fetch(grpc::ServerContext*, const bench::FetchRequest* req,
                     grpc::ServerWriter<bench::Chunk>* out) override {
    bench::Chunk c;
    for (uint64_t at = 0; at < req->bytes(); at += req->chunk()) {
      c.mutable_data()->assign(std::min(req->chunk(), req->bytes() - at), 'x');
      if (!out->Write(c)) break;
    }
    return grpc::Status::OK;
  }
};

struct RawPeer {
  RawPeer() {
    grpc::ServerBuilder b;
    ConfigureServer(b);
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&service);
    server = b.BuildAndStart();
    stub = bench::RawStream::NewStub(MakeChannel("127.0.0.1:" + std::to_string(port)));
  }
  ~RawPeer() { server->Shutdown(); }
  // `bytes` there and back, as the device's copy in and copy out.
  bool RoundTrip(const std::vector<char>& bytes, std::vector<char>* back) {
    grpc::ClientContext send_ctx;
    bench::Received got;
    auto writer = stub->Send(&send_ctx, &got);
    bench::Chunk c;
    for (uint64_t at = 0; at < bytes.size(); at += kChunk) {
      c.mutable_data()->assign(bytes.data() + at, std::min<uint64_t>(kChunk, bytes.size() - at));
      if (!writer->Write(c)) break;
    }
    writer->WritesDone();
    if (!writer->Finish().ok() || got.bytes() != bytes.size()) return false;
    grpc::ClientContext fetch_ctx;
    bench::FetchRequest req;
    req.set_bytes(bytes.size());
    req.set_chunk(kChunk);
    auto reader = stub->Fetch(&fetch_ctx, req);
    uint64_t at = 0;
    for (bench::Chunk in; reader->Read(&in); at += in.data().size())
      std::memcpy(back->data() + at, in.data().data(), in.data().size());
    return reader->Finish().ok() && at == bytes.size();
  }
  RawStreamService service;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<bench::RawStream::Stub> stub;
};

void BM_CopyInAndOut(benchmark::State& state) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0));
  Device *remote = Get("REMOTE:0"), *local = Get("CPU:0");
  Buffer rb = *remote->Allocate(DType::kU8, bytes), lb = *local->Allocate(DType::kU8, bytes);
  std::vector<char> data(bytes, 3), back(bytes);
  RawPeer raw;
  std::vector<double> remote_over_raw;
  double remote_s = 0, raw_s = 0, local_s = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    absl::Status s = remote->CopyIn(rb, data.data(), bytes);
    if (s.ok()) s = remote->CopyOut(back.data(), rb, bytes);
    auto t1 = Clock::now();
    bool raw_ok = raw.RoundTrip(data, &back);
    auto t2 = Clock::now();
    if (s.ok()) s = local->CopyIn(lb, data.data(), bytes);
    if (s.ok()) s = local->CopyOut(back.data(), lb, bytes);
    auto t3 = Clock::now();
    if (!s.ok() || !raw_ok) state.SkipWithError(s.ok() ? "raw gRPC stream failed" : s.ToString().c_str());
    remote_s += Seconds(t0, t1);
    raw_s += Seconds(t1, t2);
    local_s += Seconds(t2, t3);
    remote_over_raw.push_back(Seconds(t1, t2) / Seconds(t0, t1));  // of bandwidths
    state.SetIterationTime(Seconds(t0, t1));
  }
  const double moved = 2.0 * bytes * static_cast<double>(state.iterations());
  state.counters["remote_GB/s"] = moved / remote_s / 1e9;
  state.counters["raw_grpc_GB/s"] = moved / raw_s / 1e9;
  state.counters["local_GB/s"] = moved / local_s / 1e9;
  state.counters["remote/raw"] = Median(remote_over_raw);
}
BENCHMARK(BM_CopyInAndOut)
    ->Arg(1 << 20)
    ->Arg(16 << 20)
    ->Arg(64 << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// A training step of a small GPT, its model on `device`.
struct GptStep {
  static constexpr int64_t B = 8, T = 64, V = 65;
  explicit GptStep(const std::string& device) : device(device) {
    Tensor::ManualSeed(0);
    model = std::make_unique<Gpt>(GptConfig{V, T, 64, 2, 2, 0.0});
    model->Split({DeviceRef(device)});
    opt = std::make_unique<AdamW>(model->Parameters(), 1e-3);
    for (int64_t i = 0; i < B * T; ++i)
      xs.push_back(static_cast<int32_t>(i % V)), ys.push_back(static_cast<int32_t>((i * 7) % V));
  }
  float Run() {
    Tensor loss = model->Forward(Tensor::FromVector(xs, {B, T}, DType::kI32, device))
                      .Reshape({B * T, V})
                      .CrossEntropy(Tensor::FromVector(ys, {B * T}, DType::kI32, device));
    loss.Backward();
    opt->Step({&loss});
    return loss.ToVector<float>()[0];
  }
  std::string device;
  std::unique_ptr<Gpt> model;
  std::unique_ptr<AdamW> opt;
  std::vector<int32_t> xs, ys;
};

void BM_GptStepAt100usLatency(benchmark::State& state) {
  GptStep remote("REMOTE:1"), local("CPU:0");
  remote.Run(), local.Run();  // compiles
  std::vector<double> ratio;
  double remote_s = 0, local_s = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    float a = remote.Run();
    auto t1 = Clock::now();
    float b = local.Run();
    auto t2 = Clock::now();
    if (a != b) state.SkipWithError("the remote step's loss differs from the local one");
    remote_s += Seconds(t0, t1);
    local_s += Seconds(t1, t2);
    ratio.push_back(Seconds(t0, t1) / Seconds(t1, t2));
    state.SetIterationTime(Seconds(t0, t1));
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["remote_ms"] = remote_s / n * 1e3;
  state.counters["local_ms"] = local_s / n * 1e3;
  state.counters["remote/local"] = Median(ratio);
}
BENCHMARK(BM_GptStepAt100usLatency)->Iterations(20)->UseManualTime()->Unit(benchmark::kMillisecond);

// The runfiles (bazel run) or the folder beside this binary.
std::string ServerBinary(const char* argv0) {
  std::string exe = argv0;
  for (std::string p : {exe + ".runfiles/uopc/tools/uopc_device_server",
                        exe.substr(0, exe.rfind('/') + 1) + "uopc_device_server"})
    if (access(p.c_str(), X_OK) == 0) return p;
  return "uopc_device_server";
}

}  // namespace
}  // namespace uopc

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::string token = std::to_string(std::random_device{}());
  setenv("UOPC_DEVICE_TOKEN", token.c_str(), 1);
  const std::string server = uopc::ServerBinary(argv[0]);
  uopc::testing::ServerProcess fast(server, {"--port", "0"}),
      slow(server, {"--port", "0", "--latency-us", "100"});
  if (!fast.ok() || !slow.ok()) {
    std::fprintf(stderr, "remote_bench: cannot start %s\n", server.c_str());
    return 1;
  }
  setenv("UOPC_REMOTE_DEVICES", (fast.address() + "," + slow.address()).c_str(), 1);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
