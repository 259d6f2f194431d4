#include "examples/gpt/model_config.h"

#include "absl/strings/str_cat.h"

#include "core/parse_number.h"
#include "core/status_macros.h"

namespace uopc {
namespace {

absl::StatusOr<int64_t> Field(const std::map<std::string, std::string>& meta,
                              const std::string& path, const char* key, IntRange r) {
  auto it = meta.find(key);
  if (it == meta.end())
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint ", path, " has no '", key, "' metadata (not written by gpt_train?)"));
  absl::StatusOr<int64_t> v = ParseInt(absl::StrCat("metadata ", key), it->second, r.lo, r.hi);
  if (!v.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", path, ": ", v.status().message()));
  return v;
}

}  // namespace

absl::StatusOr<GptConfig> ConfigFromMetadata(const std::map<std::string, std::string>& meta,
                                             const std::string& path) {
  GptConfig c;
  auto vocab = meta.find("vocab");
  if (vocab == meta.end() || vocab->second.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint ", path, " has no 'vocab' metadata (not written by gpt_train?)"));
  c.vocab = static_cast<int64_t>(vocab->second.size());
  ASSIGN_OR_RETURN(c.layers, Field(meta, path, "layers", kLayers));
  ASSIGN_OR_RETURN(c.dim, Field(meta, path, "dim", kDim));
  ASSIGN_OR_RETURN(c.heads, Field(meta, path, "heads", kHeads));
  ASSIGN_OR_RETURN(c.context, Field(meta, path, "context", kContext));
  if (meta.contains("tie_embeddings")) {  // (older checkpoints have none: untied)
    ASSIGN_OR_RETURN(int64_t tie, Field(meta, path, "tie_embeddings", {0, 1}));
    c.tie_embeddings = tie == 1;
  }
  if (c.dim % c.heads)
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", path, ": metadata dim ", c.dim,
                                                   " is not a multiple of heads ", c.heads));
  return c;
}

absl::Status MatchesTensors(const GptConfig& c, const Checkpoint& ckpt, const std::string& path) {
  auto shape = [&](const std::string& name, TensorShape want) -> absl::Status {
    const HostTensor* t = ckpt.Find(name);
    if (t && t->shape == want) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint ", path, ": its metadata (vocab ", c.vocab, ", context ", c.context, ", dim ",
        c.dim, ", layers ", c.layers, ") wants a tensor '", name, "' of shape ",
        ShapeString(want), "; the file has ", t ? ShapeString(t->shape) : std::string("none")));
  };
  RETURN_IF_ERROR(shape("wte.weight", {c.vocab, c.dim}));
  RETURN_IF_ERROR(shape("wpe.weight", {c.context, c.dim}));
  RETURN_IF_ERROR(shape(absl::StrCat("h.", c.layers - 1, ".ln_1.weight"), {c.dim}));
  if (ckpt.Find(absl::StrCat("h.", c.layers, ".ln_1.weight")))
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", path, ": it has more than the ",
                                                   c.layers, " blocks its metadata says"));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> StepFromMetadata(const std::map<std::string, std::string>& meta,
                                         const std::string& path) {
  return Field(meta, path, "step", {0, kSteps.hi});
}

double TrainingBytes(const GptConfig& c, int64_t batch) {
  const double d = static_cast<double>(c.dim), l = static_cast<double>(c.layers),
               t = static_cast<double>(c.context), b = static_cast<double>(batch);
  double params = l * (12 * d * d + 13 * d) + (c.vocab + t) * d + c.vocab * d + 2 * d;
  double activations = b * t * l * (20 * d + 3 * c.heads * t) + b * t * c.vocab * 4;
  return 4 * (4 * params + activations);  // f32 weights, gradients, m and v; activations
}

}  // namespace uopc
