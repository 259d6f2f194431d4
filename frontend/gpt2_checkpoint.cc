#include "frontend/gpt2_checkpoint.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace uopc {

Checkpoint FromGpt2Naming(Checkpoint ckpt) {
  std::vector<std::pair<std::string, HostTensor>> kept;
  for (auto& [name, t] : ckpt.tensors) {
    std::string n = absl::StartsWith(name, "transformer.") ? name.substr(12) : name;
    if (absl::EndsWith(n, ".attn.bias") || absl::EndsWith(n, ".attn.masked_bias")) continue;
    kept.emplace_back(std::move(n), std::move(t));
  }
  ckpt.tensors = std::move(kept);
  return ckpt;
}

absl::StatusOr<GptConfig> Gpt2Config(const Checkpoint& ckpt, int64_t heads) {
  const HostTensor *wte = ckpt.Find("wte.weight"), *wpe = ckpt.Find("wpe.weight");
  if (!wte || !wpe || wte->shape.size() != 2 || wpe->shape.size() != 2 ||
      wte->shape[1] != wpe->shape[1])
    return absl::InvalidArgumentError(
        "gpt-2 checkpoint: no wte.weight (vocab, dim) and wpe.weight (context, dim) of one dim "
        "(not a GPT-2 checkpoint?)");
  GptConfig c;
  c.vocab = wte->shape[0].value();
  c.context = wpe->shape[0].value();
  c.dim = wte->shape[1].value();
  c.heads = heads;
  c.layers = 0;
  while (ckpt.Find(absl::StrCat("h.", c.layers, ".ln_1.weight"))) ++c.layers;
  c.tie_embeddings = ckpt.Find("lm_head.weight") == nullptr;
  if (heads < 1 || c.dim % heads)
    return absl::InvalidArgumentError(
        absl::StrCat("gpt-2 checkpoint: dim ", c.dim, " with ", heads,
                     " heads; expected heads dividing dim (GPT-2: dim / 64 = ", c.dim / 64, ")"));
  return c;
}

}  // namespace uopc
