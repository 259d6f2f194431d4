// The GPT's training on several processes against one, in one run: gpt_train under
// uopc_launch with data parallelism over 2 and 4 ranks, and alone, one after the other in
// every iteration (the same model, global batch and steps). Reports tokens/s of each
// layout, its ratio to one process, and the bytes a rank sent a step next to what a ring
// all-reduce of the gradients must send. On a 2-core machine 4 processes are overloaded:
// their figure says what that costs, not what 4 cores would do.
//   bazel run -c opt //bench:layouts_bench
#include <cstdio>
#include <regex>
#include <string>

#include <benchmark/benchmark.h>

namespace {

std::string Runfile(const char* argv0, const std::string& path) {
  return std::string(argv0) + ".runfiles/uopc/" + path;
}

std::string g_argv0;

struct Run {
  double tokens_per_s = 0, sent_kib = 0, theory_kib = 0;
  bool ok = false;
};

Run Train(int nproc) {
  const std::string train = Runfile(g_argv0.c_str(), "examples/gpt/gpt_train") +
                            " --batch 16 --steps 40 --log-every 40 --checkpoint " + std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/layouts_bench.safetensors";
  const std::string cmd =
      nproc == 1 ? train
                 : Runfile(g_argv0.c_str(), "distributed/uopc_launch") + " --nproc " +
                       std::to_string(nproc) + " -- " + train;
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {};
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  Run r;
  r.ok = pclose(p) == 0;
  std::smatch m;
  if (std::regex_search(out, m, std::regex("step +40/40 .* ([0-9]+) tok/s")))
    r.tokens_per_s = std::stod(m[1]);
  if (std::regex_search(out, m, std::regex("sent ([0-9.]+) KiB a step .* needs ([0-9.]+) KiB"))) {
    r.sent_kib = std::stod(m[1]);
    r.theory_kib = std::stod(m[2]);
  }
  if (!r.ok || r.tokens_per_s == 0) std::fprintf(stderr, "layouts_bench: %s\n%s\n", cmd.c_str(), out.c_str());
  return r;
}

void BM_DataParallelAgainstOneProcess(benchmark::State& state) {
  double one = 0, two = 0, four = 0;
  Run r2, r4;
  for (auto _ : state) {
    Run r1 = Train(1);
    r2 = Train(2);
    r4 = Train(4);
    if (!r1.ok || !r2.ok || !r4.ok) state.SkipWithError("a training run failed (see stderr)");
    one += r1.tokens_per_s, two += r2.tokens_per_s, four += r4.tokens_per_s;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["1proc_tok/s"] = one / n;
  state.counters["dp2_tok/s"] = two / n;
  state.counters["dp4_tok/s"] = four / n;
  state.counters["dp2/1proc"] = two / one;
  state.counters["dp4/1proc"] = four / one;
  state.counters["dp2_sent_KiB"] = r2.sent_kib;
  state.counters["dp2_theory_KiB"] = r2.theory_kib;
  state.counters["dp4_sent_KiB"] = r4.sent_kib;
  state.counters["dp4_theory_KiB"] = r4.theory_kib;
}
BENCHMARK(BM_DataParallelAgainstOneProcess)->Iterations(3)->Unit(benchmark::kSecond);

}  // namespace

int main(int argc, char** argv) {
  g_argv0 = argv[0];
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
