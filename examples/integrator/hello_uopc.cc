// An integrator's first program: a small Tensor program (a matmul, a softmax, a sum) on
// uopc's CPU device, checked against the same arithmetic done here. Prints "ok" and
// exits 0 when the numbers agree.
#include <cmath>
#include <cstdio>
#include <vector>

#include "frontend/tensor.h"

int main() {
  using uopc::DType;
  using uopc::Tensor;
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, -1, 2, 0.5f, 1};  // 2x3, 3x2
  Tensor x = Tensor::FromVector(a, {2, 3}), w = Tensor::FromVector(b, {3, 2});
  std::vector<float> got = x.Matmul(w).Softmax(-1).Sum({0}).ToVector<float>();
  // the same, by hand
  std::vector<float> want(2, 0.0f);
  for (int i = 0; i < 2; ++i) {
    float y[2];
    for (int j = 0; j < 2; ++j) {
      y[j] = 0;
      for (int k = 0; k < 3; ++k) y[j] += a[i * 3 + k] * b[k * 2 + j];
    }
    const float m = std::max(y[0], y[1]), e0 = std::exp(y[0] - m), e1 = std::exp(y[1] - m);
    want[0] += e0 / (e0 + e1);
    want[1] += e1 / (e0 + e1);
  }
  for (int j = 0; j < 2; ++j)
    if (std::abs(got[j] - want[j]) > 1e-5f) {
      std::printf("hello_uopc: column %d is %g; expected %g\n", j, got[j], want[j]);
      return 1;
    }
  std::printf("hello_uopc: softmax column sums %.6f %.6f: ok\n", got[0], got[1]);
  return 0;
}
