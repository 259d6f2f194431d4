// Template members of Tensor (included by tensor.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/alu.h"
#include "core/element.h"

namespace uopc {

namespace internal {
// Whether T's values are `dtype`'s bits as they lie (a copy converts nothing).
template <typename T>
constexpr bool SameBits(DType dtype) {
  return (std::is_same_v<T, float> && dtype == DType::kF32) ||
         (std::is_same_v<T, double> && dtype == DType::kF64) ||
         (std::is_same_v<T, int32_t> && dtype == DType::kI32) ||
         (std::is_same_v<T, int64_t> && dtype == DType::kI64) ||
         (std::is_same_v<T, uint8_t> && dtype == DType::kU8);
}
}  // namespace internal

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& data, TensorShape shape, DType dtype,
                          DeviceRef device) {
  int64_t n = 1;
  for (const SymInt& d : shape) n *= d.value();
  if (static_cast<int64_t>(data.size()) != n)
    ThrowInvalid("tensor: " + std::to_string(data.size()) + " values for shape " +
                 ShapeString(shape) + " (" + std::to_string(n) + " elements)");
  if constexpr (!std::is_same_v<T, bool>)
    if (internal::SameBits<T>(dtype))  // (the bits as they are: a step's inputs, each step)
      return FromBytes(data.data(), dtype, std::move(shape), device.get());
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * DTypeSize(dtype));
  for (int64_t i = 0; i < n; ++i) {
    Arg v;
    if constexpr (std::is_same_v<T, bool>)
      v = CastValue(Arg(static_cast<bool>(data[i])), DType::kBool, dtype);
    else if constexpr (std::is_floating_point_v<T>)
      v = CastValue(Arg(static_cast<double>(data[i])), DType::kF64, dtype);
    else
      v = CastValue(Arg(static_cast<int64_t>(data[i])), DType::kI64, dtype);
    StoreElement(bytes.data(), dtype, i, v);
  }
  return FromBytes(bytes.data(), dtype, std::move(shape), device.get());
}

template <typename T>
std::vector<T> Tensor::ToVector() const {
  std::vector<uint8_t> bytes = HostBytes();
  const int64_t n = numel().value();
  std::vector<T> out(n);
  if constexpr (!std::is_same_v<T, bool>)
    if (internal::SameBits<T>(dtype())) {
      if (n > 0) std::memcpy(out.data(), bytes.data(), n * sizeof(T));
      return out;
    }
  DType want = DefaultDType<T>();
  for (int64_t i = 0; i < n; ++i) {
    Arg v = CastValue(LoadElement(bytes.data(), dtype(), i), dtype(), want);
    if constexpr (std::is_same_v<T, bool>)
      out[i] = v.template Get<bool>();
    else if constexpr (std::is_floating_point_v<T>)
      out[i] = static_cast<T>(v.template Get<double>());
    else
      out[i] = static_cast<T>(v.template Get<int64_t>());
  }
  return out;
}

template <typename T>
T Tensor::Item() const {
  if (numel() != 1)
    ThrowInvalid("item: a tensor of shape " + ShapeString(shape()) + " has " +
                 numel().ToString() + " elements; expected 1");
  return ToVector<T>()[0];
}

}  // namespace uopc
