// A character-level corpus: the vocabulary is the sorted set of characters of the text,
// tokens are their indices; training batches are windows at positions drawn from a
// counter-based hash of (seed, step), so a run resumed at step s sees the batches it would
// have seen.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace uopc {

struct CharCorpus {
  std::string vocab;            // sorted, unique characters
  std::vector<int32_t> tokens;  // the text, as vocabulary indices
  /// Token of `c`, or -1.
  int32_t Encode(char c) const;
};

/// The corpus of the text file at `path` (at least two characters longer than `context`).
absl::StatusOr<CharCorpus> LoadCorpus(const std::string& path, int64_t context);
/// A corpus over a given vocabulary (for prompts): unknown characters are an error.
absl::StatusOr<std::vector<int32_t>> Encode(const std::string& vocab, const std::string& text);

/// `batch` windows of `context` tokens (x) and the same shifted by one (y), row-major.
void Batch(const std::vector<int32_t>& tokens, int64_t batch, int64_t context, uint64_t seed,
           int64_t step, std::vector<int32_t>* x, std::vector<int32_t>* y);

}  // namespace uopc
