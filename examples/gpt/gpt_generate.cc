// gpt_generate: loads a checkpoint written by gpt_train and samples characters from a
// prompt, with temperature, top-k and a seed. The context is padded to the model's full
// length as the seed's sampler does, so every step runs the same graph (one plan); a later
// KV cache makes the cost follow the position instead.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "examples/gpt/char_corpus.h"
#include "examples/gpt/device_flag.h"
#include "examples/gpt/model_config.h"
#include "examples/gpt/flags.h"
#include "frontend/nn.h"
#include "frontend/realize.h"
#include "frontend/safetensors.h"

using namespace uopc;

int main(int argc, char** argv) {
  std::string checkpoint = "gpt.safetensors", prompt = "\n", device = "CPU";
  int64_t tokens = 300, top_k = 0, seed = 0;
  double temperature = 0.8;
  Flags flags(
      "usage: gpt_generate [flags]\n\nSamples text from a GPT checkpoint written by gpt_train.");
  flags.Add("checkpoint", &checkpoint, "the checkpoint to load");
  flags.Add("prompt", &prompt,
            "text to continue (its characters must be in the model's vocabulary)");
  flags.Add("tokens", &tokens, "characters to generate", 0, 1'000'000'000);
  flags.Add("temperature", &temperature, "sampling temperature (lower is more conservative)",
            1e-6, 1e6);
  flags.Add("top-k", &top_k, "sample among the k most likely characters only (0: all)", 0,
            1'000'000'000);
  flags.Add("seed", &seed, "random seed of the sampler", 0, INT64_MAX);
  flags.Add("device", &device, kDeviceHelp);
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  auto fail = [](const std::string& what) {
    std::cerr << "gpt_generate: " << what << "\n";
    return 1;
  };
  absl::StatusOr<Checkpoint> ckpt = LoadSafetensors(checkpoint);
  if (!ckpt.ok()) return fail(std::string(ckpt.status().message()));
  try {
    absl::StatusOr<GptConfig> config = ConfigFromMetadata(ckpt->metadata, checkpoint);
    if (!config.ok()) return fail(std::string(config.status().message()));
    if (absl::Status s = MatchesTensors(*config, *ckpt, checkpoint); !s.ok())
      return fail(std::string(s.message()));
    const std::string& vocab = ckpt->metadata["vocab"];
    std::vector<DeviceRef> devices = DeviceList(device);
    Gpt model(*config);
    model.Train(false);
    if (absl::Status s = LoadModel(*ckpt, model, {}, {"optim."}); !s.ok())
      return fail(std::string(s.message()));
    model.Split(devices);
    absl::StatusOr<std::vector<int32_t>> idx = Encode(vocab, prompt);
    if (!idx.ok()) return fail(std::string(idx.status().message()));
    if (idx->empty()) return fail("--prompt is empty");
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    std::cout << prompt << std::flush;
    const int64_t T = config->context, V = config->vocab;
    for (int64_t n = 0; n < tokens; ++n) {
      // the last T tokens, padded to T: one shape, one plan
      std::vector<int32_t> ctx(idx->end() - std::min<int64_t>(T, idx->size()), idx->end());
      int64_t last = static_cast<int64_t>(ctx.size()) - 1;
      ctx.resize(T, 0);
      std::vector<float> logits =
          model.Forward(Tensor::FromVector(ctx, {1, T}, DType::kI32, devices.front()))
              .ToVector<float>();
      std::vector<double> p(logits.begin() + last * V, logits.begin() + (last + 1) * V);
      if (top_k > 0 && top_k < V) {
        std::vector<double> sorted = p;
        std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(),
                         std::greater<>());
        for (double& x : p)
          if (x < sorted[top_k - 1]) x = -INFINITY;
      }
      double m = *std::max_element(p.begin(), p.end());
      for (double& x : p) x = std::exp((x - m) / temperature);
      std::discrete_distribution<int> pick(p.begin(), p.end());
      int32_t next = pick(rng);
      idx->push_back(next);
      std::cout << vocab[next] << std::flush;
    }
    std::cout << "\n";
  } catch (const Error& e) {
    return fail(e.what());
  }
  return 0;
}
