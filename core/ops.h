// The ops of uopc's one IR, defined once in an X-macro table that generates the enum,
// the text names, the arities and the groups. Tensor-level ops (movement, REDUCE, STAGE,
// COPY, ASSIGN, COLLECTIVE) are lowered by passes into loop-level ops (RANGE, INDEX, LOAD, STORE,
// ALLOC, AFTER, END, BARRIER); ALU ops live at both levels.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/strings/string_view.h"

namespace uopc {

/// Which alternative of Arg an op carries (see core/arg.h).
enum class ArgKind : uint8_t { None, Const, Var, Param, Range, Axes, Reduce, Device, Collective };

// Group flags of an op.
inline constexpr uint32_t kGroupAlu = 1u << 0;          // elementwise arithmetic
inline constexpr uint32_t kGroupCommutative = 1u << 1;  // f(a, b) == f(b, a)
inline constexpr uint32_t kGroupMovement = 1u << 2;     // a view of its first source
inline constexpr uint32_t kGroupCompare = 1u << 3;      // result is bool
// The op's traits, as the passes, the verifier and the frontend read them:
inline constexpr uint32_t kGroupFloatOnly = 1u << 4;      // its operands are floats (an int
                                                          // tensor is promoted to f32)
inline constexpr uint32_t kGroupIntOnly = 1u << 5;        // its operands are integers
inline constexpr uint32_t kGroupNoBool = 1u << 6;         // not defined on bool
inline constexpr uint32_t kGroupNoFloat = 1u << 7;        // not defined on floats (bitwise)
inline constexpr uint32_t kGroupTranscendental = 1u << 8;  // a libm call an element, not an
                                                           // instruction (exp2, log2, sin)
inline constexpr uint32_t kGroupAssociative = 1u << 9;    // f(f(a, b), c) == f(a, f(b, c)) (a
                                                          // reduction may be split)

// X(enum, text name, number of sources (-1: variable), groups, kind of argument)
#define UOPC_FOR_EACH_OP(X) UOPC_FOR_EACH_NON_ALU_OP(X) UOPC_FOR_EACH_ALU_OP(X)

#define UOPC_FOR_EACH_NON_ALU_OP(X)                                                         \
  /* graph structure and leaves */                                                          \
  X(SINK, "sink", -1, 0, None)     /* roots of a graph */                                   \
  X(CONST, "const", 0, 0, Const)   /* arg: ConstValue */                                    \
  X(VAR, "var", 0, 0, Var)         /* arg: VarArg{name, lo, hi}, i32 */                     \
  X(BUFFER, "buffer", 0, 0, Param) /* arg: ParamArg, a kernel param */                      \
  X(ALLOC, "alloc", 0, 0, Param)   /* arg: ParamArg, local storage (core/arg.h) */          \
  /* loop level */                                                                          \
  X(RANGE, "range", 1, 0, Range)     /* src: end; arg: RangeArg */                          \
  X(INDEX, "index", 2, 0, None)      /* src: buffer, flat index */                          \
  X(LOAD, "load", 1, 0, None)        /* src: index */                                       \
  X(STORE, "store", 2, 0, None)      /* src: index, value */                                \
  X(END, "end", -1, 0, None)         /* src: statement, ranges closed */                    \
  X(AFTER, "after", -1, 0, None)     /* src[0] once src[1:] are done */                     \
  X(BARRIER, "barrier", -1, 0, None) /* src: statements every thread of a block has done */ \
  /* tensor level */                                                                        \
  X(RESHAPE, "reshape", -1, kGroupMovement, None) /* src: x, dims... */                     \
  X(EXPAND, "expand", -1, kGroupMovement, None)   /* src: x, dims... */                     \
  X(PERMUTE, "permute", 1, kGroupMovement, Axes)  /* arg: Axes (the order) */               \
  X(PAD, "pad", -1, kGroupMovement, None)         /* src: x, (before, after)... */          \
  X(SHRINK, "shrink", -1, kGroupMovement, None)   /* src: x, (begin, end)... */             \
  X(FLIP, "flip", 1, kGroupMovement, Axes)        /* arg: Axes */                           \
  X(IOTA, "iota", 1, 0, None)                     /* src: n; 0, 1, ..., n-1 */              \
  X(REDUCE, "reduce", -1, 0, Reduce) /* src: x (loop level: x, loops...); arg: ReduceArg */ \
  X(STAGE, "stage", 1, 0, Device)    /* materialize on arg's device */                      \
  X(COPY, "copy", 1, 0, Device)      /* arg: DeviceArg (target) */                          \
  X(ASSIGN, "assign", 2, 0, None)    /* src: target buffer, value */                        \
  X(COLLECTIVE, "collective", 1, 0, Collective) /* across the ranks of a group */           \
  /* a whole op run by a kernel the device's plugin supplies (core/matmul_call.h) */        \
  X(MATMUL, "matmul", -1, 0, None) /* src: out, a, b BUFFERs, then 19 params */

#define UOPC_FOR_EACH_ALU_OP(X)                                                         \
  /* unary ALU */                                                                       \
  X(EXP2, "exp2", 1, kGroupAlu | kGroupFloatOnly | kGroupTranscendental, None)         \
  X(LOG2, "log2", 1, kGroupAlu | kGroupFloatOnly | kGroupTranscendental, None)         \
  X(SIN, "sin", 1, kGroupAlu | kGroupFloatOnly | kGroupTranscendental, None)           \
  X(SQRT, "sqrt", 1, kGroupAlu | kGroupFloatOnly, None)                                \
  X(RECIP, "recip", 1, kGroupAlu | kGroupFloatOnly, None)                              \
  X(TRUNC, "trunc", 1, kGroupAlu | kGroupFloatOnly, None)                              \
  X(CAST, "cast", 1, kGroupAlu, None)       /* value conversion to node dtype */       \
  X(BITCAST, "bitcast", 1, kGroupAlu, None) /* same bits, node dtype */                \
  /* binary ALU */                                                                      \
  X(ADD, "add", 2, kGroupAlu | kGroupCommutative | kGroupAssociative | kGroupNoBool, None) \
  X(MUL, "mul", 2, kGroupAlu | kGroupCommutative | kGroupAssociative | kGroupNoBool, None) \
  X(FDIV, "fdiv", 2, kGroupAlu | kGroupFloatOnly, None) /* float division */           \
  X(FLOORDIV, "floordiv", 2, kGroupAlu | kGroupIntOnly, None) /* integer, rounds to -infinity */ \
  X(MOD, "mod", 2, kGroupAlu | kGroupIntOnly, None) /* integer, sign of the divisor */ \
  X(MAX, "max", 2, kGroupAlu | kGroupCommutative | kGroupAssociative, None)            \
  X(CMPLT, "cmplt", 2, kGroupAlu | kGroupCompare, None)                                \
  X(CMPNE, "cmpne", 2, kGroupAlu | kGroupCompare | kGroupCommutative, None)            \
  X(CMPEQ, "cmpeq", 2, kGroupAlu | kGroupCompare | kGroupCommutative, None)            \
  X(AND, "and", 2, kGroupAlu | kGroupCommutative | kGroupAssociative | kGroupNoFloat, None) \
  X(OR, "or", 2, kGroupAlu | kGroupCommutative | kGroupAssociative | kGroupNoFloat, None) \
  X(XOR, "xor", 2, kGroupAlu | kGroupCommutative | kGroupAssociative | kGroupNoFloat, None) \
  X(SHL, "shl", 2, kGroupAlu | kGroupIntOnly, None)                                    \
  X(SHR, "shr", 2, kGroupAlu | kGroupIntOnly, None)                                    \
  /* ternary ALU */                                                                     \
  X(WHERE, "where", 3, kGroupAlu, None) /* src: bool cond, a, b */                     \
  X(MULACC, "mulacc", 3, kGroupAlu | kGroupFloatOnly, None) /* a * b + c, rounded once (fma) */

// `case Ops::E:` for each op of a table: a switch over ops names the ops it does nothing
// with instead of a `default:`, so that the compiler (-Werror=switch) names every op a new
// case forgets: UOPC_FOR_EACH_NON_ALU_OP(UOPC_OP_CASE) return x;
#define UOPC_OP_CASE(e, n, a, g, k) case Ops::e:

enum class Ops : uint8_t {
#define UOPC_OP_ENUM(e, n, a, g, k) e,
  UOPC_FOR_EACH_OP(UOPC_OP_ENUM)
#undef UOPC_OP_ENUM
};

inline constexpr int kNumOps = 0
#define UOPC_OP_COUNT(e, n, a, g, k) +1
    UOPC_FOR_EACH_OP(UOPC_OP_COUNT)
#undef UOPC_OP_COUNT
    ;

/// Lower-case text name, as in the UIR text form ("floordiv").
absl::string_view OpName(Ops op);
/// Parses a name produced by OpName.
std::optional<Ops> ParseOp(absl::string_view name);
/// Number of sources, or -1 where it varies.
int OpArity(Ops op);
/// The fewest sources the op can have (its arity if fixed; 0 for SINK; else 1).
int OpMinArity(Ops op);
/// The kind of argument the op carries.
ArgKind OpArgKind(Ops op);
/// The op's group flags (kGroup*).
uint32_t OpGroups(Ops op);
inline bool IsAlu(Ops op) { return OpGroups(op) & kGroupAlu; }
inline bool IsCommutative(Ops op) { return OpGroups(op) & kGroupCommutative; }
inline bool IsMovement(Ops op) { return OpGroups(op) & kGroupMovement; }
inline bool IsCompare(Ops op) { return OpGroups(op) & kGroupCompare; }
inline bool IsFloatOnly(Ops op) { return OpGroups(op) & kGroupFloatOnly; }
inline bool IsTranscendental(Ops op) { return OpGroups(op) & kGroupTranscendental; }
inline bool IsAssociative(Ops op) { return OpGroups(op) & kGroupAssociative; }

/// A set of ops as a bitmask, for patterns.
class OpSet {
 public:
  constexpr OpSet() = default;
  constexpr OpSet(std::initializer_list<Ops> ops) {
    for (Ops op : ops) Add(op);
  }
  constexpr void Add(Ops op) {
    bits_[static_cast<int>(op) / 64] |= uint64_t{1} << (static_cast<int>(op) % 64);
  }
  constexpr bool Has(Ops op) const {
    return bits_[static_cast<int>(op) / 64] >> (static_cast<int>(op) % 64) & 1;
  }
  constexpr bool Empty() const { return bits_[0] == 0 && bits_[1] == 0; }

 private:
  uint64_t bits_[2] = {0, 0};
  static_assert(kNumOps <= 128);
};

/// Every op whose groups include `group` (e.g. kGroupAlu).
OpSet OpsInGroup(uint32_t group);

}  // namespace uopc
