// Element types of uopc: their names, sizes, classes and the promotion rule that picks the
// result type of a binary op. Defined once in an X-macro table.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/strings/string_view.h"

namespace uopc {

// X(enum name, text name, size in bytes, class) -- class: b=bool, i=signed, u=unsigned, f=float.
// `void` is the type of statements (STORE, END, SINK), never of data.
#define UOPC_FOR_EACH_DTYPE(X) \
  X(kVoid, "void", 0, 'v')     \
  X(kBool, "bool", 1, 'b')     \
  X(kI8, "i8", 1, 'i')         \
  X(kU8, "u8", 1, 'u')         \
  X(kI16, "i16", 2, 'i')       \
  X(kU16, "u16", 2, 'u')       \
  X(kI32, "i32", 4, 'i')       \
  X(kU32, "u32", 4, 'u')       \
  X(kI64, "i64", 8, 'i')       \
  X(kU64, "u64", 8, 'u')       \
  X(kF16, "f16", 2, 'f')       \
  X(kBF16, "bf16", 2, 'f')     \
  X(kF32, "f32", 4, 'f')       \
  X(kF64, "f64", 8, 'f')

enum class DType : uint8_t {
#define UOPC_DTYPE_ENUM(e, n, s, c) e,
  UOPC_FOR_EACH_DTYPE(UOPC_DTYPE_ENUM)
#undef UOPC_DTYPE_ENUM
};

inline constexpr int kNumDTypes = 0
#define UOPC_DTYPE_COUNT(e, n, s, c) +1
    UOPC_FOR_EACH_DTYPE(UOPC_DTYPE_COUNT)
#undef UOPC_DTYPE_COUNT
    ;

/// The short text name ("f32", "bf16", "bool").
absl::string_view DTypeName(DType t);
/// Parses a name produced by DTypeName; nullopt for anything else.
std::optional<DType> ParseDType(absl::string_view name);
/// Size of one element in bytes (0 for void).
int DTypeSize(DType t);

bool IsFloat(DType t);
/// True for signed and unsigned integers, not bool.
bool IsInt(DType t);
bool IsUnsigned(DType t);
inline bool IsBool(DType t) { return t == DType::kBool; }
/// Whether `t` is a 16-bit float (f16 or bf16).
inline bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }

/// Smallest and largest value of an integer or bool type, as int64 (u64's maximum does
/// not fit: it reports INT64_MAX, and bounds analysis does not use u64).
int64_t DTypeMin(DType t);
int64_t DTypeMax(DType t);

/// The result type of a binary op on `a` and `b`, as numpy and PyTorch promote:
/// bool < integers < floats; two ints of one signedness take the wider; a signed and an
/// unsigned int take the next signed type wide enough for both (u64 with a signed int has
/// none: f64); two floats take the wider, and f16 with bf16 gives f32. nullopt for void.
std::optional<DType> PromoteTypes(DType a, DType b);

}  // namespace uopc
