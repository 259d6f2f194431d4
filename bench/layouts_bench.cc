// The GPT's training on several processes against one, in one run: gpt_train alone and
// under uopc_launch in every layout of 2 and 4 ranks (data, tensor and pipeline parallelism,
// and pairs of them), one after the other in every iteration (the same model, global batch
// and steps). Each trains 100 steps (the tokens/s that gpt_train prints count its start:
// joining the job, building the plans). Reports tokens/s of each layout, its ratio to one
// process, and the bytes rank 0 sent a step next to what the layout must send in theory
// (gpt_train says both). On a 2-core machine 4 processes are overloaded: their figure says
// what that costs, not what 4 cores would do.
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

double KiB(const std::string& number, const std::string& unit) {
  const double v = std::stod(number);
  return unit == "B" ? v / 1024 : unit == "MiB" ? v * 1024 : unit == "GiB" ? v * 1048576 : v;
}

Run Train(int nproc, const std::string& layout) {
  const std::string train = Runfile(g_argv0.c_str(), "examples/gpt/gpt_train") +
                            " --batch 16 --steps 100 --log-every 100 " + layout + " --checkpoint " +
                            std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                            "/layouts_bench.safetensors";
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
  if (std::regex_search(out, m, std::regex("step +100/100 .* ([0-9]+) tok/s")))
    r.tokens_per_s = std::stod(m[1]);
  if (std::regex_search(out, m,
                        std::regex("sent ([0-9.]+) (B|KiB|MiB|GiB) a step to the other ranks "
                                   "\\(in theory ([0-9.]+) (B|KiB|MiB|GiB)"))) {
    r.sent_kib = KiB(m[1], m[2]);
    r.theory_kib = KiB(m[3], m[4]);
  }
  if (!r.ok || r.tokens_per_s == 0)
    std::fprintf(stderr, "layouts_bench: %s\n%s\n", cmd.c_str(), out.c_str());
  return r;
}

struct Layout {
  const char* name;
  int nproc;
  const char* flags;
};
constexpr Layout kLayouts[] = {
    {"1proc", 1, ""},        {"dp2", 2, ""},          {"tp2", 2, "--tp 2"},
    {"pp2", 2, "--pp 2"},    {"dp4", 4, ""},          {"tp4", 4, "--tp 4"},
    {"dp2tp2", 4, "--tp 2"}, {"tp2pp2", 4, "--tp 2 --pp 2"}, {"dp2pp2", 4, "--pp 2"}};

void BM_LayoutsAgainstOneProcess(benchmark::State& state) {
  constexpr size_t n = sizeof kLayouts / sizeof kLayouts[0];
  double rate[n] = {};
  Run last[n];
  for (auto _ : state)
    for (size_t i = 0; i < n; ++i) {  // alternating: every layout once an iteration
      last[i] = Train(kLayouts[i].nproc, kLayouts[i].flags);
      if (!last[i].ok) state.SkipWithError("a training run failed (see stderr)");
      rate[i] += last[i].tokens_per_s;
    }
  for (size_t i = 0; i < n; ++i) {
    const std::string name = kLayouts[i].name;
    state.counters[name + "_tok/s"] = rate[i] / static_cast<double>(state.iterations());
    if (i == 0) continue;
    state.counters[name + "/1proc"] = rate[i] / rate[0];
    state.counters[name + "_sent_KiB"] = last[i].sent_kib;
    state.counters[name + "_theory_KiB"] = last[i].theory_kib;
  }
}
BENCHMARK(BM_LayoutsAgainstOneProcess)->Iterations(2)->Unit(benchmark::kSecond);

}  // namespace

int main(int argc, char** argv) {
  g_argv0 = argv[0];
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
