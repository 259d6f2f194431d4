// A kernel's signature (core/kernel_signature.h): its buffer slots, which of them it may
// write, and its VARs; and EvalIndex's values of launch params.
#include "core/kernel_signature.h"

#include <gtest/gtest.h>

namespace uopc {
namespace {

// out[i] = table[index[i]] over n elements: slot 0 written, slots 1 (the index) and 2 read
UOp Gather(int64_t n) {
  UOp out = UOp::Buffer(DType::kF32, 0, n), index = UOp::Buffer(DType::kI32, 1, n),
      table = UOp::Buffer(DType::kF32, 2, 64);
  UOp i = UOp::Range(n, 0);
  return UOp::Sink({out.Index(i).Store(table.Index(index.Index(i).Load()).Load()).End({i})});
}

TEST(KernelSignature, TheBuffersAKernelStoresIntoAreWritten) {
  absl::StatusOr<KernelSignature> sig = SignatureOf(Gather(16));
  ASSERT_TRUE(sig.ok()) << sig.status();
  ASSERT_EQ(sig->buffers.size(), 3u);
  EXPECT_TRUE(sig->buffers[0].written);
  EXPECT_FALSE(sig->buffers[1].written);  // (read to find the address of a read)
  EXPECT_FALSE(sig->buffers[2].written);
  for (const KernelSignature::Buffer& b : sig->buffers) EXPECT_TRUE(b.used);
}

TEST(KernelSignature, AnInPlaceUpdateWritesWhatItReads) {
  UOp x = UOp::Buffer(DType::kF32, 0, 8), y = UOp::Buffer(DType::kF32, 1, 8);
  UOp i = UOp::Range(8, 0);
  UOp sink = UOp::Sink({x.Index(i).Store(x.Index(i).Load() + y.Index(i).Load()).End({i})});
  absl::StatusOr<KernelSignature> sig = SignatureOf(sink);
  ASSERT_TRUE(sig.ok()) << sig.status();
  EXPECT_TRUE(sig->buffers[0].written);
  EXPECT_FALSE(sig->buffers[1].written);
}

TEST(KernelSignature, AConstantParamIsItsValueAndAVarNeedsOne) {
  EXPECT_EQ(EvalIndex(UOp::ConstInt(DType::kI64, 42), {}), 42);
  UOp v = UOp::Var("n", 1, 100);
  EXPECT_EQ(EvalIndex(v * 3 + 1, {{"n", 5}}), 16);
  EXPECT_EQ(EvalIndex(v * 3, {}), std::nullopt);
}

}  // namespace
}  // namespace uopc
