// gpt_generate: loads a GPT checkpoint and continues a prompt, with temperature, top-k and
// a seed, through Generate (frontend/generate.h): the prompt is read once into a KV cache
// and each new token costs what its position costs, two plans for the whole run. Reads
// gpt_train's checkpoints (characters: --prompt is text) and GPT-2 checkpoints in the
// Hugging Face naming (no vocabulary: --prompt-ids, and the tokens are printed as ids).
#include <algorithm>
#include <chrono>
#include <iostream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "core/flags.h"
#include "core/parse_number.h"
#include "examples/gpt/char_corpus.h"
#include "examples/gpt/device_flag.h"
#include "examples/gpt/inference_model.h"
#include "examples/gpt/model_config.h"
#include "frontend/autocast.h"
#include "frontend/generate.h"

using namespace uopc;

namespace {

// "3,14,15" as token ids.
absl::StatusOr<std::vector<int64_t>> ParseIds(const std::string& text) {
  std::vector<int64_t> ids;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    absl::StatusOr<int64_t> id = ParseInt("--prompt-ids", std::string(part), 0, INT32_MAX);
    if (!id.ok()) return id.status();
    ids.push_back(*id);
  }
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  std::string checkpoint = "gpt.safetensors", prompt = "\n", prompt_ids, device = "CPU",
              precision = "f32";
  int64_t tokens = 300, top_k = 0, seed = 0, heads = 0, stop_id = -1;
  double temperature = 0.8;
  bool no_cache = false, show_logits = false;
  Flags flags(
      "usage: gpt_generate [flags]\n\nContinues a prompt with a GPT checkpoint: one written by "
      "gpt_train, or a GPT-2 checkpoint in the Hugging Face naming (with --prompt-ids).");
  flags.Add("checkpoint", &checkpoint, "the checkpoint to load");
  flags.Add("prompt", &prompt,
            "text to continue (its characters must be in the model's vocabulary)");
  flags.Add("prompt-ids", &prompt_ids,
            "token ids to continue, e.g. 464,2068 (for checkpoints without a character vocabulary)");
  flags.Add("tokens", &tokens, "tokens to generate", 0, 1'000'000'000);
  flags.Add("temperature", &temperature,
            "sampling temperature (lower is more conservative; 0: always the most likely)", 0, 1e6);
  flags.Add("top-k", &top_k, "sample among the k most likely tokens only (0: all)", 0,
            1'000'000'000);
  flags.Add("seed", &seed, "random seed of the sampler", 0, INT64_MAX);
  flags.Add("stop-id", &stop_id, "stop after this token id (-1: never)", -1, INT32_MAX);
  flags.Add("heads", &heads, "attention heads of a GPT-2 checkpoint (0: dim / 64, as GPT-2)", 0,
            kHeads.hi);
  flags.Add("no-cache", &no_cache, "recompute the whole context for every token (no KV cache)");
  flags.Add("show-logits", &show_logits,
            "print each generated token's two largest logits to stderr (\"logits 3: 12 "
            "2.3456, 7 2.3401\": token 3 of the output chose among ids 12 and 7)");
  flags.Add("device", &device, kDeviceHelp);
  flags.Add("precision", &precision,
            "f32, or bf16: the matmuls, the activations after them and the KV cache in "
            "bfloat16, summing in f32 (the checkpoint's f32 weights rounded as they are read)");
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  auto fail = [](const std::string& what) {
    std::cerr << "gpt_generate: " << what << "\n";
    return 1;
  };
  if (flags.Given("prompt") && flags.Given("prompt-ids"))
    return fail("--prompt and --prompt-ids; expected one of them");
  if (precision != "f32" && precision != "bf16")
    return fail("--precision " + precision + "; expected f32 or bf16");
  absl::StatusOr<InferenceModel> loaded = LoadInferenceModel(checkpoint, heads);
  if (!loaded.ok()) return fail(std::string(loaded.status().message()));
  try {
    const bool chars = !loaded->vocabulary.empty();
    const std::string& vocab = loaded->vocabulary;
    std::vector<DeviceRef> devices = DeviceList(device);
    Gpt& model = *loaded->model;
    model.Split(devices);
    std::vector<int64_t> ids;
    if (!prompt_ids.empty()) {
      absl::StatusOr<std::vector<int64_t>> p = ParseIds(prompt_ids);
      if (!p.ok()) return fail(std::string(p.status().message()));
      ids = *p;
    } else if (!chars) {
      return fail(checkpoint + " has no character vocabulary; give the prompt as --prompt-ids");
    } else {
      absl::StatusOr<std::vector<int32_t>> p = Encode(vocab, prompt);
      if (!p.ok()) return fail(std::string(p.status().message()));
      ids.assign(p->begin(), p->end());
    }
    if (ids.empty()) return fail("the prompt is empty");
    // the prompt as given, then each token as it comes
    auto text = [&](int64_t id) { return chars ? std::string(1, vocab[id]) : std::to_string(id); };
    std::vector<std::string> shown;
    for (int64_t id : ids) shown.push_back(text(id));
    std::cout << absl::StrJoin(shown, chars ? "" : ",") << std::flush;
    GenerateOptions o;
    o.max_tokens = tokens;
    o.temperature = temperature;
    o.top_k = top_k;
    o.seed = static_cast<uint64_t>(seed);
    o.stop_token = stop_id;
    o.use_cache = !no_cache;
    int64_t chosen = 0;
    if (show_logits)
      o.on_logits = [&](const std::vector<float>& l) {
        if (l.size() < 2) return;
        const size_t top = std::max_element(l.begin(), l.end()) - l.begin();
        size_t next = top == 0 ? 1 : 0;
        for (size_t i = 0; i < l.size(); ++i)
          if (i != top && l[i] > l[next]) next = i;
        std::cerr << absl::StreamFormat("logits %d: %d %.6f, %d %.6f\n", chosen++, top, l[top],
                                        next, l[next]);
      };
    o.on_token = [&](int64_t id) {
      std::cout << (chars ? "" : ",") << text(id) << std::flush;
      return true;
    };
    auto start = std::chrono::steady_clock::now();
    const Autocast policy(precision == "bf16" ? DType::kBF16 : DType::kF32);
    Generation g = Generate(model, ids, o);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "\n" << std::flush;
    std::cerr << "gpt_generate: " << g.tokens.size() << " tokens in " << s << " s ("
              << (g.tokens.empty() ? 0.0 : 1e3 * s / g.tokens.size()) << " ms/token), "
              << g.plans_built << " plans built, " << (no_cache ? "no cache" : "KV cache")
              << "\n";
  } catch (const Error& e) {
    return fail(e.what());
  }
  return 0;
}
