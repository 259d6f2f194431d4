// gpt_train and gpt_generate as a user runs them: real processes, real files.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include <gtest/gtest.h>

#include "core/json.h"
#include "frontend/safetensors.h"
#include "tests/testing/command.h"
#include "tests/testing/gpt_output.h"
#include "tests/testing/server_process.h"

namespace {

using uopc::testing::CommandResult;
using uopc::testing::Losses;
using uopc::testing::PlansCompiled;
using uopc::testing::RunCommand;
using uopc::testing::Runfile;

std::string Bin(const std::string& name) { return Runfile("examples/gpt/" + name); }
std::string Tmp(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

const std::string kSmall =
    " --layers 1 --dim 32 --heads 2 --context 32 --batch 8 --lr 1e-2 --warmup 5 --log-every 10";

// The loss of the last progress line.
double LastLoss(const std::string& out) {
  std::smatch m;
  std::string s = out;
  double loss = -1;
  std::regex re("loss ([0-9.]+)");
  for (std::sregex_iterator it(s.begin(), s.end(), re), end; it != end; ++it)
    loss = std::stod((*it)[1]);
  return loss;
}

// gpt_generate's text: its output without the summary line it ends with.
std::string Text(const std::string& out) {
  size_t at = out.rfind("gpt_generate: ");
  return at == std::string::npos ? out : out.substr(0, at);
}

std::string Bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(GptTrain, HelpListsEveryFlagWithItsDefault) {
  CommandResult r = RunCommand(Bin("gpt_train") + " --help");
  EXPECT_EQ(r.status, 0);
  for (const char* f :
       {"--data (default /usr/share/common-licenses/GPL-3)", "--steps (default 300, 1 to ",
        "--lr (default 0.003, 0 to 10)", "--resume (default false)", "--seed (default 0, 0 to "})
    EXPECT_NE(r.out.find(f), std::string::npos) << f << "\n" << r.out;
  CommandResult bad = RunCommand(Bin("gpt_train") + " --stepz 3");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.out, "unknown flag --stepz (see --help)\n");
  EXPECT_EQ(RunCommand(Bin("gpt_train") + " --steps lots").out,
            "--steps=lots: expected an integer from 1 to 1000000000 (see --help)\n");
  EXPECT_EQ(RunCommand(Bin("gpt_train") + " --data /no/such/file").out,
            "gpt_train: corpus /no/such/file: cannot open: No such file or directory\n");
}

TEST(GptTrain, LearnsBelowTheUnigramEntropyAndResumesExactly) {
  // the unigram entropy of the default corpus is 3.17 nats per character
  CommandResult full = RunCommand(Bin("gpt_train") + kSmall + " --steps 100 --checkpoint " +
                                  Tmp("full.safetensors"));
  ASSERT_EQ(full.status, 0) << full.out;
  EXPECT_LT(LastLoss(full.out), 2.9) << full.out;
  EXPECT_NE(full.out.find("step   100/100"), std::string::npos) << full.out;
  // interrupted after 60 steps, then resumed: the same loss at step 100 as the run in one go
  CommandResult a = RunCommand(Bin("gpt_train") + kSmall +
                               " --steps 100 --stop-at 60 --checkpoint " + Tmp("part.safetensors"));
  ASSERT_EQ(a.status, 0) << a.out;
  CommandResult b = RunCommand(Bin("gpt_train") + kSmall + " --steps 100 --resume --checkpoint " +
                               Tmp("part.safetensors"));
  ASSERT_EQ(b.status, 0) << b.out;
  EXPECT_NE(b.out.find("resuming at step 60"), std::string::npos) << b.out;
  EXPECT_EQ(LastLoss(b.out), LastLoss(full.out)) << a.out << b.out << full.out;
  // and generation from it
  CommandResult g1 = RunCommand(Bin("gpt_generate") + " --checkpoint " + Tmp("full.safetensors") +
                                " --prompt 'The ' --tokens 40 --seed 3");
  CommandResult g2 = RunCommand(Bin("gpt_generate") + " --checkpoint " + Tmp("full.safetensors") +
                                " --prompt 'The ' --tokens 40 --seed 3");
  ASSERT_EQ(g1.status, 0) << g1.out;
  EXPECT_EQ(Text(g1.out), Text(g2.out));  // the same seed, the same text
  EXPECT_EQ(Text(g1.out).size(), 4 + 40 + 1u);
  EXPECT_EQ(g1.out.rfind("The ", 0), 0u);
  EXPECT_NE(g1.out.find("gpt_generate: 40 tokens in "), std::string::npos) << g1.out;
  EXPECT_NE(g1.out.find(" 2 plans built, KV cache"), std::string::npos) << g1.out;
  // greedy, with the cache and without: the same text
  const std::string greedy = " --checkpoint " + Tmp("full.safetensors") +
                             " --prompt 'The ' --tokens 40 --temperature 0";
  CommandResult cached = RunCommand(Bin("gpt_generate") + greedy);
  CommandResult recomputed = RunCommand(Bin("gpt_generate") + greedy + " --no-cache");
  ASSERT_EQ(recomputed.status, 0) << recomputed.out;
  EXPECT_EQ(Text(cached.out), Text(recomputed.out));
  EXPECT_NE(recomputed.out.find("no cache"), std::string::npos) << recomputed.out;
  CommandResult topk = RunCommand(Bin("gpt_generate") + " --checkpoint " + Tmp("full.safetensors") +
                                  " --top-k 1 --temperature 0.5 --tokens 20");
  EXPECT_EQ(topk.status, 0) << topk.out;
  CommandResult unknown = RunCommand(Bin("gpt_generate") + " --checkpoint " +
                                     Tmp("full.safetensors") + " --prompt '\xe2\x82\xac'");
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.out.find("is not in the model's vocabulary"), std::string::npos) << unknown.out;
}

// Steps run from the captured plan (the default) end with the checkpoint of steps that build
// their graphs, byte for byte: in f32, in bf16 with clipping off, and in f16 (the loss
// scaler's state among what the step updates); with dropout (masks drawn on the host) nothing
// is captured, without a word.
TEST(GptTrain, CapturedStepsEndAsStepsThatBuildTheirGraphs) {
  for (const std::string flags :
       {std::string(" --precision f32"), std::string(" --precision bf16 --clip 0"),
        std::string(" --precision f16")}) {
    CommandResult eager = RunCommand(Bin("gpt_train") + kSmall + flags +
                                     " --steps 12 --capture=false --checkpoint " + Tmp("eager.st"));
    CommandResult captured = RunCommand(Bin("gpt_train") + kSmall + flags +
                                        " --steps 12 --checkpoint " + Tmp("captured.st"));
    ASSERT_EQ(eager.status, 0) << eager.out;
    ASSERT_EQ(captured.status, 0) << captured.out;
    EXPECT_EQ(captured.out.find("builds its graph"), std::string::npos) << captured.out;
    EXPECT_EQ(Losses(captured.out), Losses(eager.out)) << flags;
    const std::string a = Bytes(Tmp("eager.st")), b = Bytes(Tmp("captured.st"));
    EXPECT_GT(a.size(), 1000u);
    EXPECT_TRUE(a == b) << "the checkpoints differ" << flags << "\n" << eager.out << captured.out;
  }
  CommandResult dropout = RunCommand(Bin("gpt_train") + kSmall +
                                     " --steps 3 --dropout 0.1 "
                                     "--checkpoint " +
                                     Tmp("dropout.st"));
  EXPECT_EQ(dropout.status, 0) << dropout.out;
  EXPECT_EQ(dropout.out.find("builds its graph"), std::string::npos) << dropout.out;
}

// uopc_launch --max-restarts with gpt_train --resume-if-present (one command line for every
// start): rank 0 killed (SIGKILL) once it has printed step 15 of 40, checkpoints every 10
// steps: the launcher stops rank 1, starts the job again, it resumes at step 10 (the batches
// follow from the step), and its final checkpoint is the uninterrupted run's, bit for bit.
TEST(GptTrain, AJobRestartedAfterAKilledRankEndsAsTheUninterruptedRun) {
  const std::string kill_at = Tmp("kill_at.sh");
  {
    std::ofstream f(kill_at);
    f << "#!/usr/bin/env bash\n"  // kill_at.sh MARK STEP PROGRAM ARGS...
         "mark=$1 step=$2; shift 2\n"
         "if [ \"$RANK\" != 0 ] || [ -e \"$mark\" ]; then exec \"$@\"; fi\n"
         ": > \"$mark\"\n"
         "coproc PROGRAM { exec \"$@\"; }\n"
         "pid=$PROGRAM_PID\n"
         "while IFS= read -r line <&\"${PROGRAM[0]}\"; do\n"
         "  printf '%s\\n' \"$line\"\n"
         "  if [[ $line =~ ^step\\ +$step/ ]]; then kill -9 \"$pid\"; wait \"$pid\"; exit 137; fi\n"
         "done\n"
         "wait \"$pid\"\n";
  }
  ASSERT_EQ(RunCommand("chmod +x " + kill_at).status, 0);
  const std::string launch = Runfile("distributed/uopc_launch") + " --nproc 2 --grace 1 ";
  const std::string args = kSmall + " --steps 40 --save-every 10 --log-every 5";
  CommandResult straight = RunCommand(launch + "-- " + Bin("gpt_train") + args + " --checkpoint " +
                                          Tmp("straight.safetensors"),
                                      300);
  ASSERT_EQ(straight.status, 0) << straight.out;
  CommandResult restarted =
      RunCommand(launch + "--max-restarts 2 -- " + kill_at + " " + Tmp("killed") + " 15 " +
                     Bin("gpt_train") + args + " --resume-if-present --checkpoint " +
                     Tmp("restarted.safetensors"),
                 300);
  ASSERT_EQ(restarted.status, 0) << restarted.out;
  EXPECT_NE(restarted.out.find("uopc_launch: rank 0 exited with status 137"), std::string::npos)
      << restarted.out;
  EXPECT_NE(restarted.out.find("restarting the job (restart 1 of 2: rank 0 failed)"),
            std::string::npos)
      << restarted.out;
  EXPECT_NE(restarted.out.find("resuming at step 10"), std::string::npos) << restarted.out;
  const std::string a = Bytes(Tmp("straight.safetensors")), b = Bytes(Tmp("restarted.safetensors"));
  EXPECT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b) << "the checkpoints differ\n" << straight.out << restarted.out;
}

// Under uopc_launch, two ranks with half a batch each follow the single-process run.
TEST(GptTrain, DataParallelOverTwoRanksFollowsTheSingleProcessRun) {
  const std::string args = kSmall + " --steps 30";
  CommandResult one =
      RunCommand(Bin("gpt_train") + args + " --checkpoint " + Tmp("one.safetensors"));
  ASSERT_EQ(one.status, 0) << one.out;
  CommandResult two =
      RunCommand(Runfile("distributed/uopc_launch") + " --nproc 2 -- " + Bin("gpt_train") + args +
                     " --checkpoint " + Tmp("two.safetensors"),
                 300);
  ASSERT_EQ(two.status, 0) << two.out;
  EXPECT_NE(two.out.find("[rank 0] gpt_train: "), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("data-parallel over 2 groups"), std::string::npos) << two.out;
  EXPECT_EQ(two.out.find("[rank 1] step"), std::string::npos) << two.out;  // rank 0 speaks
  std::vector<double> a = Losses(one.out), b = Losses(two.out);
  ASSERT_EQ(a.size(), 4u) << one.out;
  ASSERT_EQ(b.size(), a.size()) << two.out;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1.5e-4) << "progress line " << i;
  // a rank compiles what one process does: the all-reduces are steps of the step's plan
  EXPECT_EQ(PlansCompiled(two.out), PlansCompiled(one.out)) << one.out << two.out;
  // what it sent a step is what a ring all-reduce of the gradients must send
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      two.out, m,
      std::regex("sent ([0-9.]+) KiB a step to the other ranks \\(in theory ([0-9.]+) KiB: ")))
      << two.out;
  EXPECT_NEAR(std::stod(m[1]), std::stod(m[2]), 0.02 * std::stod(m[2])) << m[0];
  // in small buckets (several all-reduces, each started as soon as its gradients are made):
  // the same run
  CommandResult buckets =
      RunCommand(Runfile("distributed/uopc_launch") + " --nproc 2 -- " + Bin("gpt_train") + args +
                     " --bucket-mb 0.01 --checkpoint " + Tmp("buckets.safetensors"),
                 300);
  ASSERT_EQ(buckets.status, 0) << buckets.out;
  EXPECT_EQ(Losses(buckets.out), b) << buckets.out;
  EXPECT_EQ(PlansCompiled(buckets.out), PlansCompiled(one.out)) << buckets.out;
}

// The largest difference between two checkpoints' tensors (f32, the same names and shapes),
// but for the key biases (the middle third of each c_attn.bias), which are expected within
// 1e-4 here: their gradient is zero up to rounding (a constant added to every key of a row
// leaves its softmax as it is), and Adam turns rounding that differs with the layout into
// steps, so they drift furthest of all the weights.
double MaxDifference(const std::string& a_path, const std::string& b_path) {
  absl::StatusOr<uopc::Checkpoint> a = uopc::LoadSafetensors(a_path),
                                   b = uopc::LoadSafetensors(b_path);
  EXPECT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  if (!a.ok() || !b.ok()) return 1e9;
  EXPECT_EQ(a->tensors.size(), b->tensors.size());
  double worst = 0;
  for (const auto& [name, t] : a->tensors) {
    const uopc::HostTensor* u = b->Find(name);
    EXPECT_TRUE(u != nullptr && u->bytes.size() == t.bytes.size()) << name;
    if (!u || u->bytes.size() != t.bytes.size()) return 1e9;
    const float* x = reinterpret_cast<const float*>(t.bytes.data());
    const float* y = reinterpret_cast<const float*>(u->bytes.data());
    const size_t n = t.bytes.size() / 4;
    const bool key_bias = name.ends_with("attn.c_attn.bias");
    for (size_t i = 0; i < n; ++i) {
      const double d = std::abs(x[i] - y[i]);
      if (key_bias && i >= n / 3 && i < 2 * n / 3)
        EXPECT_LE(d, 1e-4) << name << "[" << i << "]";
      else
        worst = std::max(worst, d);
    }
  }
  return worst;
}

// A layout of gpt_train under uopc_launch: how many ranks, its flags, and what it says of
// itself; `theory`: it sends what the layout must, as it says (with --tp x --pp, the backward
// phase's recomputed forward pass all-reduces its activations again).
struct Layout {
  int nproc;
  std::string flags, says;
  bool theory = true;
  double tolerance = 1e-5;  // of the checkpoint's weights against the single process's
};

// Each layout prints the single-process run's losses (`args`, 20 steps), saves a checkpoint
// that is the single-process one to 1e-5 and that one process samples from, and sends what
// it says; a run stopped under `resume_from` after 10 steps and resumed in one process, and
// one the other way resumed under `resume_into`, end at the single-process checkpoint.
void ExpectLayoutsFollowOneProcess(const std::string& tag, const std::string& args,
                                   const std::vector<Layout>& layouts,
                                   const std::string& resume_from, const std::string& resume_into) {
  auto launch = [&](int nproc, const std::string& more) {
    return RunCommand(Runfile("distributed/uopc_launch") + " --nproc " + std::to_string(nproc) +
                          " -- " + Bin("gpt_train") + args + more,
                      600);
  };
  const std::string single = Tmp(tag + "1.safetensors");
  CommandResult one = RunCommand(Bin("gpt_train") + args + " --checkpoint " + single);
  ASSERT_EQ(one.status, 0) << one.out;
  const std::vector<double> want = Losses(one.out);
  ASSERT_EQ(want.size(), 20u) << one.out;
  for (const Layout& l : layouts) {
    const std::string ckpt = Tmp(tag + std::to_string(l.nproc) + ".safetensors");
    CommandResult r = launch(l.nproc, l.flags + " --checkpoint " + ckpt);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find(l.says), std::string::npos) << r.out;
    EXPECT_EQ(Losses(r.out), want) << l.flags << "\n" << r.out;
    EXPECT_LE(MaxDifference(single, ckpt), l.tolerance) << l.flags;
    CommandResult g = RunCommand(Bin("gpt_generate") + " --checkpoint " + ckpt + " --tokens 5");
    EXPECT_EQ(g.status, 0) << g.out;  // one process samples from it
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m,
                                  std::regex("sent ([0-9.]+) KiB a step to the other "
                                             "ranks \\(in theory ([0-9.]+) KiB")))
        << r.out;
    if (l.theory) {
      EXPECT_NEAR(std::stod(m[1]), std::stod(m[2]), 0.02 * std::stod(m[2])) << m[0];
    }
  }
  // stopped under a layout after 10 steps, resumed in one process: the one-process checkpoint
  const std::string stopped = Tmp(tag + "r.safetensors"), back = Tmp(tag + "s.safetensors");
  CommandResult a = launch(2, resume_from + " --stop-at 10 --checkpoint " + stopped);
  ASSERT_EQ(a.status, 0) << a.out;
  CommandResult b = RunCommand(Bin("gpt_train") + args + " --resume --checkpoint " + stopped);
  ASSERT_EQ(b.status, 0) << b.out;
  EXPECT_NE(b.out.find("resuming at step 10"), std::string::npos) << b.out;
  EXPECT_LE(MaxDifference(single, stopped), 1e-5);
  // and the other way: a one-process checkpoint resumed under a layout
  CommandResult c = RunCommand(Bin("gpt_train") + args + " --stop-at 10 --checkpoint " + back);
  ASSERT_EQ(c.status, 0) << c.out;
  CommandResult d = launch(2, resume_into + " --resume --checkpoint " + back);
  ASSERT_EQ(d.status, 0) << d.out;
  EXPECT_LE(MaxDifference(single, back), 1e-5);
}

// Megatron tensor parallelism, alone and with data parallelism: the ranks follow the
// single-process run step for step (the same printed losses), and the checkpoint rank 0
// gathers is the single-process one to 1e-5, which another layout resumes.
TEST(GptTrain, TensorParallelLayoutsFollowTheSingleProcessRun) {
  ExpectLayoutsFollowOneProcess(
      "tp", kSmall + " --steps 20 --log-every 1",
      {Layout{2, " --tp 2", "tensor-parallel over 2 ranks"},
       Layout{4, " --tp 2 --dp 2", "data-parallel over 2 groups, tensor-parallel over 2 ranks"}},
      " --tp 2", " --tp 2");
}

// Pipeline parallelism, with both schedules and composed with tensor and data parallelism:
// the ranks follow the single-process run step for step, and the checkpoint that rank 0
// gathers from the stages is the single-process one to 1e-5, which another layout resumes.
// (The block on the first stage, ln_f and the head on the second. With more layers, every
// layout that splits the batch, dp2 too, drifts further than 1e-5 in 20 steps at this rate:
// the key bias, whose gradient is zero up to rounding, takes Adam steps from the rounding;
// so do --pp 2 --tp 2's, whose sums of products, fused (one rounding a step), end up to
// 1.3e-5 apart: 2e-5 for those.)
TEST(GptTrain, PipelineLayoutsFollowTheSingleProcessRun) {
  ExpectLayoutsFollowOneProcess(
      "pp", kSmall + " --steps 20 --log-every 1",
      {Layout{2, " --pp 2 --schedule gpipe",
              "pipeline-parallel over 2 stages (2 micro-batches, gpipe)"},
       Layout{2, " --pp 2 --micro-batches 4",
              "pipeline-parallel over 2 stages (4 micro-batches, 1f1b)"},
       Layout{4, " --pp 2 --tp 2",
              "pipeline-parallel over 2 stages (2 micro-batches, 1f1b), tensor-parallel over 2 "
              "ranks",
              false, 2e-5},
       Layout{4, " --pp 2 --dp 2", "data-parallel over 2 groups, pipeline-parallel over 2 stages"},
       Layout{8, " --dp 2 --pp 2 --tp 2",
              "data-parallel over 2 groups, pipeline-parallel over 2 stages (2 micro-batches, "
              "1f1b), tensor-parallel over 2 ranks",
              false, 2e-5}},
      " --pp 2", " --pp 2 --schedule gpipe");
}

// Tied embeddings: the head is the first stage's wte, so the logits and the loss are made
// there (the last stage's activations come back to it).
TEST(GptTrain, PipelineWithTiedEmbeddingsFollowsTheSingleProcessRun) {
  const std::string args = kSmall + " --tie-embeddings --steps 10 --log-every 1";
  CommandResult one = RunCommand(Bin("gpt_train") + args + " --checkpoint " + Tmp("t1.safetensors"));
  ASSERT_EQ(one.status, 0) << one.out;
  CommandResult pp = RunCommand(Runfile("distributed/uopc_launch") + " --nproc 2 -- " +
                                    Bin("gpt_train") + args + " --pp 2 --checkpoint " +
                                    Tmp("t2.safetensors"),
                                300);
  ASSERT_EQ(pp.status, 0) << pp.out;
  // (as printed, to 4 decimals: a sum in another order may round the other way)
  const std::vector<double> want = Losses(one.out), got = Losses(pp.out);
  ASSERT_EQ(got.size(), 10u) << pp.out;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1.01e-4) << i;
  EXPECT_LE(MaxDifference(Tmp("t1.safetensors"), Tmp("t2.safetensors")), 1e-5);
  EXPECT_NE(pp.out.find("sent 64.0 KiB a step to the other ranks (in theory 64.0 KiB"),
            std::string::npos)
      << pp.out;
}

TEST(GptTrain, RefusesALayoutThatDoesNotFitTheJob) {
  CommandResult r = RunCommand(Bin("gpt_train") + kSmall + " --steps 1 --tp 2");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out,
            "gpt_train: --tp 2 does not divide the ranks: this process is a job of 1 rank (start "
            "it under uopc_launch --nproc N)\n");
  CommandResult dp = RunCommand(Runfile("distributed/uopc_launch") + " --nproc 2 -- " +
                                    Bin("gpt_train") + kSmall + " --steps 1 --dp 2 --tp 2",
                                120);
  EXPECT_NE(dp.status, 0);
  EXPECT_NE(dp.out.find("gpt_train: --dp 2 x --tp 2 makes 4 ranks; the job has 2 ranks"),
            std::string::npos)
      << dp.out;
  CommandResult heads = RunCommand(Runfile("distributed/uopc_launch") + " --nproc 3 -- " +
                                       Bin("gpt_train") + kSmall + " --steps 1 --tp 3",
                                   120);
  EXPECT_NE(heads.status, 0);
  EXPECT_NE(heads.out.find("--heads 2 do not split over --tp 3 ranks"), std::string::npos)
      << heads.out;
  CommandResult pp = RunCommand(Runfile("distributed/uopc_launch") + " --nproc 2 -- " +
                                    Bin("gpt_train") + kSmall + " --steps 1 --pp 2 --tp 2",
                                120);
  EXPECT_NE(pp.status, 0);
  EXPECT_NE(pp.out.find("gpt_train: --pp 2 x --tp 2 does not divide the ranks: the job has 2 ranks"),
            std::string::npos)
      << pp.out;
  CommandResult micro = RunCommand(Bin("gpt_train") + kSmall + " --steps 1 --micro-batches 3");
  EXPECT_EQ(micro.status, 1);
  EXPECT_EQ(micro.out,
            "gpt_train: --batch 8 does not split over 1 data-parallel groups x 3 micro-batches\n");
  CommandResult schedule = RunCommand(Bin("gpt_train") + kSmall + " --steps 1 --schedule zb");
  EXPECT_EQ(schedule.status, 1);
  EXPECT_EQ(schedule.out,
            "gpt_train: --schedule: no pipeline schedule 'zb'; expected gpipe or 1f1b\n");
}

// UOPC_TRACE under uopc_launch: one trace of both ranks, each with its plans, kernels,
// compiles and collectives on their tracks, which a trace viewer reads (valid JSON).
TEST(GptTrain, UopcTraceUnderUopcLaunchIsOneTraceOfEveryRank) {
  const std::string trace = Tmp("trace.json");
  CommandResult r = RunCommand("UOPC_TRACE=" + trace + " " + Runfile("distributed/uopc_launch") +
                                   " --nproc 2 -- " + Bin("gpt_train") + kSmall + " --steps 2",
                               300);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("uopc_launch: the trace of the ranks is in " + trace), std::string::npos)
      << r.out;
  for (const char* part : {".rank0", ".rank1"})
    EXPECT_FALSE(std::ifstream(trace + part).good()) << "left behind: " << trace << part;
  std::ifstream in(trace);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  absl::StatusOr<uopc::Json> json = uopc::ParseJson(text);
  ASSERT_TRUE(json.ok()) << json.status() << "\n" << text.substr(0, 2000);
  const uopc::Json* events = json->Find("traceEvents");
  ASSERT_TRUE(events != nullptr && events->kind == uopc::Json::Kind::kArray);
  // per rank: the event kinds, the track names, and what a kernel and a collective say
  std::map<int, std::set<std::string>> kinds, tracks, processes;
  std::map<int, double> collective_bytes;
  for (const uopc::Json& e : events->array) {
    const uopc::Json *ph = e.Find("ph"), *pid = e.Find("pid"), *name = e.Find("name");
    ASSERT_TRUE(ph && pid && name && pid->IsInt(0, 1)) << "an event without ph, pid 0/1, name";
    const int rank = static_cast<int>(pid->number);
    const uopc::Json* args = e.Find("args");
    if (ph->str == "M") {
      ASSERT_TRUE(args && args->Find("name"));
      (name->str == "process_name" ? processes : tracks)[rank].insert(args->Find("name")->str);
      continue;
    }
    ASSERT_EQ(ph->str, "X");
    const uopc::Json *cat = e.Find("cat"), *ts = e.Find("ts"), *dur = e.Find("dur");
    ASSERT_TRUE(cat && ts && dur && ts->number > 0 && dur->number >= 0 && args);
    kinds[rank].insert(cat->str);
    if (cat->str == "kernel" || cat->str == "copy") {
      ASSERT_TRUE(args->Find("device") && args->Find("bytes")) << name->str;
      EXPECT_EQ(args->Find("device")->str, "CPU:0");
      EXPECT_GT(args->Find("bytes")->number, 0) << name->str;
    }
    if (cat->str == "collective") {
      ASSERT_TRUE(args->Find("bytes sent")) << name->str;
      collective_bytes[rank] += args->Find("bytes sent")->number;
    }
  }
  for (int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(processes[rank], std::set<std::string>{"rank " + std::to_string(rank)});
    for (const char* kind : {"plan", "kernel", "compile", "collective"})
      EXPECT_TRUE(kinds[rank].contains(kind)) << kind;
    for (const char* track : {"plans", "CPU:0", "collectives"})
      EXPECT_TRUE(tracks[rank].contains(track)) << track;
    EXPECT_GT(collective_bytes[rank], 0);
  }
  // tools/trace_svg.py draws it (the README's picture)
  CommandResult svg = RunCommand("/usr/bin/python3 " + Runfile("tools/trace_svg.py") + " " + trace +
                                 " " + Tmp("trace.svg") + " --steps 1");
  EXPECT_EQ(svg.status, 0) << svg.out;
  EXPECT_NE(svg.out.find("trace_svg: "), std::string::npos) << svg.out;
  std::ifstream drawn(Tmp("trace.svg"));
  std::string head;
  std::getline(drawn, head);
  EXPECT_EQ(head.rfind("<svg ", 0), 0u) << head;
}

// --device: on another device, and split over two as a pipeline, the same run.
TEST(GptTrain, OnAnotherDeviceOrSplitOverTwoTheLossesAreTheSame) {
  const std::string args = kSmall + " --layers 2 --steps 20 --log-every 5";
  const std::string two = "env UOPC_CPU_DEVICES=2 ";
  CommandResult one = RunCommand(Bin("gpt_train") + args + " --checkpoint " + Tmp("d0.safetensors"));
  ASSERT_EQ(one.status, 0) << one.out;
  CommandResult other = RunCommand(two + Bin("gpt_train") + args + " --device CPU:1 --checkpoint " +
                                   Tmp("d1.safetensors"));
  ASSERT_EQ(other.status, 0) << other.out;
  EXPECT_NE(other.out.find(", on CPU:1"), std::string::npos) << other.out;
  CommandResult split = RunCommand(two + Bin("gpt_train") + args +
                                   " --device CPU:0,CPU:1 --checkpoint " + Tmp("d01.safetensors"));
  ASSERT_EQ(split.status, 0) << split.out;
  ASSERT_EQ(Losses(one.out).size(), 5u) << one.out;  // step 1, then every 5
  EXPECT_EQ(Losses(other.out), Losses(one.out)) << other.out;
  EXPECT_EQ(Losses(split.out), Losses(one.out)) << split.out;
  // the checkpoint of a split run loads anywhere, and samples the same text
  const std::string gen = " --prompt 'The ' --tokens 30 --seed 2 --checkpoint ";
  CommandResult g0 = RunCommand(Bin("gpt_generate") + gen + Tmp("d0.safetensors"));
  CommandResult g1 = RunCommand(two + Bin("gpt_generate") + gen + Tmp("d01.safetensors") +
                                " --device CPU:1");
  ASSERT_EQ(g0.status, 0) << g0.out;
  EXPECT_EQ(Text(g1.out), Text(g0.out));
  CommandResult bad = RunCommand(Bin("gpt_train") + args + " --device CPU:5");
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.out.rfind("gpt_train: no device CPU:5 (devices: CPU:0", 0), 0u) << bad.out;
}

// --precision bf16 and f16 (matmuls and activations in the half, f32 sums and master
// weights; f16 with loss scaling): the loss curve of the f32 run within 2% at every logged
// step, greedy generation in bf16 giving the f32 text (or parting from it only at a near
// tie), and a checkpoint resumed in another precision.
TEST(GptTrain, HalfPrecisionsFollowTheF32RunAndResumeInAny) {
  const std::string args = kSmall + " --steps 40";
  CommandResult f32 =
      RunCommand(Bin("gpt_train") + args + " --checkpoint " + Tmp("f32.safetensors"));
  CommandResult bf16 = RunCommand(Bin("gpt_train") + args + " --precision bf16 --checkpoint " +
                                  Tmp("bf16.safetensors"));
  ASSERT_EQ(f32.status, 0) << f32.out;
  ASSERT_EQ(bf16.status, 0) << bf16.out;
  EXPECT_NE(bf16.out.find(", in bf16"), std::string::npos) << bf16.out;
  const std::vector<double> want = Losses(f32.out), got = Losses(bf16.out);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(want.size(), 5u) << f32.out;  // step 1, then every 10
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.02 * want[i]) << i;
  EXPECT_NE(got, want);  // (not the f32 run under another name)
  // generation in bf16 (its KV cache too): greedily, the f32 text
  const std::string greedy = " --checkpoint " + Tmp("f32.safetensors") +
                             " --prompt 'The ' --tokens 50 --temperature 0";
  CommandResult g32 = RunCommand(Bin("gpt_generate") + greedy);
  CommandResult g16 = RunCommand(Bin("gpt_generate") + greedy + " --precision bf16");
  ASSERT_EQ(g16.status, 0) << g16.out;
  // or, where they part, the f32 run's two best tokens there are bf16's choice and the f32
  // one, within 1e-2 of each other (a near tie that bf16's roundings may break either way)
  const std::string t32 = Text(g32.out), t16 = Text(g16.out);
  ASSERT_EQ(t16.size(), t32.size()) << t16;
  const size_t part = std::mismatch(t32.begin(), t32.end(), t16.begin()).first - t32.begin();
  if (part < t32.size()) {
    auto logits = [&](const std::string& precision, size_t token) {
      CommandResult r = RunCommand(Bin("gpt_generate") + greedy + " --precision " + precision +
                                   " --show-logits 2>&1 >/dev/null");
      const std::string key = "logits " + std::to_string(token) + ": ";
      const size_t at = r.out.find(key);
      std::vector<double> v(4, NAN);  // top id, its logit, next id, its logit
      if (at != std::string::npos)
        std::sscanf(r.out.c_str() + at + key.size(), "%lf %lf, %lf %lf", &v[0], &v[1], &v[2],
                    &v[3]);
      return v;
    };
    const size_t token = part - std::string("The ").size();
    const std::vector<double> a = logits("f32", token), b = logits("bf16", token);
    std::printf(
        "f32 and bf16 greedy texts part at token %zu: f32 %g (%g) then %g (%g), bf16 "
        "%g (%g) then %g (%g)\n",
        token, a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]);
    EXPECT_EQ(a[0], b[2]);
    EXPECT_EQ(a[2], b[0]);
    EXPECT_LE(a[1] - a[3], 1e-2);
    EXPECT_LE(b[1] - b[3], 1e-2);
  }
  CommandResult resumed = RunCommand(Bin("gpt_train") + kSmall +
                                     " --steps 50 --resume --checkpoint " + Tmp("bf16.safetensors"));
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("resuming at step 40"), std::string::npos) << resumed.out;
  CommandResult f16 = RunCommand(Bin("gpt_train") + args + " --precision f16 --checkpoint " +
                                 Tmp("f16.safetensors"));
  ASSERT_EQ(f16.status, 0) << f16.out;
  EXPECT_NE(f16.out.find("  scale "), std::string::npos) << f16.out;  // (the loss scale)
  const std::vector<double> half = Losses(f16.out);
  ASSERT_EQ(half.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(half[i], want[i], 0.02 * want[i]) << i;
  CommandResult more = RunCommand(Bin("gpt_train") + kSmall + " --steps 50 --precision f16" +
                                  " --resume --checkpoint " + Tmp("f16.safetensors"));
  ASSERT_EQ(more.status, 0) << more.out;
  // the scale carries on from the checkpoint: the last one printed before is the first now
  std::smatch m;
  ASSERT_TRUE(std::regex_search(f16.out, m, std::regex("scale ([0-9]+)\n[^\n]*saved"))) << f16.out;
  EXPECT_NE(more.out.find("scale " + m[1].str()), std::string::npos) << more.out;
  // data- and tensor-parallel over two ranks: the single process's bf16 losses (to bf16's
  // rounding of other shapes' sums: 0.7% apart at step 30 of this small, fast-learning model),
  // with the gradients (and the tensor-parallel activations) sent in bf16: half f32's bytes
  const std::regex sent_a_step("sent ([0-9.]+) KiB a step to the other ranks \\(in theory "
                               "([0-9.]+) KiB");
  for (const std::string layout : {"", " --tp 2"}) {
    const std::string launch = Runfile("distributed/uopc_launch") + " --nproc 2 -- " +
                               Bin("gpt_train") + kSmall + layout + " --checkpoint " +
                               Tmp("two.safetensors");
    CommandResult two = RunCommand(launch + " --steps 40 --precision bf16", 300);
    ASSERT_EQ(two.status, 0) << two.out;
    const std::vector<double> b = Losses(two.out);
    ASSERT_EQ(b.size(), got.size()) << two.out;
    for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(b[i], got[i], 0.02 * got[i]) << layout << i;
    CommandResult wide = RunCommand(launch + " --steps 2", 300);
    ASSERT_EQ(wide.status, 0) << wide.out;
    std::smatch half, full;
    ASSERT_TRUE(std::regex_search(two.out, half, sent_a_step)) << two.out;
    ASSERT_TRUE(std::regex_search(wide.out, full, sent_a_step)) << wide.out;
    EXPECT_NEAR(std::stod(half[1]), std::stod(full[1]) / 2, 0.02 * std::stod(full[1])) << layout;
    EXPECT_NEAR(std::stod(half[1]), std::stod(half[2]), 0.02 * std::stod(half[2])) << layout;
  }
  CommandResult bad = RunCommand(Bin("gpt_train") + args + " --precision f8");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("--precision f8; expected f32, bf16 or f16"), std::string::npos)
      << bad.out;
}

// On a device of another process (uopc_device_server, 200 µs a call): the same losses for
// 20 steps, and the same sampled text, as on the CPU of this one.
TEST(GptTrain, OnARemoteDeviceTheLossesAndTheTextAreTheSame) {
  uopc::testing::ServerProcess server(Runfile("tools/uopc_device_server"),
                                {"--port", "0", "--latency-us", "200"},
                                {"UOPC_DEVICE_TOKEN=gpt-remote-token"});
  ASSERT_TRUE(server.ok()) << server.first_line();
  const std::string remote =
      "env UOPC_DEVICE_TOKEN=gpt-remote-token UOPC_REMOTE_DEVICES=" + server.address() + " ";
  const std::string args = kSmall + " --layers 2 --steps 20 --log-every 5";
  CommandResult local = RunCommand(Bin("gpt_train") + args + " --checkpoint " + Tmp("l.safetensors"), 300);
  ASSERT_EQ(local.status, 0) << local.out;
  CommandResult far = RunCommand(remote + Bin("gpt_train") + args + " --device REMOTE:0 --checkpoint " +
                                 Tmp("r.safetensors"), 300);
  ASSERT_EQ(far.status, 0) << far.out;
  EXPECT_NE(far.out.find(", on REMOTE:0"), std::string::npos) << far.out;
  ASSERT_EQ(Losses(local.out).size(), 5u) << local.out;
  EXPECT_EQ(Losses(far.out), Losses(local.out)) << far.out;
  const std::string gen = " --prompt 'The ' --tokens 30 --seed 2 --checkpoint ";
  CommandResult g0 = RunCommand(Bin("gpt_generate") + gen + Tmp("l.safetensors"), 300);
  CommandResult g1 = RunCommand(remote + Bin("gpt_generate") + gen + Tmp("r.safetensors") +
                                " --device REMOTE:0", 300);
  ASSERT_EQ(g0.status, 0) << g0.out;
  ASSERT_EQ(g1.status, 0) << g1.out;
  EXPECT_EQ(Text(g1.out), Text(g0.out));
  // the server gone, the run fails saying so, in one line, without hanging
  server.Kill();
  CommandResult lost = RunCommand(remote + Bin("gpt_train") + args + " --device REMOTE:0", 120);
  EXPECT_EQ(lost.status, 1) << lost.out;
  EXPECT_NE(lost.out.find(server.address()), std::string::npos) << lost.out;
}

// Every bad flag is one line naming the flag and what it accepts, and exit status 2.
TEST(GptTrain, BadFlagsAreOneLineErrorsNeverCrashes) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--log-every 0", "--log-every=0: expected an integer from 1 to 1000000000"},
      {"--heads 0", "--heads=0: expected an integer from 1 to 4096"},
      {"--dim -8", "--dim=-8: expected an integer from 1 to 65536"},
      {"--context -5", "--context=-5: expected an integer from 1 to 1048576"},
      {"--batch -4", "--batch=-4: expected an integer from 1 to 1048576"},
      {"--layers 1000000", "--layers=1000000: expected an integer from 1 to 1024"},
      {"--lr nan", "--lr=nan: expected a number from 0 to 10"},
      {"--clip inf", "--clip=inf: expected a number from 0 to 1e+09"},
      {"--resume=maybe", "--resume=maybe: expected true or false (or 1/0, yes/no)"},
  };
  for (const auto& [flag, message] : cases) {
    CommandResult r = RunCommand(Bin("gpt_train") + " " + flag, 30);
    EXPECT_EQ(r.status, 2) << flag << ": " << r.out;
    EXPECT_EQ(r.out, message + " (see --help)\n") << flag;
  }
  CommandResult t = RunCommand(Bin("gpt_generate") + " --temperature nan", 30);
  EXPECT_EQ(t.out, "--temperature=nan: expected a number from 0 to 1e+06 (see --help)\n");
  // sizes that parse but cannot work are refused before anything is built
  CommandResult h = RunCommand(Bin("gpt_train") + " --dim 30 --heads 4", 30);
  EXPECT_EQ(h.out, "gpt_train: --dim 30 is not a multiple of --heads 4\n");
  CommandResult big = RunCommand(Bin("gpt_train") + " --layers 1024 --dim 65536", 30);
  EXPECT_EQ(big.status, 1);
  EXPECT_NE(big.out.find("GiB to train; CPU has "), std::string::npos) << big.out;
  // a --device list with an empty name is refused (issue 33's probe: "CPU:0," was accepted)
  for (const char* list : {"CPU:0,", "CPU:0,,CPU:0", ",CPU:0"}) {
    CommandResult d = RunCommand(Bin("gpt_train") + " --steps 1 --device " + list, 30);
    EXPECT_EQ(d.status, 1) << list << ": " << d.out;
    EXPECT_EQ(d.out, absl::StrCat("gpt_train: --device ", list,
                                  ": an empty device name; expected names such as CPU:0,CPU:1, "
                                  "comma-separated\n"))
        << list;
  }
  // another rank's device is not for --device: --pp makes a pipeline over ranks (issue 33's
  // probe: "this process is in no job", under uopc_launch)
  CommandResult ranks =
      RunCommand(Bin("gpt_train") + " --steps 1 --device rank0/CPU:0,rank1/CPU:0", 30);
  EXPECT_EQ(ranks.status, 1) << ranks.out;
  EXPECT_NE(ranks.out.find("rank0/CPU:0 names a rank's device; a pipeline over ranks is --pp P"),
            std::string::npos)
      << ranks.out;
  // an estimate past 2^64 bytes is not "about 0 B" (issue 33's probe)
  const std::string long_text = Tmp("long.txt");
  std::ofstream(long_text) << std::string(1100000, 'a') + "bc";
  CommandResult huge = RunCommand(
      Bin("gpt_train") + " --data " + long_text + " --context 1048576 --batch 1048576", 30);
  EXPECT_EQ(huge.status, 1) << huge.out;
  EXPECT_EQ(huge.out.find("about 0 B"), std::string::npos) << huge.out;
  EXPECT_NE(huge.out.find("GiB to train; CPU has "), std::string::npos) << huge.out;
  // a limit above the first estimate but below what the step's plan needs: refused with the
  // plan's figures before it runs (issue 33's probe: it failed in the step, naming CPU:0)
  CommandResult tight = RunCommand("UOPC_CPU_MEMORY=20M " + Bin("gpt_train") + " --steps 2 " +
                                       "--checkpoint " + Tmp("tight.safetensors"),
                                   60);
  EXPECT_EQ(tight.status, 1) << tight.out;
  EXPECT_TRUE(std::regex_search(
      tight.out, std::regex("gpt_train: run plan on CPU:0: its [0-9]+ buffers need [0-9.]+ MiB "
                            "\\(temporaries sharing memory\\); CPU:0 has [0-9.]+ MiB free of "
                            "20.0 MiB \\([0-9.]+ MiB hold tensors "
                            "and other plans' buffers\\); nothing ran: choose a smaller")))
      << tight.out;
  CommandResult small = RunCommand("UOPC_CPU_MEMORY=8M " + Bin("gpt_train") + " --steps 2", 60);
  EXPECT_EQ(small.status, 1) << small.out;
  EXPECT_NE(small.out.find("needs at least about "), std::string::npos) << small.out;
  for (const char* file : {"--data /dev/zero", "--resume --checkpoint /dev/zero"}) {
    CommandResult z = RunCommand(Bin("gpt_train") + " " + file, 30);
    EXPECT_EQ(z.status, 1) << file;
    EXPECT_NE(z.out.find("/dev/zero: not a regular file"), std::string::npos) << z.out;
  }
  CommandResult where = RunCommand(Bin("gpt_train") + " --checkpoint /no/such/dir/x.safetensors", 30);
  EXPECT_EQ(where.out,
            "gpt_train: --checkpoint /no/such/dir/x.safetensors: cannot write there: No such file "
            "or directory\n");
}

// A copy of the checkpoint `from` at `to`, its JSON header rewritten by `edit` (the header's
// length too).
// The bytes of a checkpoint, and its JSON header's length (the first 8 bytes).
std::pair<std::string, uint64_t> ReadCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  for (int k = 0; k < 8 && k < static_cast<int>(file.size()); ++k)
    n |= uint64_t{static_cast<unsigned char>(file[k])} << (8 * k);
  return {file, n};
}

std::string RewriteHeader(const std::string& from, const std::string& to,
                          const std::function<std::string(const std::string&)>& edit) {
  const auto [file, n] = ReadCheckpoint(from);
  std::string header = edit(file.substr(8, n)), data = file.substr(8 + n);
  while (header.size() % 8) header += ' ';
  std::string len(8, '\0');
  for (int k = 0; k < 8; ++k) len[k] = static_cast<char>((header.size() >> (8 * k)) & 0xff);
  std::ofstream(to, std::ios::binary) << len << header << data;
  return to;
}

// A checkpoint whose metadata says `key` is `value`.
std::string WithMetadata(const std::string& from, const std::string& key, const std::string& value,
                         const std::string& to) {
  return RewriteHeader(from, to, [&](const std::string& header) {
    return std::regex_replace(header, std::regex("\"" + key + "\":\"[^\"]*\""),
                              "\"" + key + "\":\"" + value + "\"");
  });
}

// A copy of the checkpoint `from` at `to` whose tensor `name` (f32) holds `value` everywhere.
std::string WithWeights(const std::string& from, const std::string& name, float value,
                        const std::string& to) {
  auto [file, n] = ReadCheckpoint(from);
  std::smatch m;
  const std::string header = file.substr(8, n);
  if (!std::regex_search(
          header, m, std::regex("\"" + name + "\":\\{[^}]*\"data_offsets\":\\[(\\d+),(\\d+)\\]"))) {
    ADD_FAILURE() << "no tensor " << name << " in " << from;
    return to;
  }
  for (size_t at = 8 + n + std::stoull(m[1]); at < 8 + n + std::stoull(m[2]); at += 4)
    std::memcpy(&file[at], &value, 4);
  std::ofstream(to, std::ios::binary) << file;
  return to;
}

TEST(GptTrain, ResumeChecksWhatItLoadsAndNeverSavesNonFiniteWeights) {
  const std::string args = kSmall + " --steps 4 --log-every 2";
  const std::string ck = Tmp("r.safetensors");
  ASSERT_EQ(RunCommand(Bin("gpt_train") + args + " --checkpoint " + ck).status, 0);
  const std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {"heads", "0", "metadata heads=0: expected an integer from 1 to 4096"},
      {"layers", "abc", "metadata layers=abc: expected an integer from 1 to 1024"},
      {"step", "-1", "metadata step=-1: expected an integer from 0 to 1000000000"},
      {"step", "99999999999999999999", "metadata step=99999999999999999999: expected an integer"},
      {"dim", "64", "its metadata (vocab 76, context 32, dim 64, layers 1) wants a tensor "
                    "'wte.weight' of shape (76, 64); the file has (76, 32)"},
      {"layers", "2", "wants a tensor 'h.1.ln_1.weight' of shape (32); the file has none"},
      {"context", "1048576", "wants a tensor 'wpe.weight' of shape (1048576, 32)"},
  };
  for (const auto& [key, value, message] : bad) {
    std::string file = WithMetadata(ck, key, value, Tmp("bad-" + key + ".safetensors"));
    CommandResult r = RunCommand(Bin("gpt_train") + args + " --resume=yes --checkpoint " + file, 60);
    EXPECT_EQ(r.status, 1) << key << "=" << value << ": " << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << key << "=" << value << ": " << r.out;
    CommandResult g = RunCommand(Bin("gpt_generate") + " --checkpoint " + file + " --tokens 20", 60);
    EXPECT_EQ(g.status, key == "step" ? 0 : 1) << g.out;  // sampling needs no step
  }
  // a shape flag given with --resume must agree with the checkpoint (it was ignored silently)
  CommandResult dim = RunCommand(Bin("gpt_train") + args + " --dim 48 --resume --checkpoint " + ck, 60);
  EXPECT_EQ(dim.status, 1) << dim.out;
  EXPECT_NE(dim.out.find("--resume: --dim 48 differs from " + ck +
                         "'s 32 (a resumed run has its checkpoint's shape: leave --dim out)"),
            std::string::npos)
      << dim.out;
  CommandResult tie = RunCommand(Bin("gpt_train") + args + " --tie-embeddings --resume --checkpoint " + ck, 60);
  EXPECT_NE(tie.out.find("--resume: --tie-embeddings 1 differs from"), std::string::npos) << tie.out;
  // --resume=yes resumes; a checkpoint at or past --steps trains nothing and writes nothing
  CommandResult again = RunCommand(Bin("gpt_train") + args + " --resume=yes --checkpoint " + ck);
  EXPECT_NE(again.out.find("nothing to train, and nothing written"), std::string::npos) << again.out;
  // a step whose loss overflows (an output projection of 3e38s: its logits are inf) stops
  // the run, the checkpoint on disk untouched
  const std::string huge = WithWeights(ck, "lm_head.weight", 3e38f, Tmp("huge.safetensors"));
  std::ifstream before_in(huge, std::ios::binary);
  std::string before((std::istreambuf_iterator<char>(before_in)), std::istreambuf_iterator<char>());
  CommandResult nan = RunCommand(Bin("gpt_train") + kSmall +
                                 " --steps 8 --clip 0 --warmup 1 --resume --checkpoint " + huge);
  EXPECT_EQ(nan.status, 1) << nan.out;
  EXPECT_NE(nan.out.find("or a gradient is not finite; stopping with the weights of step"),
            std::string::npos)
      << nan.out;
  std::ifstream after_in(huge, std::ios::binary);
  std::string after((std::istreambuf_iterator<char>(after_in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, before);
  CommandResult skip = RunCommand(
      Bin("gpt_train") + kSmall + " --steps 8 --clip 0 --warmup 1 --skip-nonfinite --resume " +
      "--checkpoint " + WithWeights(ck, "lm_head.weight", 3e38f, Tmp("skip.safetensors")));
  EXPECT_EQ(skip.status, 0) << skip.out;
  EXPECT_NE(skip.out.find("; skipped"), std::string::npos) << skip.out;
  CommandResult sampled = RunCommand(Bin("gpt_generate") + " --tokens 5 --checkpoint " +
                                     Tmp("skip.safetensors"));
  EXPECT_EQ(sampled.status, 0) << sampled.out;  // what was saved is finite
}

TEST(GptGenerate, ACorruptCheckpointIsAClearError) {
  std::ofstream(Tmp("bad.safetensors")) << "garbage, not a checkpoint";
  CommandResult r = RunCommand(Bin("gpt_generate") + " --checkpoint " + Tmp("bad.safetensors"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("gpt_generate: checkpoint " + Tmp("bad.safetensors") + ": a header of"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(RunCommand(Bin("gpt_generate") + " --help").status, 0);
  EXPECT_EQ(RunCommand(Bin("gpt_generate") + " --temperature -1").out,
            "--temperature=-1: expected a number from 0 to 1e+06 (see --help)\n");
}

}  // namespace

namespace {

// A copy of gpt_train's checkpoint `from` as Hugging Face writes GPT-2's: the names with a
// "transformer." prefix, and no metadata but the format.
std::string AsHuggingFace(const std::string& from, const std::string& to) {
  return RewriteHeader(from, to, [](const std::string& header) {
    std::string h = std::regex_replace(header, std::regex("\"__metadata__\":\\{[^}]*\\}"),
                                       "\"__metadata__\":{\"format\":\"pt\"}");
    return std::regex_replace(h, std::regex("\"(wte|wpe|h\\.|ln_f)"), "\"transformer.$1");
  });
}

TEST(GptGenerate, AGpt2CheckpointTiedAndInTheHuggingFaceNamingTakesTokenIds) {
  const std::string ck = Tmp("tied.safetensors");
  CommandResult t = RunCommand(Bin("gpt_train") + kSmall + " --steps 4 --tie-embeddings --checkpoint " + ck);
  ASSERT_EQ(t.status, 0) << t.out;
  const std::string hf = AsHuggingFace(ck, Tmp("hf.safetensors"));
  CommandResult g = RunCommand(Bin("gpt_generate") + " --checkpoint " + hf +
                               " --heads 2 --prompt-ids 3,1,4 --tokens 6 --temperature 0");
  ASSERT_EQ(g.status, 0) << g.out;
  std::string text = Text(g.out);
  EXPECT_EQ(std::count(text.begin(), text.end(), ','), 8) << g.out;
  EXPECT_EQ(text.rfind("3,1,4,", 0), 0u) << g.out;
  CommandResult recomputed = RunCommand(Bin("gpt_generate") + " --checkpoint " + hf +
                                        " --heads 2 --prompt-ids 3,1,4 --tokens 6 --temperature 0 "
                                        "--no-cache");
  EXPECT_EQ(Text(recomputed.out), text);
  CommandResult no_ids = RunCommand(Bin("gpt_generate") + " --checkpoint " + hf + " --heads 2");
  EXPECT_EQ(no_ids.status, 1);
  EXPECT_NE(no_ids.out.find("has no character vocabulary; give the prompt as --prompt-ids"),
            std::string::npos)
      << no_ids.out;
  CommandResult both = RunCommand(Bin("gpt_generate") + " --checkpoint " + hf +
                                  " --heads 2 --prompt-ids 3,1 --prompt 'The '");
  EXPECT_EQ(both.status, 1);
  EXPECT_NE(both.out.find("gpt_generate: --prompt and --prompt-ids; expected one of them"),
            std::string::npos)
      << both.out;
  CommandResult bad = RunCommand(Bin("gpt_generate") + " --checkpoint " + hf +
                                 " --heads 2 --prompt-ids 3,x");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("--prompt-ids=x: expected an integer"), std::string::npos) << bad.out;
}

}  // namespace
