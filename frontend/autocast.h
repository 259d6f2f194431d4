// A precision policy, as PyTorch's autocast: while an Autocast lives on a thread, the
// matmuls that thread builds round their float operands to its dtype (bf16 or f16), sum
// their products in f32 and give that dtype; so do the activations that follow from them.
// Whatever the policy, a reduction of halves sums in f32 and layer norm, softmax and the
// loss compute in f32, and parameters stay f32 (the master weights and the optimizer's
// state, updated in f32 from f32 gradients).
//   { Autocast bf16(DType::kBF16); loss = model.Forward(x).CrossEntropy(y); }
#pragma once

#include <optional>

#include "core/dtype.h"

namespace uopc {

class Autocast {
 public:
  /// kBF16 or kF16; kF32 ends an enclosing policy for the scope (an invalid argument
  /// for any other dtype).
  explicit Autocast(DType low);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

  /// The dtype this thread's matmuls round to, or nullopt (f32).
  static std::optional<DType> Current();

 private:
  std::optional<DType> previous_;
};

}  // namespace uopc
