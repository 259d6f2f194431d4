// The seed's section 15.2, "Symbolic shapes", run on uopc: a loop whose trip count is read
// from memory has no useful bounds, so (i*8 + j) // 8 keeps a division; a bounded VAR
// makes the same index fold to i, its remainder to j, and the mask j < n to true.
//
//   bazel run //examples/seed:symbolic_shapes
#include <cstring>
#include <iostream>

#include "core/bounds.h"
#include "core/symbolic/simplify.h"
#include "core/uir.h"

using uopc::UOp;

namespace {

std::string Bounds(const UOp& u) {
  return "(" + std::to_string(uopc::VMin(u)) + ", " + std::to_string(uopc::VMax(u)) + ")";
}

std::string LastLine(const std::string& uir) {
  std::string s = uir.substr(0, uir.size() - 1);
  return s.substr(s.rfind('\n') + 1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    std::cout << "usage: symbolic_shapes\n\nPrints the seed's section 15.2 facts as uopc computes "
                 "them.\n";
    return 0;
  }
  constexpr int64_t kMaxN = 8;
  UOp i = UOp::Range(4, 0);
  UOp n = UOp::Buffer(uopc::DType::kI32, 1, 1).Index(0).Load();  // a trip count read at run time
  UOp j = UOp::Range(n, 1);
  std::cout << "== a loop whose trip count is loaded from memory\n";
  std::cout << "bounds of j: " << Bounds(j) << "  bounds of i*8+j: " << Bounds(i * kMaxN + j)
            << "\n";
  UOp j8 = UOp::Range(kMaxN, 1);
  std::cout << "static  j: "
            << LastLine(uopc::ToUir(uopc::Simplify((i * kMaxN + j8).FloorDiv(kMaxN)))) << "\n";
  std::cout << "dynamic j:\n" << uopc::ToUir(uopc::Simplify((i * kMaxN + j).FloorDiv(kMaxN)));

  std::cout << "\n== the same loop over a bounded VAR: 1 <= n <= 8\n";
  UOp v = UOp::Var("n", 1, 8);
  UOp jv = UOp::Range(v, 1);
  std::cout << "bounds of j: " << Bounds(jv) << "\n";
  std::cout << "(i*8 + j) // 8:\n" << uopc::ToUir(uopc::Simplify((i * 8 + jv).FloorDiv(8)));
  std::cout << "(i*8 + j) % 8:\n" << uopc::ToUir(uopc::Simplify((i * 8 + jv).Mod(8)));
  std::cout << "j < n:\n" << uopc::ToUir(uopc::Simplify(jv.Lt(v)));
  return 0;
}
