// A job across real network hops: two "nodes" (network namespaces with their own addresses,
// joined through a router and the fault proxy: tests/testing/net_bed.h), each running
// `uopc_launch --nnodes 2 --node-rank K` with the job's token, as a user runs a job over two
// machines. Every run is bounded in time; faults are bounded by a small UOPC_TIMEOUT. Where
// the machine refuses namespaces (not root), the tests skip and say why.
#include <csignal>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testing/command.h"
#include "tests/testing/gpt_output.h"
#include "tests/testing/net_bed.h"

namespace {

using uopc::testing::CommandResult;
using uopc::testing::Losses;
using uopc::testing::NetBed;
using uopc::testing::RunCommand;
using uopc::testing::Runfile;

const std::string kModel =
    " --layers 2 --dim 32 --heads 2 --context 32 --batch 8 --lr 1e-2 --warmup 5";

bool Has(const std::string& out, const std::string& s) { return out.find(s) != std::string::npos; }

class MultiNode : public testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "the ranks are gpt_train, built without the tests' TSan suppressions for "
                    "Debian's uninstrumented gRPC, and the faults' time bounds are not TSan's";
#endif
    std::string why;
    bed_ = NetBed::Make(2, Runfile("tests/testing/fault_proxy"), &why);
    if (!bed_) GTEST_SKIP() << why;
  }

  /// uopc_launch on node k of 2 with one rank of `program`, under `env`.
  std::string Launch(int k, const std::string& program, const std::string& env = "") const {
    return "env UOPC_JOB_TOKEN=bed-job " + env + " " + Runfile("distributed/uopc_launch") +
           " --nproc 1 --nnodes 2 --node-rank " + std::to_string(k) + " --master-addr " +
           NetBed::Address(0) + " --master-port 29500 --grace 2 -- " + program;
  }
  std::string Train(const std::string& flags, const std::string& checkpoint = "bed") const {
    return Runfile("examples/gpt/gpt_train") + kModel + flags + " --checkpoint " +
           bed_->Path(checkpoint + ".safetensors");
  }

  /// Starts both nodes; each one's output (ending "exit N") in node0.log and node1.log.
  void StartBoth(const std::string& program, const std::string& env = "") {
    bed_->Start(1, Launch(1, program, env), "node1.log");
    bed_->Start(0, Launch(0, program, env), "node0.log");
  }
  std::string Log(int k) const { return NetBed::Read(bed_->Path("node" + std::to_string(k) + ".log")); }
  bool Ended(int k, double limit_s) const {
    return NetBed::WaitFor(bed_->Path("node" + std::to_string(k) + ".log"), "exit ", limit_s);
  }

  std::unique_ptr<NetBed> bed_;
};

// Data-, tensor- and pipeline-parallel runs across the two nodes, through a relay that
// delays every byte by a millisecond, give the losses of the same job on one host.
TEST_F(MultiNode, DataTensorAndPipelineParallelGiveTheOneHostLosses) {
  bed_->Proxy("delay 1");
  for (const std::string layout : {"", " --tp 2", " --pp 2"}) {
    const std::string flags = " --steps 20 --log-every 5" + layout;
    CommandResult one = RunCommand(Runfile("distributed/uopc_launch") + " --nproc 2 -- " +
                                       Train(flags, "one_host"),
                                   300);
    ASSERT_EQ(one.status, 0) << one.out;
    StartBoth(Train(flags));
    ASSERT_TRUE(Ended(0, 300) && Ended(1, 60)) << Log(0) << Log(1);
    EXPECT_TRUE(Has(Log(0), "exit 0") && Has(Log(1), "exit 0")) << Log(0) << Log(1);
    const std::vector<double> want = Losses(one.out), got = Losses(Log(0));
    ASSERT_EQ(want.size(), 5u) << one.out;
    EXPECT_EQ(got, want) << layout << "\n" << Log(0);
  }
}

// A link that stops carrying (a stalled relay, a link set down) or resets (a cut) in the
// middle of training fails every rank within UOPC_TIMEOUT (3 s here), each naming the rank
// it lost and where that rank is.
class MultiNodeFault : public MultiNode, public testing::WithParamInterface<std::string> {};

TEST_P(MultiNodeFault, FailsEveryRankNamingTheOtherNode) {
  StartBoth(Train(" --steps 100000 --log-every 1"), "UOPC_TIMEOUT=3");
  ASSERT_TRUE(NetBed::WaitFor(bed_->Path("node0.log"), "step     3/", 120)) << Log(0) << Log(1);
  const auto fault = std::chrono::steady_clock::now();
  if (GetParam() == "link down")
    ASSERT_TRUE(bed_->LinkDown(1));
  else
    bed_->Proxy(GetParam());
  ASSERT_TRUE(Ended(0, 30) && Ended(1, 30)) << Log(0) << Log(1);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - fault).count();
  EXPECT_LT(took, 3 + 2 + 10) << "the timeout, the launcher's grace and some slack";
  for (int k : {0, 1}) {
    const std::string log = Log(k), other = NetBed::Address(1 - k);
    EXPECT_TRUE(Has(log, "exit 1")) << log;
    EXPECT_TRUE(Has(log, "rank " + std::to_string(1 - k))) << log;
    EXPECT_TRUE(Has(log, "is at " + other)) << log;
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, MultiNodeFault, testing::Values("stall", "cut", "link down"),
                         [](const testing::TestParamInfo<std::string>& p) {
                           return p.param == "link down" ? std::string("LinkDown") : p.param;
                         });

// A process of another job (another token) on the other node is refused at the rendezvous,
// and the job does not take it in.
TEST_F(MultiNode, AProcessOfAnotherJobIsRefusedAtRendezvous) {
  const std::string program = Train(" --steps 5");
  bed_->Start(0, Launch(0, program, "UOPC_TIMEOUT=5"), "node0.log");
  bed_->Start(1, Launch(1, program, "UOPC_TIMEOUT=5 UOPC_JOB_TOKEN=other-job"), "node1.log");
  ASSERT_TRUE(Ended(0, 60) && Ended(1, 60)) << Log(0) << Log(1);
  EXPECT_FALSE(Has(Log(1), "exit 0")) << Log(1);
  EXPECT_TRUE(Has(Log(1), "token")) << Log(1);
  EXPECT_FALSE(Has(Log(0), "exit 0")) << Log(0);
  EXPECT_TRUE(Has(Log(0), "rank 1 did not join")) << Log(0);
}

// A node whose launcher is killed (SIGKILL) takes its ranks with it, and the other node's
// job ends naming the rank it lost.
TEST_F(MultiNode, ANodeWhoseLauncherIsKilledTakesItsRanksWithIt) {
  const std::string program = Train(" --steps 100000 --log-every 1");
  bed_->Start(0, Launch(0, program, "UOPC_TIMEOUT=5"), "node0.log");
  const int launcher = bed_->Start(1, Launch(1, program, "UOPC_TIMEOUT=5"), "node1.log");
  ASSERT_GT(launcher, 0);
  ASSERT_TRUE(NetBed::WaitFor(bed_->Path("node0.log"), "step     3/", 120)) << Log(0) << Log(1);
  ASSERT_EQ(kill(launcher, SIGKILL), 0);
  ASSERT_TRUE(Ended(0, 30)) << Log(0);
  EXPECT_TRUE(Has(Log(0), "exit 1")) << Log(0);
  EXPECT_TRUE(Has(Log(0), "rank 1")) << Log(0);
  // nothing is left running on node 1
  std::string left;
  for (int i = 0; i < 50; ++i) {
    left = RunCommand("ip netns pids " + bed_->Namespace(1)).out;
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(left, "") << "still running on node 1";
}

// uopc_launch --max-restarts on each node, gpt_train --resume-if-present: rank 1 (on node 1)
// killed once rank 0 has printed step 15 of 40, checkpoints every 10 steps. Rank 0 is held
// (SIGSTOP) from the moment it prints step 15 until rank 1 is gone, so the kill falls between
// the checkpoints of steps 10 and 20 however loaded the machine is. Node 1's launcher restarts
// its rank, node 0's restarts its own (whose all-reduce lost its peer), they meet again at the
// rendezvous, resume at step 10, and the final checkpoint is the uninterrupted one-host run's,
// bit for bit.
TEST_F(MultiNode, AJobRestartedOnBothNodesEndsAsTheUninterruptedRun) {
  const std::string kill_at = bed_->Path("kill_at.sh"), at15 = bed_->Path("at15"),
                    killed = bed_->Path("killed"), gone = bed_->Path("gone"),
                    lines = bed_->Path("rank0_lines");
  {
    std::ofstream f(kill_at);
    f << "#!/usr/bin/env bash\n"  // kill_at.sh PROGRAM ARGS...
         "if [ \"$RANK\" = 0 ]; then  # the rank that prints: held at step 15 until rank 1 is "
         "gone\n"
         "  rm -f "
      << lines << "; mkfifo " << lines
      << "\n"
         "  \"$@\" > "
      << lines
      << " & pid=$!\n"
         "  while IFS= read -r line; do\n"
         "    printf '%s\\n' \"$line\"\n"
         "    if [[ $line =~ ^step\\ +15/ ]] && [ ! -e "
      << at15
      << " ]; then\n"
         "      kill -STOP $pid; : > "
      << at15
      << "\n"
         "      while [ ! -e "
      << gone
      << " ]; do sleep 0.02; done\n"
         "      kill -CONT $pid\n"
         "    fi\n"
         "  done < "
      << lines
      << "\n"
         "  wait $pid; exit $?\n"
         "fi\n"
         "[ -e "
      << killed
      << " ] && exec \"$@\"\n"
         ": > "
      << killed
      << "\n"
         "\"$@\" & pid=$!\n"
         "while [ ! -e "
      << at15
      << " ] && kill -0 $pid 2>/dev/null; do sleep 0.02; done\n"
         "kill -9 $pid; wait $pid; : > "
      << gone << "; exit 137\n";
  }
  ASSERT_EQ(RunCommand("chmod +x " + kill_at).status, 0);
  const std::string flags = " --steps 40 --save-every 10 --log-every 5";
  CommandResult straight = RunCommand(Runfile("distributed/uopc_launch") + " --nproc 2 -- " +
                                          Train(flags, "straight"),
                                      300);
  ASSERT_EQ(straight.status, 0) << straight.out;
  const std::string program =
      kill_at + " " + Train(flags + " --resume-if-present", "restarted");
  for (int k : {1, 0})
    bed_->Start(k,
                "env UOPC_JOB_TOKEN=bed-job UOPC_TIMEOUT=10 " + Runfile("distributed/uopc_launch") +
                    " --nproc 1 --nnodes 2 --node-rank " + std::to_string(k) + " --master-addr " +
                    NetBed::Address(0) + " --master-port 29500 --grace 1 --max-restarts 2 -- " +
                    program,
                "node" + std::to_string(k) + ".log");
  ASSERT_TRUE(Ended(0, 300) && Ended(1, 60)) << Log(0) << Log(1);
  EXPECT_TRUE(Has(Log(0), "exit 0") && Has(Log(1), "exit 0")) << Log(0) << Log(1);
  EXPECT_TRUE(Has(Log(1), "restarting the job (restart 1 of 2: rank 1 failed)")) << Log(1);
  EXPECT_TRUE(Has(Log(0), "restarting the job (restart 1 of 2: rank 0 failed)")) << Log(0);
  EXPECT_TRUE(Has(Log(0), "resuming at step 10")) << Log(0);
  const std::string a = NetBed::Read(bed_->Path("straight.safetensors")),
                    b = NetBed::Read(bed_->Path("restarted.safetensors"));
  EXPECT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b) << "the checkpoints differ\n" << straight.out << Log(0) << Log(1);
}

}  // namespace
