// gpt_serve: serves generation from a GPT checkpoint over gRPC (generation_service.proto)
// with continuous batching over a paged KV cache: requests join and leave the running
// batch between any two steps, and one compiled step serves every mix of them. Prints the
// address it listens on ("gpt_serve: gpt.safetensors on 127.0.0.1:41234") once it serves,
// and serves until SIGTERM or SIGINT. Every call must carry the token in UOPC_SERVE_TOKEN.
//
// The same program is the client: one request streamed to stdout, a load of many at once
// (prints what came back and the tokens a second), or the server's status.
//
//   UOPC_SERVE_TOKEN=secret gpt_serve --checkpoint gpt.safetensors --port 0 &
//   UOPC_SERVE_TOKEN=secret gpt_serve --client 127.0.0.1:41234 --prompt "ROMEO:" --tokens 100
//   UOPC_SERVE_TOKEN=secret gpt_serve --client 127.0.0.1:41234 --load 200 --concurrency 16
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "core/flags.h"
#include "core/parse_number.h"
#include "examples/gpt/device_flag.h"
#include "examples/gpt/generation_server.h"
#include "examples/gpt/inference_model.h"
#include "examples/gpt/model_config.h"
#include "rpc/grpc_call.h"

using namespace uopc;

namespace {

constexpr std::chrono::hours kNoDeadline(24 * 365);

int Fail(const std::string& what) {
  std::cerr << "gpt_serve: " << what << "\n";
  return 1;
}

std::string Token() {
  const char* t = std::getenv("UOPC_SERVE_TOKEN");
  return t ? t : "";
}

struct ClientFlags {
  std::string address, prompt, prompt_ids;
  int64_t tokens = 100, top_k = 0, seed = 0, stop_id = -1, load = 0, concurrency = 8,
          cancel_after = -1;
  double temperature = 0.8;
  bool status = false;
};

// One request: the tokens as they come to `out` (text, or ids after commas), until the
// stream ends: its status. `cancel_after` >= 0 cancels the call after that many tokens.
grpc::Status Request(serve::Generation::Stub& stub, const serve::GenerateRequest& req,
                     int64_t cancel_after, std::ostream* out, int64_t* received) {
  auto ctx = CallContext(Token(), kNoDeadline);
  ctx->set_wait_for_ready(true);  // (a server still starting, or busy, is waited for)
  std::unique_ptr<grpc::ClientReader<serve::GenerateReply>> reader = stub.Generate(ctx.get(), req);
  serve::GenerateReply r;
  *received = 0;
  while (reader->Read(&r)) {
    if (out) *out << (r.text().empty() ? absl::StrCat(*received ? "," : "", r.token()) : r.text())
                  << std::flush;
    if (++*received == cancel_after) {
      ctx->TryCancel();
      break;
    }
  }
  return reader->Finish();
}

int RunClient(const ClientFlags& f) {
  auto stub = serve::Generation::NewStub(MakeChannel(f.address));
  serve::StatusReply st;
  {
    auto ctx = CallContext(Token(), std::chrono::seconds(30));
    ctx->set_wait_for_ready(true);
    grpc::Status s = stub->Status(ctx.get(), serve::StatusRequest(), &st);
    if (!s.ok()) return Fail(f.address + ": " + s.error_message());
  }
  if (f.status) {
    std::cout << "free_blocks " << st.free_blocks() << " of " << st.num_blocks() << ", running "
              << st.running() << ", waiting " << st.waiting() << ", queued " << st.queued()
              << ", finished " << st.finished() << ", cancelled " << st.cancelled() << ", steps "
              << st.steps() << ", preemptions " << st.preemptions() << ", plans_built "
              << st.plans_built() << "\n";
    return 0;
  }
  serve::GenerateRequest base;
  base.set_max_tokens(f.tokens);
  base.set_temperature(f.temperature);
  base.set_top_k(f.top_k);
  base.set_seed(static_cast<uint64_t>(f.seed));
  if (f.stop_id >= 0) base.set_has_stop_id(true), base.set_stop_id(f.stop_id);
  if (f.load == 0) {
    if (!f.prompt_ids.empty()) {
      for (absl::string_view part : absl::StrSplit(f.prompt_ids, ',')) {
        absl::StatusOr<int64_t> id = ParseInt("--prompt-ids", std::string(part), 0, INT32_MAX);
        if (!id.ok()) return Fail(std::string(id.status().message()));
        base.add_prompt_ids(*id);
      }
    } else {
      base.set_prompt_text(f.prompt);
    }
    int64_t received = 0;
    grpc::Status s = Request(*stub, base, f.cancel_after, &std::cout, &received);
    std::cout << "\n" << std::flush;
    if (s.error_code() == grpc::StatusCode::CANCELLED && f.cancel_after >= 0) {
      std::cerr << "gpt_serve: cancelled after " << received << " tokens\n";
      return 0;
    }
    return s.ok() ? 0 : Fail(s.error_message());
  }
  // a load: random prompts of 8 to 56 tokens and 8 to 64 new ones, as the context allows
  const int64_t context = st.context(), vocab = st.vocab();
  std::atomic<int64_t> next{0}, done{0}, failed{0}, tokens{0};
  std::mutex mu;
  std::string first_error;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int64_t c = 0; c < f.concurrency; ++c)
    clients.emplace_back([&, c] {
      std::mt19937_64 rng(static_cast<uint64_t>(f.seed) * 1000 + static_cast<uint64_t>(c));
      for (int64_t i; (i = next++) < f.load;) {
        serve::GenerateRequest req = base;
        const int64_t prompt = std::min<int64_t>(8 + rng() % 49, std::max<int64_t>(context / 2, 1));
        const int64_t most = std::min<int64_t>(64, context - prompt);
        req.set_max_tokens(std::min<int64_t>(std::max<int64_t>(most, 1), 8 + rng() % 57));
        for (int64_t t = 0; t < prompt; ++t) req.add_prompt_ids(static_cast<int64_t>(rng() % vocab));
        int64_t received = 0;
        grpc::Status s = Request(*stub, req, -1, nullptr, &received);
        tokens += received;
        if (s.ok() && (received == req.max_tokens() || f.stop_id >= 0)) {
          ++done;
        } else {
          ++failed;
          std::lock_guard<std::mutex> l(mu);
          if (first_error.empty())
            first_error = s.ok() ? absl::StrCat("request ", i, ": ", received, " of ",
                                                req.max_tokens(), " tokens")
                                 : s.error_message();
        }
      }
    });
  for (std::thread& t : clients) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "gpt_serve: " << f.load << " requests (" << f.concurrency << " at a time): "
            << done << " done, " << failed << " failed; " << tokens << " tokens in " << s
            << " s (" << tokens / s << " tokens/s)\n";
  if (failed) return Fail("first failure: " + first_error);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string checkpoint = "gpt.safetensors", address = "127.0.0.1", device = "CPU";
  int64_t port = 0, max_sequences = 32, step_tokens = 64, blocks = 0, block_size = 16,
          max_queue = 256, heads = 0;
  ClientFlags c;
  Flags flags(
      "usage: gpt_serve [flags]                 (serve)\n"
      "       gpt_serve --client ADDRESS [flags] (request)\n\n"
      "Serves generation from a GPT checkpoint over gRPC, many requests at once (continuous\n"
      "batching over a paged KV cache), or, with --client, asks a server for it. Every call\n"
      "carries the token in UOPC_SERVE_TOKEN.");
  flags.Add("checkpoint", &checkpoint, "the checkpoint to serve (gpt_train's, or GPT-2's)");
  flags.Add("address", &address, "the address to listen on (0.0.0.0: every interface)");
  flags.Add("port", &port, "the port to listen on (0: any free one, printed)", 0, 65535);
  flags.Add("device", &device, kDeviceHelp);
  flags.Add("max-sequences", &max_sequences, "requests running at once", 1, 4096);
  flags.Add("step-tokens", &step_tokens,
            "tokens a step feeds at most (decodes first, then prompt chunks)", 1, 65536);
  flags.Add("blocks", &blocks,
            "KV cache blocks (0: enough for --max-sequences full-context requests)", 0,
            1 << 24);
  flags.Add("block-size", &block_size, "positions a KV cache block holds", 1, 4096);
  flags.Add("max-queue", &max_queue, "requests waiting at most (more are refused)", 1,
            1 << 20);
  flags.Add("heads", &heads, "attention heads of a GPT-2 checkpoint (0: dim / 64)", 0,
            kHeads.hi);
  flags.Add("client", &c.address, "be a client of the server at this address");
  flags.Add("prompt", &c.prompt, "client: text to continue");
  flags.Add("prompt-ids", &c.prompt_ids, "client: token ids to continue, e.g. 464,2068");
  flags.Add("tokens", &c.tokens, "client: tokens to generate", 0, 1 << 20);
  flags.Add("temperature", &c.temperature, "client: sampling temperature (0: greedy)", 0, 1e6);
  flags.Add("top-k", &c.top_k, "client: sample among the k most likely (0: all)", 0, 1 << 30);
  flags.Add("seed", &c.seed, "client: random seed of the sampler (and of --load's prompts)", 0,
            INT64_MAX);
  flags.Add("stop-id", &c.stop_id, "client: stop after this token id (-1: never)", -1, INT32_MAX);
  flags.Add("cancel-after", &c.cancel_after,
            "client: cancel the request after this many tokens (-1: never)", -1, 1 << 20);
  flags.Add("load", &c.load,
            "client: send this many requests of random prompts (8-56 tokens, 8-64 new, within "
            "the context) and print the tokens a second",
            0, 1 << 24);
  flags.Add("concurrency", &c.concurrency, "client: --load's requests at a time", 1, 4096);
  flags.Add("status", &c.status, "client: print the server's status");
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  if (Token().empty())
    return Fail("no token: set UOPC_SERVE_TOKEN (the server requires it of every call)");
  if (!c.address.empty()) {  // one prompt (--load's are random)
    for (auto [a, b] :
         {std::pair{"prompt", "prompt-ids"}, {"prompt", "load"}, {"prompt-ids", "load"}})
      if (flags.Given(a) && flags.Given(b))
        return Fail(absl::StrCat("--", a, " and --", b, "; expected one of them"));
    return RunClient(c);
  }

  absl::StatusOr<InferenceModel> loaded = LoadInferenceModel(checkpoint, heads);
  if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
  BlockStopSignals();  // (before the server's engine thread starts)
  try {
    std::vector<DeviceRef> devices = DeviceList(device);
    if (devices.size() != 1) return Fail("--device " + device + ": gpt_serve serves on one device");
    loaded->model->Split(devices);
    GenerationServerOptions o;
    o.token = Token();
    o.vocabulary = loaded->vocabulary;
    o.batcher = {.max_sequences = max_sequences, .step_tokens = step_tokens,
                 .num_blocks = blocks, .block_size = block_size};
    o.max_queue = max_queue;
    GenerationServer service(*loaded->model, o);
    grpc::ServerBuilder b;
    b.RegisterService(&service);
    if (!ServeUntilSignal(b, address, port, [&](int bound) {
          std::cout << "gpt_serve: " << checkpoint << " on " << address << ":" << bound
                    << std::endl;
        }))
      return Fail("cannot listen on " + address + ":" + std::to_string(port));
  } catch (const Error& e) {
    return Fail(e.what());
  }
  return 0;
}
