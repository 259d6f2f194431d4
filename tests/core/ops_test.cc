// core/ops.h's table, walked op by op: names read back, the traits are consistent, and the
// verifier, the evaluator (constant folding, the interpreter) and the C renderer agree with
// the table on every ALU op and dtype. A new op, or a trait changed in one place only,
// fails here.
#include "core/ops.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

#include "backends/c/render_c.h"
#include "core/alu.h"
#include "core/dtype.h"
#include "core/uop.h"
#include "core/verify.h"
#include "passes/linearize.h"

namespace uopc {
namespace {

TEST(Ops, NamesReadBackAndTraitsAreConsistent) {
  for (int i = 0; i < kNumOps; ++i) {
    const Ops op = static_cast<Ops>(i);
    SCOPED_TRACE(OpName(op));
    EXPECT_EQ(ParseOp(OpName(op)), op);
    const uint32_t g = OpGroups(op);
    const uint32_t alu_only = kGroupCommutative | kGroupCompare | kGroupFloatOnly | kGroupIntOnly |
                              kGroupNoBool | kGroupNoFloat | kGroupTranscendental |
                              kGroupAssociative;
    if (g & alu_only) {
      EXPECT_TRUE(IsAlu(op));
    }
    if (IsTranscendental(op)) {
      EXPECT_TRUE(IsFloatOnly(op));
    }
    if (IsAssociative(op)) {
      EXPECT_TRUE(IsCommutative(op));
    }
    EXPECT_FALSE(IsFloatOnly(op) && (g & (kGroupIntOnly | kGroupNoFloat)));
    if (IsAlu(op)) {
      EXPECT_GE(OpArity(op), 1);
    }
  }
}

// Operands of dtype `t` for `op` (WHERE: a bool condition).
std::vector<UOp> Operands(Ops op, DType t) {
  std::vector<UOp> src;
  for (int i = 0; i < OpArity(op); ++i) {
    const DType ti = op == Ops::WHERE && i == 0 ? DType::kBool : t;
    src.push_back(UOp::Var("v" + std::to_string(i), 0, 1).Cast(ti));
  }
  return src;
}

// The dtype an ALU op of operands `t` has (compares: bool; CAST, BITCAST: another of t's
// size, to test a conversion).
DType ResultOf(Ops op, DType t) {
  if (IsCompare(op)) return DType::kBool;
  if (op == Ops::BITCAST) return DTypeSize(t) == 4 ? (IsFloat(t) ? DType::kI32 : DType::kF32) : t;
  if (op == Ops::CAST) return t == DType::kF32 ? DType::kI32 : DType::kF32;
  return t;
}

TEST(Ops, TheVerifierEvaluatorAndRendererAgreeWithTheTable) {
  for (int i = 0; i < kNumOps; ++i) {
    const Ops op = static_cast<Ops>(i);
    if (!IsAlu(op)) continue;
    for (DType t : {DType::kBool, DType::kI32, DType::kU8, DType::kF32, DType::kF16}) {
      SCOPED_TRACE(absl::StrCat(OpName(op), " on ", DTypeName(t)));
      const uint32_t g = OpGroups(op);
      bool defined = true;  // what the table says of op on t
      if (g & kGroupFloatOnly) defined &= IsFloat(t);
      if (g & kGroupIntOnly) defined &= IsInt(t);
      if (g & kGroupNoBool) defined &= !IsBool(t);
      if (g & kGroupNoFloat) defined &= !IsFloat(t);
      if (op == Ops::BITCAST) defined &= !IsBool(t);
      const DType out = ResultOf(op, t);
      UOp node = UOp::Make(op, out, Operands(op, t));
      const UOp store = UOp::Buffer(out, 0, 1).Index(UOp::Int(0)).Store(node);
      const absl::Status verified = Verify(UOp::Sink({store}));
      EXPECT_EQ(verified.ok(), defined) << verified;
      if (!defined) continue;
      // the evaluator folds it on constants, the C renderer writes it
      std::vector<Arg> args;
      for (const UOp& s : node.src()) args.push_back(s.dtype() == DType::kBool ? Arg(true)
                                                     : IsFloat(s.dtype()) ? Arg(1.5)
                                                                           : Arg(int64_t{3}));
      EXPECT_TRUE(EvalAlu(op, t, out, args).has_value());
      absl::StatusOr<std::vector<UOp>> program = Linearize(UOp::Sink({store}));
      ASSERT_TRUE(program.ok()) << program.status();
      absl::StatusOr<std::string> c = RenderC(*program, "k");
      EXPECT_TRUE(c.ok()) << c.status();
      absl::StatusOr<std::string> cuda = RenderC(*program, "k", CLang::kCuda);
      EXPECT_TRUE(cuda.ok()) << cuda.status();
    }
  }
}

}  // namespace
}  // namespace uopc
