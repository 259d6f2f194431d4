#include <iostream>
#include "frontend/tensor.h"
#include "frontend/realize.h"
using namespace uopc;
int main() {
  try {
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::FromVector<float>({10, 20, 30}, {3});
  Tensor c = (a + b * 2.0);
  std::cout << c.ToString() << "\n";
  std::cout << a.Sum({1}).ToString() << "\n";
  std::cout << a.Softmax(-1).ToString() << "\n";
  std::cout << a.Matmul(a.Transpose()).ToString() << "\n";
  std::cout << a.Max().ToString() << " " << a.Argmax(1).ToString() << "\n";
  std::cout << Tensor::Arange(5).ToString() << Tensor::Eye(3).ToString() << "\n";
  std::cout << a.Pad({{1, 0}, {0, 1}}, -1).ToString() << "\n";
  std::cout << Tensor::Cat({a, a}, 1).ToString() << "\n";
  std::cout << a.Slice(1, 0, 3, 2).ToString() << "\n";
  std::cout << "plans: " << Runtime::Get().plans().size() << "\n";
  } catch (const Error& e) { std::cerr << "error: " << e.what() << "\n"; return 1; }
}
