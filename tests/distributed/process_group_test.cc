// ProcessGroup and uopc_launch as a user runs them: `uopc_launch --nproc P --
// collective_worker SCENARIO`, real processes on loopback, real gRPC. Every job runs under
// `timeout`, so a hang fails the test instead of stalling it; faults are bounded by a
// small UOPC_TIMEOUT.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "distributed/process_group.h"
#include "tests/testing/command.h"

namespace {

using uopc::testing::CommandResult;
using uopc::testing::RunCommand;
using uopc::testing::Runfile;

std::string Launch(int nproc, const std::string& args, const std::string& env = "",
                   int grace_s = 2) {
  return env + " " + Runfile("distributed/uopc_launch") + " --nproc " + std::to_string(nproc) +
         " --grace " + std::to_string(grace_s) + " -- " +
         Runfile("tests/distributed/collective_worker") + " " + args;
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

bool Has(const std::string& out, const std::string& s) { return out.find(s) != std::string::npos; }
int Count(const std::string& out, const std::string& s) {
  int n = 0;
  for (size_t at = out.find(s); at != std::string::npos; at = out.find(s, at + 1)) ++n;
  return n;
}

class Collectives : public testing::TestWithParam<int> {};

// Every collective, dtype, reduce op and size (0, 1, p-1, a prime, 1 MiB, 64 MiB) equals
// the same arithmetic done locally, on every rank.
TEST_P(Collectives, EqualLocalArithmetic) {
  const int p = GetParam();
  CommandResult j = RunCommand(Launch(p, "collectives big"), 600);
  EXPECT_EQ(j.status, 0) << j.out;
  for (int r = 0; r < p; ++r) EXPECT_TRUE(Has(j.out, "[rank " + std::to_string(r) + "] ")) << j.out;
  EXPECT_TRUE(Has(j.out, " 0 wrong")) << j.out;
  EXPECT_FALSE(Has(j.out, "WRONG")) << j.out;
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, testing::Values(1, 2, 3, 4));

// Subgroups of four ranks (a 2 x 2 layout, and one in another order): every collective in
// each equals the arithmetic over that group's ranks, with several groups in flight at once.
TEST(Groups, CollectivesStayWithinTheirGroup) {
  CommandResult j = RunCommand(Launch(4, "groups"), 600);
  EXPECT_EQ(j.status, 0) << j.out;
  EXPECT_TRUE(Has(j.out, "[rank 3] ")) << j.out;
  EXPECT_TRUE(Has(j.out, " 0 wrong")) << j.out;
  EXPECT_FALSE(Has(j.out, "WRONG")) << j.out;
}

// Collectives as graph ops: values equal local arithmetic, gradients equal finite
// differences of the job's loss (Megatron's f and g, all-reduce, all-gather, reduce-scatter).
class GraphCollectives : public testing::TestWithParam<int> {};

TEST_P(GraphCollectives, EqualArithmeticAndFiniteDifferences) {
  const int p = GetParam();
  CommandResult j = RunCommand(Launch(p, "graph"), 300);
  EXPECT_EQ(j.status, 0) << j.out;
  EXPECT_TRUE(Has(j.out, "[rank " + std::to_string(p - 1) + "] graph collectives over ")) << j.out;
  EXPECT_FALSE(Has(j.out, "WRONG")) << j.out;
}

INSTANTIATE_TEST_SUITE_P(Ranks, GraphCollectives, testing::Values(2, 3));

// A GPT split over the ranks (Megatron tensor parallelism): its logits, loss and every
// gradient (this rank's part of the split ones) equal the whole model's.
TEST_P(GraphCollectives, TensorParallelGptEqualsTheWholeModel) {
  const int p = GetParam();
  CommandResult j = RunCommand(Launch(p, "tp"), 300);
  EXPECT_EQ(j.status, 0) << j.out;
  EXPECT_TRUE(Has(j.out, "[rank " + std::to_string(p - 1) + "] tensor-parallel gpt over "))
      << j.out;
  EXPECT_FALSE(Has(j.out, "WRONG")) << j.out;
}

// Stages of blocks on the ranks' devices ("rank1/CPU:0"), one program on every rank:
// activations go forward and their gradients back as copies between the ranks, and every
// rank's values equal the whole model's in one process.
TEST_P(GraphCollectives, PipelineGptEqualsTheWholeModel) {
  const int p = GetParam();
  CommandResult j = RunCommand(Launch(p, "pp"), 300);
  EXPECT_EQ(j.status, 0) << j.out;
  for (int r = 0; r < p; ++r)
    EXPECT_TRUE(Has(j.out, "[rank " + std::to_string(r) + "] pipeline gpt over ")) << j.out;
  EXPECT_FALSE(Has(j.out, "WRONG")) << j.out;
}

// The same over TCP, which ranks on different hosts use (here the ring forwards too).
TEST(CollectivesOverTcp, EqualLocalArithmetic) {
  CommandResult j = RunCommand(Launch(3, "collectives big", "UOPC_UNIX_SOCKETS=0"), 600);
  EXPECT_EQ(j.status, 0) << j.out;
  EXPECT_TRUE(Has(j.out, " 0 wrong")) << j.out;
  EXPECT_FALSE(Has(j.out, "WRONG")) << j.out;
}

// Ranks on one host reach each other through unix sockets, unless UOPC_UNIX_SOCKETS=0.
TEST(Transport, RanksOnOneHostTalkThroughUnixSocketsUnlessToldNot) {
  for (const char* env : {"", "UOPC_UNIX_SOCKETS=0"}) {
    CommandResult j = RunCommand(Launch(3, "hello", env), 60);
    EXPECT_EQ(j.status, 0) << j.out;
    for (int r = 0; r < 3; ++r)
      for (int peer = 0; peer < 3; ++peer) {
        if (peer == r) continue;
        EXPECT_TRUE(Has(j.out, "[rank " + std::to_string(r) + "] reaches rank " +
                                   std::to_string(peer) +
                                   (*env ? " at 127.0.0.1:" : " at unix-abstract:uopc-")))
            << env << "\n"
            << j.out;
      }
  }
}

// Frames to ranks on one host go through shared memory, unless UOPC_SHARED_MEMORY=0 or
// the ranks talk over TCP.
// Frames go through a link beside the stream: shared memory to ranks on one host, a TCP
// connection of their own to ranks that are reached over TCP (as on other hosts), unless
// told not to.
TEST(Transport, FramesGoThroughSharedMemoryOrATcpLinkUnlessToldNot) {
  for (const char* env :
       {"", "UOPC_SHARED_MEMORY=0", "UOPC_UNIX_SOCKETS=0", "UOPC_UNIX_SOCKETS=0 UOPC_TCP_LINK=0"}) {
    CommandResult j = RunCommand(Launch(3, "hello", env), 60);
    EXPECT_EQ(j.status, 0) << j.out;
    const std::regex sent(
        R"(\[rank (\d)\] a 4 MiB all-reduce sent (\d+) bytes, (\d+) through shared memory, (\d+) through TCP links)");
    const bool shm = std::string(env).empty(), tcp = std::string(env) == "UOPC_UNIX_SOCKETS=0";
    int ranks = 0;
    for (auto it = std::sregex_iterator(j.out.begin(), j.out.end(), sent);
         it != std::sregex_iterator(); ++it, ++ranks) {
      const long long bytes = std::stoll((*it)[2]), shared = std::stoll((*it)[3]),
                      linked = std::stoll((*it)[4]);
      EXPECT_GE(bytes, (4 << 20) * 4 / 3) << j.out;  // 2(p-1)/p of 4 MiB
      EXPECT_EQ(shared, shm ? bytes : 0) << env << "\n" << j.out;
      EXPECT_EQ(linked, tcp ? bytes : 0) << env << "\n" << j.out;
    }
    EXPECT_EQ(ranks, 3) << j.out;
  }
}

// Frames a rank keeps until it asks for them (received in another order than sent) never
// stall their sender, however many there are (a shared-memory link has a few slots).
TEST(Transport, MessagesReceivedInTheOppositeOrderStillArrive) {
  for (const char* env : {"", "UOPC_SHARED_MEMORY=0", "UOPC_UNIX_SOCKETS=0"}) {
    CommandResult j = RunCommand(Launch(2, "p2p-order", env + std::string(" UOPC_TIMEOUT=20")), 60);
    EXPECT_EQ(j.status, 0) << env << "\n" << j.out;
    EXPECT_TRUE(Has(j.out, "[rank 1] 12 checks, 0 wrong")) << env << "\n" << j.out;
  }
}

// The transport sends from the caller's buffers; once a collective is done they are the
// caller's again: overwritten and freed at once, what the peers got is still right. Rank 2
// takes no part in the send/recv between the all-reduces (p2p must not shift its numbering).
TEST(Buffers, AreFreeAsSoonAsTheCollectiveIsDone) {
  CommandResult j = RunCommand(Launch(3, "reuse"), 120);
  EXPECT_EQ(j.status, 0) << j.out;
  EXPECT_TRUE(Has(j.out, "[rank 1] 8 checks, 0 wrong")) << j.out;
  EXPECT_FALSE(Has(j.out, "WRONG")) << j.out;
}

// A done collective's frames have left the process: ranks that exit at once, without
// closing the group, still leave their peers everything they need.
TEST(Buffers, ARankMayExitAsSoonAsItsCollectiveIsDone) {
  for (int attempt = 0; attempt < 4; ++attempt) {  // the ranks race differently each time
    // (through shared memory, and through TCP links)
    CommandResult j =
        RunCommand(Launch(3, "quick-exit", attempt % 2 ? "UOPC_UNIX_SOCKETS=0" : ""), 60);
    EXPECT_EQ(j.status, 0) << j.out;
    for (int r = 0; r < 3; ++r)
      EXPECT_TRUE(Has(j.out, "[rank " + std::to_string(r) + "] 2 checks, 0 wrong")) << j.out;
  }
}

TEST(DataParallel, AveragedHalfBatchGradientsEqualTheFullBatchGradient) {
  CommandResult j = RunCommand(Launch(2, "linear"), 120);
  EXPECT_EQ(j.status, 0) << j.out;
  EXPECT_TRUE(Has(j.out, "[rank 0] max |mean of half-batch gradients - full-batch gradient| = "))
      << j.out;
}

// A gradient larger than a bucket keeps its kernel (a supplied matmul, where the CPU has one)
TEST(DataParallel, AGradientLargerThanABucketIsMadeByItsOwnKernel) {
  CommandResult j = RunCommand(Launch(2, "buckets"), 120);
  EXPECT_EQ(j.status, 0) << j.out;
  EXPECT_TRUE(Has(j.out, "[rank 0] kernels of the gradients not in the averaged plan: 0; values "
                         "equal"))
      << j.out;
}

// A job of one made in code, with no launcher and no MASTER_PORT: rank 0's store is where
// its server was put (it dialed port 0 and waited out the timeout), and its collectives
// leave the data as it is. With more ranks, no port is an error at once.
TEST(ProcessGroup, AJobOfOneNeedsNoPort) {
  uopc::JobEnv env;
  env.token = "process-group-test";
  env.timeout = std::chrono::milliseconds(5000);
  absl::StatusOr<std::unique_ptr<uopc::ProcessGroup>> g = uopc::ProcessGroup::Create(env);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<float> data = {1.5f, -2.0f, 3.25f};
  ASSERT_TRUE((*g)->AllReduce(data.data(), 3, uopc::DType::kF32, uopc::ReduceOp::kSum)->Wait().ok());
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  env.world_size = 2;
  absl::StatusOr<std::unique_ptr<uopc::ProcessGroup>> two = uopc::ProcessGroup::Create(env);
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Has(std::string(two.status().message()), "no MASTER_PORT")) << two.status();
}

TEST(Launcher, SetsEachRanksEnvironmentAndPrefixesItsLines) {
  CommandResult j = RunCommand(Launch(3, "hello"), 60);
  EXPECT_EQ(j.status, 0) << j.out;
  for (int r = 0; r < 3; ++r)
    EXPECT_TRUE(Has(j.out, "[rank " + std::to_string(r) + "] hello from rank " + std::to_string(r) +
                               " of 3 (local " + std::to_string(r) + " of 3, via torchrun)"))
        << j.out;
}

// The node's cores are divided among its ranks (their kernels' threads), unless the user
// says how many; each rank runs on its share of them (nproc counts the cores a process may
// run on), unless --bind none.
TEST(Launcher, GivesEachRankItsShareOfTheCores) {
  cpu_set_t cpus;
  ASSERT_EQ(sched_getaffinity(0, sizeof cpus, &cpus), 0);
  const int cores = CPU_COUNT(&cpus), share = std::max(1, cores / 2);
  const std::string launch = Runfile("distributed/uopc_launch") + " --nproc 2 -- ";
  const std::string say = "sh -c 'echo threads $UOPC_THREADS on $(nproc) of " +
                          std::to_string(cores) + "; grep Cpus_allowed_list /proc/self/status'";
  CommandResult j = RunCommand(launch + say, 60);
  EXPECT_EQ(j.status, 0) << j.out;
  const int on = cores >= 2 ? share : cores;
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(Has(j.out, "[rank " + std::to_string(r) + "] threads " + std::to_string(share) +
                               " on " + std::to_string(on) + " of " + std::to_string(cores)))
        << j.out;
  std::smatch m0, m1;  // (each its own cores)
  ASSERT_TRUE(std::regex_search(j.out, m0, std::regex("rank 0\\] Cpus_allowed_list:\\s*(\\S+)")));
  ASSERT_TRUE(std::regex_search(j.out, m1, std::regex("rank 1\\] Cpus_allowed_list:\\s*(\\S+)")));
  if (cores >= 2) {
    EXPECT_NE(m0[1].str(), m1[1].str()) << j.out;
  }
  CommandResult unbound =
      RunCommand(Runfile("distributed/uopc_launch") + " --nproc 2 --bind none -- " + say, 60);
  EXPECT_TRUE(Has(unbound.out, "[rank 1] threads " + std::to_string(share) + " on " +
                                   std::to_string(cores) + " of " + std::to_string(cores)))
      << unbound.out;
  EXPECT_EQ(RunCommand(Runfile("distributed/uopc_launch") + " --nproc 2 --bind some -- true").out,
            "uopc_launch: --bind some: expected cores or none\n\n" +
                RunCommand(Runfile("distributed/uopc_launch") + " --help").out);
  CommandResult set =
      RunCommand("UOPC_THREADS=5 " + launch + "sh -c 'echo threads $UOPC_THREADS'", 60);
  EXPECT_TRUE(Has(set.out, "[rank 1] threads 5")) << set.out;
}

// Node 0 keeps to TCP (as if on another host): its ranks reach everyone over TCP, and
// node 1's ranks reach each other through unix sockets and node 0 over TCP.
TEST(Launcher, TwoNodesOfTwoRanksFormOneJobOfFour) {
  const std::string node = Runfile("distributed/uopc_launch") +
                           " --nproc 2 --nnodes 2 --master-port " + std::to_string(FreePort()) +
                           " --node-rank ";
  const std::string worker = " -- " + Runfile("tests/distributed/collective_worker") + " hello";
  CommandResult j =
      RunCommand("export UOPC_JOB_TOKEN=t0ken; " + node + "1" + worker + " & UOPC_UNIX_SOCKETS=0 " +
                     node + "0" + worker + "; a=$?; wait $!; exit $((a + $?))",
                 120);
  EXPECT_EQ(j.status, 0) << j.out;
  for (int r = 0; r < 4; ++r)
    EXPECT_TRUE(Has(
        j.out, "[rank " + std::to_string(r) + "] hello from rank " + std::to_string(r) + " of 4"))
        << j.out;
  for (const char* line :
       {"[rank 0] reaches rank 1 at 127.0.0.1:", "[rank 1] reaches rank 2 at 127.0.0.1:",
        "[rank 2] reaches rank 0 at 127.0.0.1:", "[rank 2] reaches rank 3 at unix-abstract:",
        "[rank 3] reaches rank 2 at unix-abstract:"})
    EXPECT_TRUE(Has(j.out, line)) << line << "\n" << j.out;
}

TEST(Launcher, ExitsWithTheFailingRanksStatusAndStopsTheOthers) {
  CommandResult j = RunCommand(Launch(3, "exit 7"), 60);  // ranks 0 and 2 would sleep a minute
  EXPECT_EQ(j.status, 7) << j.out;
  EXPECT_TRUE(Has(j.out, "uopc_launch: rank 1 exited with status 7")) << j.out;
  // ranks 0 and 2 are stopped (or one of them fails first: rank 1 left without a goodbye)
  EXPECT_TRUE(Has(j.out, "uopc_launch: stopping the ")) << j.out;
}

// --max-restarts: a job that fails every time is started N + 1 times, each restart said
// with its cause, the ranks told which start they are (UOPC_RESTART_COUNT); then it stops
// with the failing rank's status. A job that succeeds on a restart exits 0.
TEST(Launcher, RestartsAFailedJobUpToMaxRestarts) {
  const std::string launch =
      Runfile("distributed/uopc_launch") + " --nproc 2 --grace 0.2 --max-restarts 2 -- sh -c ";
  CommandResult always = RunCommand(
      launch + "'echo start $UOPC_RESTART_COUNT; [ $RANK = 1 ] && exit 3; sleep 30'", 60);
  EXPECT_EQ(always.status, 3) << always.out;
  for (const char* line :
       {"[rank 1] start 0", "[rank 0] start 1", "[rank 1] start 2",
        "uopc_launch: restarting the job (restart 1 of 2: rank 1 failed)",
        "uopc_launch: restarting the job (restart 2 of 2: rank 1 failed)",
        "uopc_launch: rank 1 failed after 2 restart(s); giving up"})
    EXPECT_TRUE(Has(always.out, line)) << line << "\n" << always.out;
  EXPECT_FALSE(Has(always.out, "start 3")) << always.out;
  CommandResult second =
      RunCommand(launch + "'[ $UOPC_RESTART_COUNT = 1 ] || exit 5; echo done $RANK'", 60);
  EXPECT_EQ(second.status, 0) << second.out;
  EXPECT_TRUE(Has(second.out, "[rank 0] done 0")) << second.out;
  EXPECT_TRUE(Has(second.out, "restart 1 of 2")) << second.out;
  CommandResult bad =
      RunCommand(Runfile("distributed/uopc_launch") + " --nproc 1 --max-restarts -1 -- true", 10);
  EXPECT_EQ(bad.status, 2) << bad.out;
}

TEST(Launcher, HelpAndBadUsage) {
  CommandResult help = RunCommand(Runfile("distributed/uopc_launch") + " --help", 10);
  EXPECT_EQ(help.status, 0);
  EXPECT_TRUE(Has(help.out, "--nproc N")) << help.out;
  CommandResult none = RunCommand(Runfile("distributed/uopc_launch") + " --nproc 2", 10);
  EXPECT_EQ(none.status, 2);
  EXPECT_TRUE(Has(none.out, "no program")) << none.out;
  CommandResult nodes =
      RunCommand(Runfile("distributed/uopc_launch") + " --nproc 2 --nnodes 2 -- true", 10);
  EXPECT_EQ(nodes.status, 2);
  EXPECT_TRUE(Has(nodes.out, "--master-port")) << nodes.out;
  CommandResult missing =
      RunCommand(Runfile("distributed/uopc_launch") + " --nproc 1 -- /no/such/program", 10);
  EXPECT_EQ(missing.status, 127) << missing.out;
  EXPECT_TRUE(Has(missing.out, "[rank 0] uopc_launch: cannot run /no/such/program")) << missing.out;
  CommandResult grace =
      RunCommand(Runfile("distributed/uopc_launch") + " --nproc 1 --grace inf -- true", 10);
  EXPECT_EQ(grace.status, 2);
  EXPECT_TRUE(Has(grace.out, "--grace=inf: expected a number from 0 to 3600")) << grace.out;
  CommandResult nproc =
      RunCommand(Runfile("distributed/uopc_launch") + " --nproc 0 -- true", 10);
  EXPECT_TRUE(Has(nproc.out, "--nproc=0: expected an integer from 1 to 4096")) << nproc.out;
}

// A rank killed in the middle of a 64 MiB all-reduce: the others fail at once, naming it,
// and the launcher exits with the killed rank's status.
TEST(Faults, ARankKilledMidAllReduceFailsTheOthersNamingIt) {
  CommandResult j = RunCommand(Launch(3, "die", "UOPC_TIMEOUT=30"), 60);
  EXPECT_EQ(j.status, 128 + 9) << j.out;
  EXPECT_TRUE(Has(j.out, "uopc_launch: rank 1 was killed by signal 9")) << j.out;
  EXPECT_TRUE(Has(j.out, "[rank 2] FAILED: ")) << j.out;
  EXPECT_TRUE(Has(j.out, "[rank 0] FAILED: ")) << j.out;
  EXPECT_TRUE(Has(j.out, "rank 1's connection dropped")) << j.out;
  EXPECT_TRUE(Has(j.out, "all_reduce of 16777216 x f32 (collective #2)")) << j.out;
  EXPECT_FALSE(Has(j.out, "the all_reduce finished")) << j.out;
}

// The same inside a plan: a rank killed while a collective step of the plan runs makes the
// other ranks' plans fail with the step and the lost rank named.
TEST(Faults, ARankKilledMidPlanFailsTheOthersPlansNamingIt) {
  CommandResult j = RunCommand(Launch(3, "die-in-plan", "UOPC_TIMEOUT=30"), 60);
  EXPECT_EQ(j.status, 128 + 9) << j.out;
  EXPECT_TRUE(Has(j.out, "uopc_launch: rank 1 was killed by signal 9")) << j.out;
  for (const char* r : {"[rank 0] FAILED: ", "[rank 2] FAILED: "})
    EXPECT_TRUE(Has(j.out, std::string(r) + "run plan: step 1 (all_reduce of 16777216 x f32 on "
                                            "CPU:0 over group 1 of 3 ranks): rank "))
        << j.out;
  EXPECT_TRUE(Has(j.out, "rank 1's connection dropped")) << j.out;
  EXPECT_FALSE(Has(j.out, "the plan finished")) << j.out;
}

// The same in a pipeline: the stages on either side of the lost one fail, naming it, within
// the timeout (not at its end: the connection drops), and the launcher exits with its status.
TEST(Faults, ARankKilledMidPipelineStepFailsEveryOtherStageNamingIt) {
  CommandResult j = RunCommand(Launch(3, "die-in-pipeline", "UOPC_TIMEOUT=300"), 120);
  EXPECT_EQ(j.status, 128 + 9) << j.out;
  EXPECT_TRUE(Has(j.out, "uopc_launch: rank 1 was killed by signal 9")) << j.out;
  for (const char* r : {"[rank 0] FAILED: run plan: step ", "[rank 2] FAILED: run plan: step "})
    EXPECT_TRUE(Has(j.out, r)) << j.out;
  EXPECT_EQ(Count(j.out, "rank 1's connection dropped"), 2) << j.out;
  EXPECT_FALSE(Has(j.out, "the pipeline finished")) << j.out;
}

// A stopped (silent) rank: the others fail when the timeout runs out, naming it, and the
// launcher stops the job (the stopped rank included) with a failure.
TEST(Faults, AStalledRankTimesOutTheOthersNamingIt) {
  // (a grace of 6 s: the rank that timed out reports after the rank it told has exited, and
  // on a loaded machine 2 s were not always enough for it to)
  CommandResult j = RunCommand(Launch(3, "stall", "UOPC_TIMEOUT=3", 6), 60);
  EXPECT_EQ(j.status, 3) << j.out;
  EXPECT_TRUE(Has(j.out, "[rank 2] FAILED: DEADLINE_EXCEEDED")) << j.out;
  EXPECT_TRUE(Has(j.out, "timed out waiting for rank 1")) << j.out;
  EXPECT_TRUE(Has(j.out, "[rank 0] FAILED: ")) << j.out;
  // the stalled rank at least (rank 0 may not have exited yet either)
  EXPECT_TRUE(Has(j.out, "rank(s) still running")) << j.out;
  // stopped by the SIGTERM at the end of the grace (continued to act on it), not a SIGKILL
  // one more grace later
  EXPECT_TRUE(Has(j.out, "uopc_launch: rank 1 stopped by signal 15 (Terminated)")) << j.out;
}

// A socket that listens on a free port with SO_REUSEPORT, as another program might.
int HoldPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  listen(fd, 4);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return fd;
}

int PortOf(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

TEST(Launcher, APortInUseIsRefusedAtOnceNeverShared) {
  int fd = HoldPort();
  const std::string port = std::to_string(PortOf(fd));
  CommandResult j = RunCommand(Runfile("distributed/uopc_launch") + " --nproc 2 --master-port " +
                                   port + " -- " + Runfile("tests/distributed/collective_worker") +
                                   " hello",
                               10);
  EXPECT_EQ(j.status, 1) << j.out;
  EXPECT_EQ(j.out, "uopc_launch: port " + port +
                       " is in use (by another job or program): choose another --master-port, "
                       "or leave it out for a free one\n");
  // a rank 0 started without the launcher fails at bind time too, not at the timeout
  CommandResult r = RunCommand("env RANK=0 WORLD_SIZE=1 MASTER_PORT=" + port +
                                   " UOPC_TIMEOUT=60 " +
                                   Runfile("tests/distributed/collective_worker") + " hello",
                               10);
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "port " + port + " (MASTER_PORT) is in use")) << r.out;
  close(fd);
}

// The first line of /proc/PID/stat ("" if it cannot be read).
std::string StatLine(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  return line;
}

// Whether process `pid`, whose /proc/PID/stat line is `stat`, is gone or a zombie nobody
// waits for. An unreadable stat file alone (no file descriptors left) is not taken as gone.
bool Gone(pid_t pid, const std::string& stat) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  size_t close_paren = stat.rfind(')');
  return close_paren != std::string::npos && stat.size() > close_paren + 2 &&
         stat[close_paren + 2] == 'Z';
}

class LauncherKilled : public testing::TestWithParam<int> {};

// kill -9 of uopc_launch takes its ranks with it.
TEST_P(LauncherKilled, TakesEveryRankWithIt) {
  const int n = GetParam();
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/killed" + std::to_string(n);
  mkdir(dir.c_str(), 0755);
  for (int r = 0; r < n; ++r) unlink((dir + "/pid." + std::to_string(r)).c_str());  // a past run's
  pid_t launcher = fork();
  if (launcher == 0) {
    std::string script = "echo $$ > " + dir + "/pid.$RANK; exec sleep 60";
    execl(Runfile("distributed/uopc_launch").c_str(), "uopc_launch", "--nproc",
          std::to_string(n).c_str(), "--", "/bin/sh", "-c", script.c_str(), nullptr);
    _exit(127);
  }
  std::vector<pid_t> ranks;
  for (int tries = 0; tries < 200 && static_cast<int>(ranks.size()) < n; ++tries) {
    usleep(50000);
    ranks.clear();
    for (int r = 0; r < n; ++r) {
      std::ifstream f(dir + "/pid." + std::to_string(r));
      pid_t p = 0;
      if (f >> p) ranks.push_back(p);
    }
  }
  ASSERT_EQ(static_cast<int>(ranks.size()), n);
  kill(launcher, SIGKILL);
  waitpid(launcher, nullptr, 0);
  for (pid_t p : ranks) {
    std::string stat = StatLine(p);
    bool gone = Gone(p, stat);
    for (int tries = 0; !gone && tries < 100; ++tries) {
      usleep(50000);
      stat = StatLine(p);
      gone = Gone(p, stat);
    }
    EXPECT_TRUE(gone) << "rank process " << p << " outlived its launcher: /proc/" << p
                      << "/stat reads " << stat;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, LauncherKilled, testing::Values(2, 4));

class Mismatch : public testing::TestWithParam<const char*> {};

TEST_P(Mismatch, IsReportedNotMisreduced) {
  CommandResult j = RunCommand(Launch(2, GetParam(), "UOPC_TIMEOUT=30"), 60);
  EXPECT_EQ(j.status, 3) << j.out;
  EXPECT_TRUE(Has(j.out, "mismatched collectives")) << j.out;
  EXPECT_FALSE(Has(j.out, "the mismatched collective finished")) << j.out;
}

INSTANTIATE_TEST_SUITE_P(Kinds, Mismatch,
                         testing::Values("mismatch-op", "mismatch-count", "mismatch-dtype"));

}  // namespace
