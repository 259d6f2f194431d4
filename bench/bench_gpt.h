// The bench GPT of the decoding benches (4 layers, dim 128, 4 heads, context 64, a 65-token
// vocabulary, as bench/gpt_bench.cc trains it and the PyTorch peers build it), seeded 0 and
// in evaluation mode, made once per process.
#pragma once

#include "frontend/nn.h"

namespace uopc {

inline const GptConfig kBenchGpt{65, 64, 128, 4, 4, 0.0};

inline Gpt& BenchGpt() {
  static Gpt* m = [] {
    Tensor::ManualSeed(0);
    auto* g = new Gpt(kBenchGpt);
    g->Train(false);
    return g;
  }();
  return *m;
}

}  // namespace uopc
