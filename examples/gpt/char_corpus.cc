#include "examples/gpt/char_corpus.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "core/file.h"

namespace uopc {

int32_t CharCorpus::Encode(char c) const {
  auto it = std::lower_bound(vocab.begin(), vocab.end(), c);
  return it != vocab.end() && *it == c ? static_cast<int32_t>(it - vocab.begin()) : -1;
}

absl::StatusOr<CharCorpus> LoadCorpus(const std::string& path, int64_t context) {
  absl::StatusOr<std::string> read = ReadFile(path);
  if (!read.ok())
    return absl::Status(read.status().code(), absl::StrCat("corpus ", read.status().message()));
  const std::string& text = *read;
  if (static_cast<int64_t>(text.size()) < context + 2)
    return absl::InvalidArgumentError(absl::StrCat("corpus ", path, ": ", text.size(),
                                                   " characters; need more than the context (",
                                                   context, ") + 1"));
  CharCorpus c;
  c.vocab = text;
  std::sort(c.vocab.begin(), c.vocab.end());
  c.vocab.erase(std::unique(c.vocab.begin(), c.vocab.end()), c.vocab.end());
  c.tokens.reserve(text.size());
  for (char ch : text) c.tokens.push_back(c.Encode(ch));
  return c;
}

absl::StatusOr<std::vector<int32_t>> Encode(const std::string& vocab, const std::string& text) {
  CharCorpus c{vocab, {}};
  std::vector<int32_t> out;
  for (size_t i = 0; i < text.size(); ++i) {
    int32_t t = c.Encode(text[i]);
    if (t < 0)  // (the byte's value: the character may not print)
      return absl::InvalidArgumentError(
          absl::StrCat("prompt character ", i, " (byte ",
                       static_cast<int>(static_cast<unsigned char>(text[i])),
                       ") is not in the model's vocabulary"));
    out.push_back(t);
  }
  return out;
}

void Batch(const std::vector<int32_t>& tokens, int64_t batch, int64_t context, uint64_t seed,
           int64_t step, std::vector<int32_t>* x, std::vector<int32_t>* y) {
  x->resize(batch * context);
  y->resize(batch * context);
  uint64_t span = tokens.size() - context - 1;
  for (int64_t b = 0; b < batch; ++b) {
    uint64_t z = (seed + 1) * 0x9e3779b97f4a7c15ull +
                 static_cast<uint64_t>(step) * 0xbf58476d1ce4e5b9ull + b;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    uint64_t at = (z ^ (z >> 31)) % span;
    for (int64_t t = 0; t < context; ++t) {
      (*x)[b * context + t] = tokens[at + t];
      (*y)[b * context + t] = tokens[at + t + 1];
    }
  }
}

}  // namespace uopc
