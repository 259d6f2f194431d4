#include "core/element.h"

#include <cstring>

#include "core/alu.h"
#include "core/float16.h"

namespace uopc {

Arg LoadElement(const void* base, DType t, int64_t i) {
  const char* p = static_cast<const char*>(base) + i * DTypeSize(t);
  switch (t) {
    case DType::kBool: return Arg(*reinterpret_cast<const uint8_t*>(p) != 0);
    case DType::kF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return Arg(static_cast<double>(F16ToF32(h)));
    }
    case DType::kBF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return Arg(static_cast<double>(BF16ToF32(h)));
    }
    case DType::kF32: {
      float f;
      std::memcpy(&f, p, 4);
      return Arg(static_cast<double>(f));
    }
    case DType::kF64: {
      double d;
      std::memcpy(&d, p, 8);
      return Arg(d);
    }
    default: {
      uint64_t bits = 0;
      std::memcpy(&bits, p, DTypeSize(t));  // little-endian: the low bytes
      return CastValue(Arg(static_cast<int64_t>(bits)), DType::kU64, t);  // wraps, sign-extends
    }
  }
}

void StoreElement(void* base, DType t, int64_t i, const Arg& v) {
  char* p = static_cast<char*>(base) + i * DTypeSize(t);
  switch (t) {
    case DType::kBool: *reinterpret_cast<uint8_t*>(p) = Truthy(v) ? 1 : 0; return;
    case DType::kF16: {
      uint16_t h = F32ToF16(static_cast<float>(v.Get<double>()));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::kBF16: {
      uint16_t h = F32ToBF16(static_cast<float>(v.Get<double>()));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::kF32: {
      float f = static_cast<float>(v.Get<double>());
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::kF64: {
      double d = v.Get<double>();
      std::memcpy(p, &d, 8);
      return;
    }
    default: {
      int64_t bits = v.Get<int64_t>();
      std::memcpy(p, &bits, DTypeSize(t));
      return;
    }
  }
}

}  // namespace uopc
