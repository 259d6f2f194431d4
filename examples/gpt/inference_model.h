// What the generating programs (gpt_generate, gpt_serve) load: a checkpoint written by
// gpt_train (a character model: its vocabulary in the metadata) or a GPT-2 checkpoint in
// the Hugging Face naming (token ids only), checked against its metadata and built as a
// Gpt, the optimizer's state left out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

#include "frontend/nn.h"

namespace uopc {

struct InferenceModel {
  std::unique_ptr<Gpt> model;
  std::string vocabulary;  // a character model's characters; "" for GPT-2's
};

/// The model of the checkpoint at `path`; a GPT-2 checkpoint's heads are `gpt2_heads`, or
/// dim / 64 (GPT-2's) where 0. A clear error for a file that is not such a checkpoint.
absl::StatusOr<InferenceModel> LoadInferenceModel(const std::string& path,
                                                  int64_t gpt2_heads = 0);

}  // namespace uopc
