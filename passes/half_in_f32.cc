#include "passes/half_in_f32.h"

#include <vector>

#include "absl/container/flat_hash_map.h"

#include "core/substitute.h"
#include "passes/lowered_steps.h"

namespace uopc {
namespace {

// The ops carried in f32: elementwise arithmetic that gives a half (not a conversion,
// which is where a value enters or leaves).
bool IsHalfArithmetic(const UOp& u) {
  return IsHalf(u.dtype()) && IsAlu(u.op()) && !u.is(Ops::CAST) && !u.is(Ops::BITCAST);
}

}  // namespace

UOp HalfInF32Kernel(const UOp& kernel) {
  // each half op's value in f32, by the original node
  absl::flat_hash_map<const UOp::Node*, UOp> wide;
  return RewriteNodes(kernel, [&](const UOp& orig, const UOp& rebuilt) {
    if (!IsHalfArithmetic(orig)) return rebuilt;
    std::vector<UOp> src;
    for (size_t i = 0; i < orig.src().size(); ++i) {
      const UOp& s = rebuilt.src(i);
      if (auto it = wide.find(orig.src(i).get()); it != wide.end())
        src.push_back(it->second);
      else
        src.push_back(IsHalf(s.dtype()) ? UOp::Make(Ops::CAST, DType::kF32, {s}) : s);
    }
    UOp f32 = UOp::Make(orig.op(), DType::kF32, src, orig.arg());
    wide[orig.get()] = f32;
    return UOp::Make(Ops::CAST, orig.dtype(), {f32});
  });
}

absl::StatusOr<UOp> HalfInF32(const UOp& lowered, const PassContext&) {
  return MapKernels(lowered, "half_in_f32",
                    [](const UOp& k) -> absl::StatusOr<UOp> { return HalfInF32Kernel(k); });
}

}  // namespace uopc
