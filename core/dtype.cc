#include "core/dtype.h"

#include <array>
#include <limits>

#include "absl/strings/string_view.h"

namespace uopc {
namespace {

struct Info {
  absl::string_view name;
  int size;
  char cls;
};

constexpr std::array<Info, kNumDTypes> kInfo = {{
#define UOPC_DTYPE_INFO(e, n, s, c) {n, s, c},
    UOPC_FOR_EACH_DTYPE(UOPC_DTYPE_INFO)
#undef UOPC_DTYPE_INFO
}};

const Info& Get(DType t) { return kInfo[static_cast<int>(t)]; }

DType SignedOfSize(int size) {
  switch (size) {
    case 1: return DType::kI8;
    case 2: return DType::kI16;
    case 4: return DType::kI32;
    default: return DType::kI64;
  }
}

}  // namespace

absl::string_view DTypeName(DType t) { return Get(t).name; }

std::optional<DType> ParseDType(absl::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kInfo[i].name == name) return static_cast<DType>(i);
  return std::nullopt;
}

int DTypeSize(DType t) { return Get(t).size; }
bool IsFloat(DType t) { return Get(t).cls == 'f'; }
bool IsInt(DType t) { return Get(t).cls == 'i' || Get(t).cls == 'u'; }
bool IsUnsigned(DType t) { return Get(t).cls == 'u'; }

int64_t DTypeMin(DType t) {
  if (IsBool(t) || IsUnsigned(t)) return 0;
  switch (DTypeSize(t)) {
    case 1: return std::numeric_limits<int8_t>::min();
    case 2: return std::numeric_limits<int16_t>::min();
    case 4: return std::numeric_limits<int32_t>::min();
    default: return std::numeric_limits<int64_t>::min();
  }
}

int64_t DTypeMax(DType t) {
  if (IsBool(t)) return 1;
  int bits = DTypeSize(t) * 8 - (IsUnsigned(t) ? 0 : 1);
  return bits >= 63 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << bits) - 1;
}

std::optional<DType> PromoteTypes(DType a, DType b) {
  if (a == DType::kVoid || b == DType::kVoid) return std::nullopt;
  if (a == b) return a;
  if (IsBool(a)) return b;
  if (IsBool(b)) return a;
  if (IsFloat(a) != IsFloat(b)) return IsFloat(a) ? a : b;
  if (IsFloat(a)) {
    if (DTypeSize(a) != DTypeSize(b)) return DTypeSize(a) > DTypeSize(b) ? a : b;
    return DType::kF32;  // f16 with bf16: neither holds the other
  }
  if (IsUnsigned(a) == IsUnsigned(b)) return DTypeSize(a) >= DTypeSize(b) ? a : b;
  DType s = IsUnsigned(a) ? b : a, u = IsUnsigned(a) ? a : b;
  if (DTypeSize(s) > DTypeSize(u)) return s;
  if (DTypeSize(u) == 8) return DType::kF64;
  return SignedOfSize(DTypeSize(u) * 2);
}

}  // namespace uopc
