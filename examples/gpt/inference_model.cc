#include "examples/gpt/inference_model.h"

#include <algorithm>

#include "examples/gpt/model_config.h"
#include "frontend/error.h"
#include "frontend/gpt2_checkpoint.h"
#include "frontend/safetensors.h"

namespace uopc {

absl::StatusOr<InferenceModel> LoadInferenceModel(const std::string& path, int64_t gpt2_heads) {
  absl::StatusOr<Checkpoint> ckpt = LoadSafetensors(path);
  if (!ckpt.ok()) return ckpt.status();
  // gpt_train's checkpoints say what they are; others are read as GPT-2's
  const bool chars = ckpt->metadata.contains("vocab");
  absl::StatusOr<GptConfig> config;
  if (chars) {
    config = ConfigFromMetadata(ckpt->metadata, path);
  } else {
    *ckpt = FromGpt2Naming(*std::move(ckpt));
    const HostTensor* wte = ckpt->Find("wte.weight");
    const int64_t dim = wte && wte->shape.size() == 2 ? wte->shape[1].value() : 0;
    config = Gpt2Config(*ckpt, gpt2_heads > 0 ? gpt2_heads : std::max<int64_t>(dim / 64, 1));
  }
  if (!config.ok()) return config.status();
  if (absl::Status s = MatchesTensors(*config, *ckpt, path); !s.ok()) return s;
  InferenceModel m;
  m.vocabulary = chars ? ckpt->metadata["vocab"] : "";
  try {
    m.model = std::make_unique<Gpt>(*config);
  } catch (const Error& e) {
    return absl::InvalidArgumentError(e.what());
  }
  if (absl::Status s = LoadModel(*ckpt, *m.model, {}, {"optim."}); !s.ok()) return s;
  return m;
}

}  // namespace uopc
