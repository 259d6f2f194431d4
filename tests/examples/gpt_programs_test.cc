// gpt_train and gpt_generate as a user runs them: real processes, real files.
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "tests/testing/command.h"

namespace {

using uopc::testing::CommandResult;
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

TEST(GptTrain, HelpListsEveryFlagWithItsDefault) {
  CommandResult r = RunCommand(Bin("gpt_train") + " --help");
  EXPECT_EQ(r.status, 0);
  for (const char* f :
       {"--data (default /usr/share/common-licenses/GPL-3)", "--steps (default 300)",
        "--lr (default 0.003)", "--resume (default false)", "--seed (default 0)"})
    EXPECT_NE(r.out.find(f), std::string::npos) << f << "\n" << r.out;
  CommandResult bad = RunCommand(Bin("gpt_train") + " --stepz 3");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.out, "unknown flag --stepz (see --help)\n");
  EXPECT_EQ(RunCommand(Bin("gpt_train") + " --steps lots").out,
            "--steps wants an integer, got 'lots' (see --help)\n");
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
  EXPECT_EQ(g1.out, g2.out);  // the same seed, the same text
  EXPECT_EQ(g1.out.size(), 4 + 40 + 1u);
  EXPECT_EQ(g1.out.rfind("The ", 0), 0u);
  CommandResult topk = RunCommand(Bin("gpt_generate") + " --checkpoint " + Tmp("full.safetensors") +
                                  " --top-k 1 --temperature 0.5 --tokens 20");
  EXPECT_EQ(topk.status, 0) << topk.out;
  CommandResult unknown = RunCommand(Bin("gpt_generate") + " --checkpoint " +
                                     Tmp("full.safetensors") + " --prompt '\xe2\x82\xac'");
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.out.find("is not in the model's vocabulary"), std::string::npos) << unknown.out;
}

// The losses of every progress line.
std::vector<double> Losses(const std::string& out) {
  std::vector<double> v;
  std::regex re("loss ([0-9.]+)");
  for (std::sregex_iterator it(out.begin(), out.end(), re), end; it != end; ++it)
    v.push_back(std::stod((*it)[1]));
  return v;
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
  EXPECT_NE(two.out.find("data-parallel over 2 ranks"), std::string::npos) << two.out;
  EXPECT_EQ(two.out.find("[rank 1] step"), std::string::npos) << two.out;  // rank 0 speaks
  std::vector<double> a = Losses(one.out), b = Losses(two.out);
  ASSERT_EQ(a.size(), 4u) << one.out;
  ASSERT_EQ(b.size(), a.size()) << two.out;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 2e-3) << "progress line " << i;
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
  EXPECT_EQ(g1.out, g0.out);
  CommandResult bad = RunCommand(Bin("gpt_train") + args + " --device CPU:5");
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.out.rfind("gpt_train: no device CPU:5 (devices: CPU:0", 0), 0u) << bad.out;
}

TEST(GptGenerate, ACorruptCheckpointIsAClearError) {
  std::ofstream(Tmp("bad.safetensors")) << "garbage, not a checkpoint";
  CommandResult r = RunCommand(Bin("gpt_generate") + " --checkpoint " + Tmp("bad.safetensors"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("gpt_generate: checkpoint " + Tmp("bad.safetensors") + ": a header of"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(RunCommand(Bin("gpt_generate") + " --help").status, 0);
  EXPECT_EQ(RunCommand(Bin("gpt_generate") + " --temperature 0").out,
            "gpt_generate: --temperature must be > 0\n");
}

}  // namespace
