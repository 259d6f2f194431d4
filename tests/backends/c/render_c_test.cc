#include "backends/c/render_c.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "core/verify.h"
#include "passes/linearize.h"
#include "tests/testing/seed_program.h"

namespace uopc {
namespace {

std::string Render(const UOp& sink, const char* name = "kernel") {
  absl::StatusOr<std::string> s = RenderC(*Linearize(sink), name);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : "";
}

// Golden: the seed's listing, with the accumulator declared once at the top.
TEST(RenderC, SeedProgram) {
  EXPECT_EQ(Render(testing::SeedTripCountKernel()),
            "void kernel(float* restrict data0, int* restrict data1, float* restrict data2) {\n"
            "  float acc0;\n"
            "  int val0 = data1[0];\n"
            "  for (int ridx0 = 0; ridx0 < 4; ridx0++) {\n"
            "    acc0 = 0.0f;\n"
            "    int alu0 = (ridx0*8);\n"
            "    for (int ridx1 = 0; ridx1 < val0; ridx1++) {\n"
            "      float val1 = acc0;\n"
            "      float val2 = data0[(alu0+ridx1)];\n"
            "      acc0 = (val1+val2);\n"
            "    }\n"
            "    float val3 = acc0;\n"
            "    data2[ridx0] = val3;\n"
            "  }\n"
            "}\n"
            "UOPC_ENTRY void kernel_entry(void* const* bufs, const long long* vars, long long gchunk, "
            "long long gchunks) {\n"
            "  (void)bufs; (void)vars; (void)gchunk; (void)gchunks;\n"
            "  kernel((float*)bufs[0], (int*)bufs[1], (float*)bufs[2]);\n"
            "}\n");
}

TEST(RenderC, VarsAreIntParameters) {
  UOp n = UOp::Var("n", 1, 8), m = UOp::Var("m", 0, 3);
  UOp out = UOp::Buffer(DType::kI32, 0, 8);
  UOp j = UOp::Range(n, 0);
  std::string src = Render(UOp::Sink({out.Index(j).Store(j + m).End({j})}), "k");
  EXPECT_NE(src.find("void k(int* restrict data0, int m, int n) {"), std::string::npos) << src;
  EXPECT_NE(src.find("k((int*)bufs[0], (int)vars[0], (int)vars[1]);"), std::string::npos) << src;
}

// C runs under -fwrapv: gcc cannot tell that an index built from a VAR does not wrap, and
// reads a loop over it an element at a time, unless the kernel says the VAR's bounds; a
// VAR outside them runs nothing. CUDA's ints do not wrap (nothing to say there).
TEST(RenderC, AVarsBoundsAreSaidWhereIntsWrap) {
  UOp n = UOp::Var("n", 1, 8), m = UOp::Var("m", 0, 3);
  UOp out = UOp::Buffer(DType::kI32, 0, 8);
  UOp j = UOp::Range(n, 0);
  UOp sink = UOp::Sink({out.Index(j).Store(j + m).End({j})});
  std::string src = Render(sink, "k");
  EXPECT_NE(src.find("void k(int* restrict data0, int m, int n) {\n"
                     "  if (m < 0 || m > 3) return;\n"
                     "  if (n < 1 || n > 8) return;\n"),
            std::string::npos)
      << src;
  absl::StatusOr<std::string> cuda = RenderC(*Linearize(sink), "k", CLang::kCuda);
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_EQ(cuda->find("return;"), std::string::npos) << *cuda;
}

// An unroll range of a constant length (a register tile's rows on a 16-register target) is
// written out: its body once per value, with the value in place of the range; a loop
// inside it stays a loop, and its END closes only the loops around it.
TEST(RenderC, AnUnrollRangeIsWrittenOut) {
  UOp out = UOp::Buffer(DType::kF32, 0, 6), in = UOp::Buffer(DType::kF32, 1, 6);
  UOp r = UOp::Range(3, 0, RangeKind::kUnroll), j = UOp::Range(2, 1);
  UOp at = r * 2 + j;
  std::string src =
      Render(UOp::Sink({out.Index(at).Store(in.Index(at).Load() * 2.0f).End({j}).End({r})}));
  EXPECT_EQ(src.find("ridx0"), std::string::npos) << src;
  for (const char* copy : {"= (0*2);", "= (1*2);", "= (2*2);"})
    EXPECT_NE(src.find(copy), std::string::npos) << copy << "\n" << src;
  EXPECT_EQ(std::count(src.begin(), src.end(), '{'), std::count(src.begin(), src.end(), '}'));
  size_t loops = 0;
  for (size_t i = src.find("for (int ridx1"); i != std::string::npos;
       i = src.find("for (int ridx1", i + 1))
    ++loops;
  EXPECT_EQ(loops, 3u) << src;
}

TEST(RenderC, FloorDivisionOnlyWhereBoundsAllow) {
  UOp out = UOp::Buffer(DType::kI32, 0, 4), in = UOp::Buffer(DType::kI32, 1, 4);
  UOp i = UOp::Range(4, 0);
  UOp v = in.Index(i).Load();
  std::string src = Render(UOp::Sink(
      {out.Index(i).Store(v.FloorDiv(2) + i.FloorDiv(2) + v.Mod(3) + i.Mod(3)).End({i})}));
  EXPECT_NE(src.find("uopc_floordiv_i32(val0, 2)"), std::string::npos)
      << src;                                                  // val0 may be negative
  EXPECT_NE(src.find("(ridx0/2)"), std::string::npos) << src;  // ridx0 >= 0
  EXPECT_NE(src.find("uopc_mod_i32(val0, 3)"), std::string::npos) << src;
  EXPECT_NE(src.find("(ridx0%3)"), std::string::npos) << src;
}

// A WHERE that picks a read or +0 reads in its branch where the index may leave the buffer
// (a pad's), and before it, as a mask, where the index lies in the buffer wherever it is (a
// paged cache's block, 0 where the block table's entry is out of range): gcc vectorizes a
// chain of fmas through the mask, and not through the select.
TEST(RenderC, APickOfAReadInRangeIsAMask) {
  UOp table = UOp::Buffer(DType::kI32, 0, 4), keys = UOp::Buffer(DType::kF32, 1, 8 * 16);
  UOp out = UOp::Buffer(DType::kF32, 2, 4 * 16);
  UOp i = UOp::Range(4, 0), j = UOp::Range(16, 1);
  UOp block = table.Index(i).Load();
  UOp gate = UOp::Derived(Ops::AND, {UOp::Int(-1).Lt(block), block.Lt(UOp::Int(8))});
  UOp safe = gate.Where(block, UOp::Int(0));
  auto picked = [&](const UOp& read, double zero) {
    return Render(UOp::Sink({out.Index(i * 16 + j)
                                 .Store(gate.Where(read, UOp::ConstFloat(DType::kF32, zero)))
                                 .End({j, i})}));
  };
  std::string src = picked(keys.Index(safe * 16 + j).Load(), 0.0);
  EXPECT_NE(src.find("uopc_pickf(alu"), std::string::npos) << src;
  EXPECT_NE(src.find("float val1 = data1["), std::string::npos) << src;
  // the same read past the buffer where the gate is off: in the branch
  src = picked(keys.Index(block * 16 + j).Load(), 0.0);
  EXPECT_EQ(src.find("uopc_pickf"), std::string::npos) << src;
  EXPECT_NE(src.find("?(data1["), std::string::npos) << src;
  // -0 is not what a mask gives
  src = picked(keys.Index(safe * 16 + j).Load(), -0.0);
  EXPECT_EQ(src.find("uopc_pickf"), std::string::npos) << src;
}

TEST(RenderC, HalfPrecisionTypes) {
  UOp h = UOp::Buffer(DType::kF16, 0, 4), b = UOp::Buffer(DType::kBF16, 1, 4);
  UOp i = UOp::Range(4, 0), k = UOp::Range(4, 1);
  UOp hv = h.Index(i).Load(), bv = b.Index(k).Load();
  std::string src =
      Render(UOp::Sink({h.Index(i).Store(hv * hv).End({i}), b.Index(k).Store(bv * bv).End({k})}));
  EXPECT_NE(src.find("_Float16* restrict data0, uint16_t* restrict data1"), std::string::npos)
      << src;
  EXPECT_NE(src.find("data0[ridx0] = ((_Float16)(val0*val0));"), std::string::npos) << src;
  EXPECT_NE(src.find("float val1 = uopc_bf16_to_f32(data1[ridx1]);"), std::string::npos) << src;
  // (stored without its own rounding: uopc_f32_to_bf16 rounds the same way)
  EXPECT_NE(src.find("data1[ridx1] = uopc_f32_to_bf16((val1*val1));"), std::string::npos) << src;
}

TEST(RenderC, TensorLevelOpsAreRefused) {
  UOp t = UOp::Derived(Ops::RESHAPE, {UOp::Buffer(DType::kF32, 0, 4), UOp::Int(2), UOp::Int(2)});
  absl::StatusOr<std::string> s =
      RenderC({UOp::Buffer(DType::kF32, 0, 4), UOp::Int(2), t, UOp::Sink({})}, "k");
  EXPECT_EQ(s.status().message(), "render C: reshape is not a loop-level op; lower it first");
}

// The op table's checklist for this renderer: every ALU op, on every dtype the verifier
// accepts it for, renders to C (an op without a C expression is an error, never a "?").
TEST(RenderC, EveryAluOpRenders) {
  int rendered = 0;
  for (int o = 0; o < kNumOps; ++o) {
    Ops op = static_cast<Ops>(o);
    if (!IsAlu(op)) continue;
    for (DType t : {DType::kF32, DType::kI32, DType::kF16, DType::kU8}) {
      UOp i = UOp::Range(4, 0);
      std::vector<UOp> src;
      for (int k = 0; k < std::max(OpArity(op), 1); ++k) {
        DType in = op == Ops::WHERE && k == 0 ? DType::kBool : t;
        src.push_back(UOp::Buffer(in, k + 1, 4).Index(i).Load());
      }
      DType out = op == Ops::CAST      ? DType::kF64
                  : op == Ops::BITCAST ? (DTypeSize(t) == 4 ? DType::kU32 : DType::kI16)
                  : IsCompare(op)      ? DType::kBool
                                       : t;
      UOp v = UOp::Make(op, out, src);
      if (!Verify(v).ok()) continue;  // not defined on this dtype
      UOp sink = UOp::Sink({UOp::Buffer(out, 0, 4).Index(i).Store(v).End({i})});
      absl::StatusOr<std::string> c = RenderC(*Linearize(sink), "k");
      ASSERT_TRUE(c.ok()) << OpName(op) << " on " << DTypeName(t) << ": " << c.status();
      ++rendered;
    }
  }
  EXPECT_GT(rendered, 60);
}

}  // namespace
}  // namespace uopc
