// gpt_serve as a user runs it: a real server process on a free port, real clients (the same
// program with --client), a checkpoint that gpt_train wrote. Each request's greedy tokens
// are gpt_generate's, however many run beside it; a client that goes away frees its
// blocks; bad requests get one clear line and the others go on; 200 requests from 16
// clients all complete, on one compiled step.
#include <chrono>
#include <cstdlib>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testing/command.h"
#include "tests/testing/server_process.h"

namespace {

using uopc::testing::CommandResult;
using uopc::testing::RunCommand;
using uopc::testing::Runfile;
using uopc::testing::ServerProcess;

std::string Bin(const std::string& name) { return Runfile("examples/gpt/" + name); }

const std::string kToken = "UOPC_SERVE_TOKEN=serve-test ";

class GptServe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    checkpoint_ = std::string(std::getenv("TEST_TMPDIR")) + "/serve.safetensors";
    CommandResult r = RunCommand(Bin("gpt_train") +
                                     " --layers 2 --dim 32 --heads 2 --context 64 --batch 8 "
                                     "--steps 40 --lr 1e-2 --warmup 5 --log-every 40 --checkpoint " +
                                     checkpoint_,
                                 300);
    ASSERT_EQ(r.status, 0) << r.out;
  }
  static std::unique_ptr<ServerProcess> Serve(const std::string& flags = "") {
    std::vector<std::string> args = {"--checkpoint", checkpoint_, "--port", "0"};
    for (size_t at = 0; at < flags.size();) {
      size_t end = flags.find(' ', at);
      if (end == std::string::npos) end = flags.size();
      if (end > at) args.push_back(flags.substr(at, end - at));
      at = end + 1;
    }
    return std::make_unique<ServerProcess>(Bin("gpt_serve"), args,
                                           std::vector<std::string>{"UOPC_SERVE_TOKEN=serve-test"});
  }
  static CommandResult Client(const ServerProcess& s, const std::string& flags) {
    return RunCommand(ServerProcess::TsanOptions() + " " + kToken + Bin("gpt_serve") +
                          " --client " + s.address() + " " + flags,
                      120);
  }
  // A status figure ("free_blocks 12 of 16, ...").
  static int64_t Figure(const ServerProcess& s, const std::string& name) {
    std::smatch m;
    const std::string out = Client(s, "--status").out;
    if (!std::regex_search(out, m, std::regex(name + " ([0-9]+)"))) return -1;
    return std::stoll(m[1]);
  }
  static std::string checkpoint_;
};

std::string GptServe::checkpoint_;

TEST_F(GptServe, HelpAndATokenAreRequired) {
  CommandResult help = RunCommand(Bin("gpt_serve") + " --help");
  EXPECT_EQ(help.status, 0);
  for (const char* f : {"--max-sequences (default 32", "--client", "--load", "--cancel-after"})
    EXPECT_NE(help.out.find(f), std::string::npos) << f << "\n" << help.out;
  CommandResult none = RunCommand("env -u UOPC_SERVE_TOKEN " + Bin("gpt_serve") + " --port 0");
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(none.out,
            "gpt_serve: no token: set UOPC_SERVE_TOKEN (the server requires it of every call)\n");
}

// A client given its prompt both ways, or a prompt with --load (whose prompts are random),
// is refused before it connects, not served one of them
TEST_F(GptServe, AClientGivenTwoPromptsIsRefused) {
  for (const char* flags : {"--prompt 'the ' --prompt-ids 1,2", "--load 3 --prompt 'the '",
                            "--load 3 --prompt-ids 1"}) {
    CommandResult r = RunCommand(kToken + Bin("gpt_serve") + " --client 127.0.0.1:1 " + flags);
    EXPECT_EQ(r.status, 1) << flags;
    EXPECT_EQ(r.out.find("gpt_serve: --"), 0u) << r.out;
    EXPECT_NE(r.out.find("expected one of them"), std::string::npos) << r.out;
  }
}

TEST_F(GptServe, BatchedGreedyStreamsAreGptGeneratesTokens) {
  std::unique_ptr<ServerProcess> server = Serve("--max-sequences 8 --step-tokens 16");
  ASSERT_TRUE(server->ok()) << server->first_line();
  const std::vector<std::pair<std::string, int>> requests = {
      {"the ", 40}, {"GNU General Public License", 30}, {"a", 55}, {"free software ", 20},
      {"you", 12}, {"of the Program", 44}};
  std::vector<CommandResult> served(requests.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < requests.size(); ++i)
    clients.emplace_back([&, i] {
      served[i] = Client(*server, "--temperature 0 --prompt '" + requests[i].first +
                                      "' --tokens " + std::to_string(requests[i].second));
    });
  for (std::thread& t : clients) t.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_EQ(served[i].status, 0) << served[i].out;
    CommandResult alone =
        RunCommand(Bin("gpt_generate") + " --checkpoint " + checkpoint_ +
                       " --temperature 0 --prompt '" + requests[i].first + "' --tokens " +
                       std::to_string(requests[i].second) + " 2>/dev/null",
                   120);
    ASSERT_EQ(alone.status, 0) << alone.out;
    EXPECT_EQ(requests[i].first + served[i].out, alone.out) << "request " << i;
  }
  EXPECT_EQ(Figure(*server, "plans_built"), 1);  // (one step, compiled once)
}

TEST_F(GptServe, AClientThatGoesAwayFreesItsBlocksAndBadRequestsGetClearErrors) {
  std::unique_ptr<ServerProcess> server = Serve("--max-sequences 4");
  ASSERT_TRUE(server->ok()) << server->first_line();
  const int64_t all = Figure(*server, "free_blocks [0-9]+ of");
  CommandResult gone = Client(*server, "--prompt 'the ' --tokens 60 --cancel-after 3");
  EXPECT_EQ(gone.status, 0) << gone.out;
  EXPECT_NE(gone.out.find("cancelled after 3 tokens"), std::string::npos) << gone.out;
  int64_t free_blocks = -1;
  for (int i = 0; i < 100 && free_blocks != all; ++i) {
    free_blocks = Figure(*server, "free_blocks");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(free_blocks, all);
  EXPECT_EQ(Figure(*server, "cancelled"), 1);
  // bad requests: one line each, naming what is wrong
  CommandResult far = Client(*server, "--prompt 'the ' --tokens 61");
  EXPECT_EQ(far.status, 1);
  EXPECT_NE(far.out.find("a prompt of 4 tokens and up to 61 new ones (65 positions"),
            std::string::npos)
      << far.out;
  CommandResult odd = Client(*server, "--prompt \"$(printf '\\001')\" --tokens 5");
  EXPECT_EQ(odd.status, 1);
  EXPECT_NE(odd.out.find("prompt character 0 (byte 1) is not in the model's vocabulary"),
            std::string::npos)
      << odd.out;
  CommandResult ids = Client(*server, "--prompt-ids 1,100000 --tokens 5");
  EXPECT_NE(ids.out.find("prompt token 1 is 100000"), std::string::npos) << ids.out;
  CommandResult wrong = RunCommand(ServerProcess::TsanOptions() + " UOPC_SERVE_TOKEN=other " +
                                   Bin("gpt_serve") + " --client " + server->address() +
                                   " --status");
  EXPECT_EQ(wrong.status, 1);
  EXPECT_NE(wrong.out.find("wrong uopc-token"), std::string::npos) << wrong.out;
  // and the server goes on serving
  CommandResult ok = Client(*server, "--prompt 'the ' --tokens 5");
  EXPECT_EQ(ok.status, 0) << ok.out;
}

TEST_F(GptServe, TwoHundredRequestsFromSixteenClientsComplete) {
  // a pool for 4 full-context requests: the others wait, or are preempted and recomputed
  std::unique_ptr<ServerProcess> server = Serve("--max-sequences 16 --blocks 16");
  ASSERT_TRUE(server->ok()) << server->first_line();
  CommandResult load = Client(*server, "--load 200 --concurrency 16 --temperature 0.8");
  ASSERT_EQ(load.status, 0) << load.out;
  EXPECT_NE(load.out.find("200 requests (16 at a time): 200 done, 0 failed"), std::string::npos)
      << load.out;
  EXPECT_EQ(Figure(*server, "finished"), 200);
  EXPECT_EQ(Figure(*server, "free_blocks"), 16);
  EXPECT_EQ(Figure(*server, "plans_built"), 1);
}

}  // namespace
