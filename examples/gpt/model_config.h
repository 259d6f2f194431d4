// The shape of the GPT programs' model, checked: the ranges that gpt_train's flags accept
// and that both programs require of a checkpoint's metadata, the configuration read back
// from that metadata, and about how much memory training a shape takes, so that a model
// too large for its devices is refused at the start instead of running out of memory.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"

#include "frontend/nn.h"
#include "frontend/safetensors.h"

namespace uopc {

struct IntRange {
  int64_t lo, hi;
};
inline constexpr IntRange kLayers{1, 1024}, kDim{1, 65536}, kHeads{1, 4096},
    kContext{1, 1 << 20}, kBatch{1, 1 << 20}, kSteps{1, 1'000'000'000};

/// The model of a checkpoint written by gpt_train: its `vocab` (characters), `layers`,
/// `dim`, `heads` and `context`, each present and within its range, heads dividing dim, and
/// `tie_embeddings` (0 or 1; absent: 0).
absl::StatusOr<GptConfig> ConfigFromMetadata(const std::map<std::string, std::string>& meta,
                                             const std::string& path);
/// OK if the checkpoint's tensors have the shapes `c` says (wte, wpe, and `layers` blocks):
/// checked before a model is built from the metadata, whose numbers could be anything.
absl::Status MatchesTensors(const GptConfig& c, const Checkpoint& ckpt, const std::string& path);
/// The step a checkpoint was saved at (0 to kSteps.hi).
absl::StatusOr<int64_t> StepFromMetadata(const std::map<std::string, std::string>& meta,
                                         const std::string& path);
/// About how many bytes training `c` on batches of `batch` sequences takes at least: the
/// weights, their gradients and AdamW's two moments, and the activations kept for the
/// backward pass (a step's plan holds more: its own buffers, which the runtime checks
/// against the device's memory before the plan runs).
double TrainingBytes(const GptConfig& c, int64_t batch);

}  // namespace uopc
