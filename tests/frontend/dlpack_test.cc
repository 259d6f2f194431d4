// DLPack both ways: export -> import gives back the same memory and values; foreign memory
// is used in place (its deleter called exactly once, when the last tensor over it is gone)
// or copied when its layout cannot be (deleter called at once); every dtype DLPack shares;
// and the errors, which still call the deleter once.
#include "frontend/dlpack.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "core/float16.h"
#include "tests/testing/error_of.h"

namespace uopc {
namespace {

using testing::ErrorOf;

// A tensor of another framework: its memory, shape and strides, and a counter its deleter
// increments.
struct Foreign {
  DLManagedTensor managed{};
  std::vector<uint8_t> memory;
  std::vector<int64_t> shape, strides;
  int* deleted;
};

void DeleteForeign(DLManagedTensor* m) {
  auto* f = static_cast<Foreign*>(m->manager_ctx);
  ++*f->deleted;
  delete f;
}

// `values` (f32) laid out in `memory_floats` floats at `offset_floats`, with `strides`
// (empty: none, row-major).
DLManagedTensor* MakeForeign(std::vector<float> memory, std::vector<int64_t> shape,
                             std::vector<int64_t> strides, int64_t offset_bytes, int* deleted,
                             DLDataType dtype = {kDLFloat, 32, 1}, DLDevice device = {kDLCPU, 0}) {
  auto* f = new Foreign;
  f->memory.resize(memory.size() * 4);
  std::memcpy(f->memory.data(), memory.data(), f->memory.size());
  f->shape = std::move(shape);
  f->strides = std::move(strides);
  f->deleted = deleted;
  DLTensor& t = f->managed.dl_tensor;
  t.data = f->memory.data();
  t.device = device;
  t.ndim = static_cast<int>(f->shape.size());
  t.dtype = dtype;
  t.shape = f->shape.data();
  t.strides = f->strides.empty() ? nullptr : f->strides.data();
  t.byte_offset = offset_bytes;
  f->managed.manager_ctx = f;
  f->managed.deleter = DeleteForeign;
  return &f->managed;
}

void* DataOf(const DLManagedTensor* m) {
  return static_cast<uint8_t*>(m->dl_tensor.data) + m->dl_tensor.byte_offset;
}

TEST(DLPack, ExportThenImportIsTheSameMemory) {
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = a * 2;
  DLManagedTensor* m = ToDLPack(y);
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLCPU);
  EXPECT_EQ(m->dl_tensor.ndim, 2);
  EXPECT_EQ(m->dl_tensor.shape[0], 2);
  EXPECT_EQ(m->dl_tensor.shape[1], 3);
  EXPECT_EQ(m->dl_tensor.strides[0], 3);
  EXPECT_EQ(m->dl_tensor.strides[1], 1);
  EXPECT_EQ(m->dl_tensor.dtype.code, kDLFloat);
  EXPECT_EQ(m->dl_tensor.dtype.bits, 32);
  const float* data = static_cast<const float*>(DataOf(m));
  EXPECT_EQ(data[5], 12.0f);
  void* address = m->dl_tensor.data;
  Tensor back = FromDLPack(m);
  EXPECT_EQ(back.ToVector<float>(), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  DLManagedTensor* again = ToDLPack(back);
  EXPECT_EQ(again->dl_tensor.data, address);
  again->deleter(again);
}

TEST(DLPack, ExportOutlivesTheTensor) {
  DLManagedTensor* m;
  {
    Tensor y = Tensor::FromVector<float>({1, 2, 3}, {3}) + 1;
    m = ToDLPack(y);
  }
  const float* data = static_cast<const float*>(DataOf(m));
  EXPECT_EQ(data[0], 2.0f);
  EXPECT_EQ(data[2], 4.0f);
  m->deleter(m);
}

TEST(DLPack, ForeignMemoryIsUsedInPlaceAndGivenBackOnce) {
  int deleted = 0;
  DLManagedTensor* m = MakeForeign({1, 2, 3, 4}, {2, 2}, {}, 0, &deleted);
  float* memory = static_cast<float*>(DataOf(m));
  {
    Tensor x = FromDLPack(m);
    EXPECT_EQ((x * 10).ToVector<float>(), (std::vector<float>{10, 20, 30, 40}));
    memory[3] = 7;  // the tensor reads the foreign memory itself
    EXPECT_EQ((x + 0).ToVector<float>(), (std::vector<float>{1, 2, 3, 7}));
    x.Reshape({4}).Assign(Tensor::FromVector<float>({5, 6, 7, 8}, {4}));  // and writes it
    x.Realize();
    EXPECT_EQ(memory[0], 5.0f);
    EXPECT_EQ(memory[3], 8.0f);
    Tensor keep = x;
    x = Tensor();
    EXPECT_EQ(deleted, 0);
    DLManagedTensor* out = ToDLPack(keep);
    EXPECT_EQ(DataOf(out), memory);
    out->deleter(out);
    EXPECT_EQ(deleted, 0);
  }
  EXPECT_EQ(deleted, 1);
}

TEST(DLPack, TransposedMemoryIsUsedInPlace) {
  int deleted = 0;
  // a 3x2 tensor stored column-major: element (i, j) at j * 3 + i
  DLManagedTensor* m = MakeForeign({1, 2, 3, 4, 5, 6}, {3, 2}, {1, 3}, 0, &deleted);
  float* memory = static_cast<float*>(DataOf(m));
  Tensor x = FromDLPack(m);
  memory[0] = 9;
  EXPECT_EQ(x.ToVector<float>(), (std::vector<float>{9, 4, 2, 5, 3, 6}));
  x = Tensor();
  EXPECT_EQ(deleted, 1);
}

TEST(DLPack, OtherLayoutsAreCopiedAndGivenBackAtOnce) {
  int deleted = 0;
  // every other element of 8, starting at the second (a byte offset of 4)
  Tensor x = FromDLPack(MakeForeign({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2}, {4, 2}, 4, &deleted));
  EXPECT_EQ(deleted, 1);
  EXPECT_EQ(x.ToVector<float>(), (std::vector<float>{1, 3, 5, 7}));
  // a broadcast (stride 0)
  Tensor b = FromDLPack(MakeForeign({3, 4}, {3, 2}, {0, 1}, 0, &deleted));
  EXPECT_EQ(deleted, 2);
  EXPECT_EQ(b.ToVector<float>(), (std::vector<float>{3, 4, 3, 4, 3, 4}));
  // a misaligned address
  Tensor c = FromDLPack(MakeForeign({1, 2, 3}, {2}, {}, 1, &deleted, {kDLInt, 16, 1}));
  EXPECT_EQ(deleted, 3);
  EXPECT_EQ(c.dtype(), DType::kI16);
  // an empty tensor
  Tensor e = FromDLPack(MakeForeign({}, {0, 3}, {}, 0, &deleted));
  EXPECT_EQ(deleted, 4);
  EXPECT_EQ(e.ToVector<float>().size(), 0u);
}

TEST(DLPack, EveryDTypeRoundTrips) {
  struct Case {
    DType dtype;
    DLDataType dl;
  };
  for (const Case& c : std::vector<Case>{{DType::kF32, {kDLFloat, 32, 1}},
                                         {DType::kF16, {kDLFloat, 16, 1}},
                                         {DType::kBF16, {kDLBfloat, 16, 1}},
                                         {DType::kI32, {kDLInt, 32, 1}},
                                         {DType::kI64, {kDLInt, 64, 1}},
                                         {DType::kU8, {kDLUInt, 8, 1}},
                                         {DType::kBool, {6, 8, 1}}}) {
    SCOPED_TRACE(std::string(DTypeName(c.dtype)));
    Tensor t = Tensor::FromVector<float>({0, 1, 2, 0, 3, 1}, {3, 2}, c.dtype);
    DLManagedTensor* m = ToDLPack(t);
    EXPECT_EQ(m->dl_tensor.dtype.code, c.dl.code);
    EXPECT_EQ(m->dl_tensor.dtype.bits, c.dl.bits);
    EXPECT_EQ(m->dl_tensor.dtype.lanes, 1);
    void* address = m->dl_tensor.data;
    Tensor back = FromDLPack(m);
    EXPECT_EQ(back.dtype(), c.dtype);
    DLManagedTensor* again = ToDLPack(back);
    EXPECT_EQ(again->dl_tensor.data, address);
    again->deleter(again);
    EXPECT_EQ(back.Cast(DType::kF32).ToVector<float>(), t.Cast(DType::kF32).ToVector<float>());
  }
  // f16 bits as numpy writes them: 1.5 is 0x3e00
  DLManagedTensor* h = ToDLPack(Tensor::FromVector<float>({1.5f}, {1}, DType::kF16));
  EXPECT_EQ(*static_cast<uint16_t*>(DataOf(h)), 0x3e00);
  h->deleter(h);
}

TEST(DLPack, SymbolicShapesExportTheBoundSizesWithTheBufferStrides) {
  SymInt n = SymInt::Variable("n", 1, 8, 3);
  Tensor t = Tensor::Arange(24).Reshape({8, 3}).Cast(DType::kF32).Shrink({{0, n}, {0, 3}});
  Tensor u = (t + 0).Transpose(0, 1);  // (3, n)
  u.Realize();
  DLManagedTensor* m = ToDLPack(u);
  ASSERT_EQ(m->dl_tensor.ndim, 2);
  EXPECT_EQ(m->dl_tensor.shape[0], 3);
  EXPECT_EQ(m->dl_tensor.shape[1], 3);
  EXPECT_EQ(m->dl_tensor.strides[0], 8);  // laid out for n = 8
  EXPECT_EQ(m->dl_tensor.strides[1], 1);
  const float* data = static_cast<const float*>(DataOf(m));
  EXPECT_EQ(data[1 * 8 + 2], 7.0f);  // u[1][2] = t[2][1]
  m->deleter(m);
}

TEST(DLPack, WhatCannotBeSharedIsAClearErrorAndTheDeleterStillRunsOnce) {
  int deleted = 0;
  EXPECT_EQ(ErrorOf([&] {
              FromDLPack(MakeForeign({1, 2}, {1}, {}, 0, &deleted, {kDLFloat, 32, 2}));
            }),
            "from_dlpack: a tensor of shape (1) on cpu: dtype (code 2, bits 32, lanes 2) is none "
            "of bool, i8..i64, u8..u64, f16, bf16, f32, f64 with one lane");
  EXPECT_EQ(deleted, 1);
  EXPECT_EQ(ErrorOf([&] {
              FromDLPack(MakeForeign({1}, {1}, {}, 0, &deleted, {kDLComplex, 64, 1}));
            }),
            "from_dlpack: a tensor of shape (1) on cpu: dtype (code 5, bits 64, lanes 1) is none "
            "of bool, i8..i64, u8..u64, f16, bf16, f32, f64 with one lane");
  EXPECT_EQ(deleted, 2);
  std::string e = ErrorOf([&] {
    FromDLPack(MakeForeign({1}, {1}, {}, 0, &deleted, {kDLFloat, 32, 1}, {kDLVulkan, 0}));
  });
  EXPECT_NE(e.find("from_dlpack: a tensor of shape (1) on device type 7 id 0: no device here "
                   "addresses that memory (devices: CPU:0"),
            std::string::npos)
      << e;
  EXPECT_EQ(deleted, 3);
  e = ErrorOf([&] {
    FromDLPack(MakeForeign({1, 2}, {2}, {}, 0, &deleted, {kDLFloat, 32, 1}, {kDLCUDA, 5}));
  });
  EXPECT_NE(e.find("on cuda:5: no device here addresses that memory"), std::string::npos) << e;
  EXPECT_EQ(deleted, 4);
  EXPECT_EQ(ErrorOf([] { FromDLPack(nullptr); }), "from_dlpack: a null DLManagedTensor");
}

}  // namespace
}  // namespace uopc
