// GPT-2 checkpoints as the Hugging Face transformers library writes them, read into a Gpt:
// its names ("transformer.h.0.attn.c_attn.weight") carry a "transformer." prefix, each
// block holds the causal-mask buffers "attn.bias" and "attn.masked_bias" (not weights), and
// there is no "lm_head.weight": the head is tied to "wte.weight". The layouts are uopc's
// already (Conv1D weights are (in, out), as Linear's).
//
//   Checkpoint c = FromGpt2Naming(*LoadSafetensors("model.safetensors"));
//   GptConfig config = *Gpt2Config(c, /*heads=*/12);
//   Gpt model(config);
//   LoadModel(c, model);
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

#include "frontend/nn.h"
#include "frontend/safetensors.h"

namespace uopc {

/// `ckpt` in uopc's naming: the "transformer." prefix stripped, the mask buffers dropped.
/// A checkpoint in uopc's naming already comes back unchanged.
Checkpoint FromGpt2Naming(Checkpoint ckpt);

/// The configuration a GPT-2 checkpoint (in uopc's naming) is of, read off its tensors:
/// vocab and dim from wte, context from wpe, layers from the blocks, tied when it has no
/// lm_head.weight. The heads are not in the shapes: `heads` (GPT-2: dim / 64) must divide dim.
absl::StatusOr<GptConfig> Gpt2Config(const Checkpoint& ckpt, int64_t heads);

}  // namespace uopc
