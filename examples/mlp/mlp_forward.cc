// A small MLP forward pass on the lazy Tensor API: two linear layers with a ReLU, then a
// softmax. Run it with UOPC_DEBUG=2 to see the kernels the graph is fused into, with their
// C source and run times:
//
//   UOPC_DEBUG=2 bazel run //examples/mlp:mlp_forward
#include <cstring>
#include <iostream>

#include "frontend/realize.h"
#include "frontend/tensor.h"

using uopc::Tensor;

int main(int argc, char** argv) {
  if (argc > 1 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    std::cout
        << "usage: [UOPC_DEBUG=2] mlp_forward\n\nRuns a 16-32-10 MLP on a batch of 4 and prints "
           "the class\n"
           "probabilities; UOPC_DEBUG=2 also prints each fused kernel's source and run time.\n";
    return 0;
  }
  try {
    Tensor::ManualSeed(0);
    Tensor x = Tensor::Randn({4, 16});
    Tensor w1 = Tensor::Randn({16, 32}) * 0.25, b1 = Tensor::Zeros({32});
    Tensor w2 = Tensor::Randn({32, 10}) * 0.18, b2 = Tensor::Zeros({10});
    Tensor probs = (x.Matmul(w1) + b1).Relu().Matmul(w2).operator+(b2).Softmax(-1);
    std::cout << "class probabilities:\n" << probs.ToString() << "\n";
    std::cout << "predicted classes: " << probs.Argmax(1).ToString() << "\n";
    std::cout << "plans built: " << uopc::Runtime::Get().plans().size() << "\n";
  } catch (const uopc::Error& e) {
    std::cerr << "mlp_forward: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
