#include "core/alu.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "core/exp2_f32.h"
#include "core/float16.h"

namespace uopc {
namespace {

using i128 = __int128;
using u128 = unsigned __int128;

int Bits(DType t) { return DTypeSize(t) * 8; }

// Wraps the low bits of `v` to the canonical int64 of integer type `t`.
int64_t WrapInt(u128 v, DType t) {
  uint64_t low = static_cast<uint64_t>(v);
  int bits = Bits(t);
  if (bits == 64) return static_cast<int64_t>(low);
  uint64_t mask = (uint64_t{1} << bits) - 1;
  low &= mask;
  if (!IsUnsigned(t) && (low >> (bits - 1)) & 1) low |= ~mask;  // sign-extend
  return static_cast<int64_t>(low);
}

// The mathematical value of a canonical integer of type `t`.
i128 IntValue(const Arg& v, DType t) {
  if (const bool* b = v.TryGet<bool>()) return *b;
  if (const double* d = v.TryGet<double>()) return static_cast<i128>(*d);
  int64_t i = v.Get<int64_t>();
  if (t == DType::kU64) return static_cast<i128>(static_cast<uint64_t>(i));
  return i;
}

double FloatValue(const Arg& v, DType t) {
  if (const double* d = v.TryGet<double>()) return *d;
  if (const bool* b = v.TryGet<bool>()) return *b ? 1.0 : 0.0;
  int64_t i = v.Get<int64_t>();
  if (t == DType::kU64) return static_cast<double>(static_cast<uint64_t>(i));
  return static_cast<double>(i);
}

double RoundFloat(double d, DType t) {
  if (std::isnan(d)) return std::numeric_limits<double>::quiet_NaN();  // one NaN per dtype
  switch (t) {
    case DType::kF64: return d;
    case DType::kF32: return static_cast<float>(d);
    case DType::kF16: return F16ToF32(F32ToF16(static_cast<float>(d)));
    case DType::kBF16: return BF16ToF32(F32ToBF16(static_cast<float>(d)));
    default: return d;
  }
}

// Float -> integer: truncate, saturate to the type's range, NaN -> 0.
int64_t FloatToInt(double d, DType t) {
  if (std::isnan(d)) return 0;
  double lo = t == DType::kU64 ? 0.0 : static_cast<double>(DTypeMin(t));
  double hi = t == DType::kU64 ? 18446744073709551615.0 : static_cast<double>(DTypeMax(t));
  if (d <= lo) return t == DType::kU64 ? 0 : DTypeMin(t);
  if (d >= hi) return t == DType::kU64 ? static_cast<int64_t>(~uint64_t{0}) : DTypeMax(t);
  double tr = std::trunc(d);
  if (t == DType::kU64) return static_cast<int64_t>(static_cast<uint64_t>(tr));
  return static_cast<int64_t>(tr);
}

i128 FloorDivI(i128 a, i128 b) {
  i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

i128 FloorModI(i128 a, i128 b) {
  i128 m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

std::optional<Arg> EvalInt(Ops op, DType t, absl::Span<const Arg> x) {
  i128 a = IntValue(x[0], t), b = x.size() > 1 ? IntValue(x[1], t) : 0;
  auto wrap = [t](i128 v) { return Arg(WrapInt(static_cast<u128>(v), t)); };
  int bits = Bits(t);
  switch (op) {
    case Ops::ADD: return Arg(WrapInt(static_cast<u128>(a) + static_cast<u128>(b), t));
    case Ops::MUL: return Arg(WrapInt(static_cast<u128>(a) * static_cast<u128>(b), t));
    case Ops::FLOORDIV:
      if (b == 0) return std::nullopt;
      return wrap(FloorDivI(a, b));
    case Ops::MOD:
      if (b == 0) return std::nullopt;
      return wrap(FloorModI(a, b));
    case Ops::MAX: return wrap(a > b ? a : b);
    case Ops::CMPLT: return Arg(a < b);
    case Ops::CMPNE: return Arg(a != b);
    case Ops::CMPEQ: return Arg(a == b);
    case Ops::AND: return wrap(a & b);
    case Ops::OR: return wrap(a | b);
    case Ops::XOR: return wrap(a ^ b);
    case Ops::SHL:
      if (b < 0 || b >= bits) return Arg(int64_t{0});
      return Arg(WrapInt(static_cast<u128>(a) << static_cast<int>(b), t));
    case Ops::SHR:
      if (b < 0 || b >= bits) return Arg(int64_t{a < 0 ? -1 : 0});
      return wrap(a >> static_cast<int>(b));  // arithmetic for signed, a >= 0 for unsigned
    UOPC_FOR_EACH_NON_ALU_OP(UOPC_OP_CASE) case Ops::EXP2: case Ops::LOG2: case Ops::SIN:
    case Ops::SQRT: case Ops::RECIP: case Ops::TRUNC: case Ops::CAST: case Ops::BITCAST:
    case Ops::FDIV: case Ops::WHERE: case Ops::MULACC:
      return std::nullopt;
  }
  UOPC_UNREACHABLE("an op");
}

std::optional<Arg> EvalFloat(Ops op, DType t, absl::Span<const Arg> x) {
  double a = FloatValue(x[0], t), b = x.size() > 1 ? FloatValue(x[1], t) : 0;
  auto r = [t](double v) { return Arg(RoundFloat(v, t)); };
  switch (op) {
    case Ops::EXP2:  // (a half's exp2 is the float one, rounded: as the kernels compute it)
      return r(t == DType::kF64 ? std::exp2(a) : Exp2F32(static_cast<float>(a)));
    case Ops::LOG2: return r(std::log2(a));
    case Ops::SIN: return r(std::sin(a));
    case Ops::SQRT: return r(std::sqrt(a));
    case Ops::RECIP: return r(1.0 / a);
    case Ops::TRUNC: return r(std::trunc(a));
    case Ops::ADD: return r(a + b);
    case Ops::MUL: return r(a * b);
    case Ops::FDIV: return r(a / b);
    case Ops::MAX:
      if (std::isnan(a) || std::isnan(b)) return r(std::numeric_limits<double>::quiet_NaN());
      return r(a > b ? a : b);  // MAX(-0, +0) is the first operand
    case Ops::CMPLT: return Arg(a < b);
    case Ops::CMPNE: return Arg(a != b);
    case Ops::CMPEQ: return Arg(a == b);
    case Ops::MULACC: {  // one rounding in f32 (f64), as fmaf; a half's is the f32 one, rounded
      const double c = FloatValue(x[2], t);
      if (t == DType::kF64) return Arg(std::fma(a, b, c));
      return r(std::fmaf(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
    }
    UOPC_FOR_EACH_NON_ALU_OP(UOPC_OP_CASE) case Ops::CAST: case Ops::BITCAST:
    case Ops::FLOORDIV: case Ops::MOD: case Ops::AND: case Ops::OR: case Ops::XOR:
    case Ops::SHL: case Ops::SHR: case Ops::WHERE:
      return std::nullopt;
  }
  UOPC_UNREACHABLE("an op");
}

std::optional<Arg> EvalBool(Ops op, absl::Span<const Arg> x) {
  bool a = Truthy(x[0]), b = x.size() > 1 && Truthy(x[1]);
  switch (op) {
    case Ops::AND: return Arg(a && b);
    case Ops::OR:
    case Ops::MAX: return Arg(a || b);
    case Ops::XOR:
    case Ops::CMPNE: return Arg(a != b);
    case Ops::CMPEQ: return Arg(a == b);
    case Ops::CMPLT: return Arg(!a && b);
    UOPC_FOR_EACH_NON_ALU_OP(UOPC_OP_CASE) case Ops::EXP2: case Ops::LOG2: case Ops::SIN:
    case Ops::SQRT: case Ops::RECIP: case Ops::TRUNC: case Ops::CAST: case Ops::BITCAST:
    case Ops::ADD: case Ops::MUL: case Ops::FDIV: case Ops::FLOORDIV: case Ops::MOD:
    case Ops::SHL: case Ops::SHR: case Ops::WHERE: case Ops::MULACC:
      return std::nullopt;
  }
  UOPC_UNREACHABLE("an op");
}

}  // namespace

bool Truthy(const Arg& v) {
  if (const bool* b = v.TryGet<bool>()) return *b;
  if (const int64_t* i = v.TryGet<int64_t>()) return *i != 0;
  return v.Get<double>() != 0.0;
}

Arg CastValue(const Arg& v, DType from, DType to) {
  if (IsBool(to)) return Arg(Truthy(v));
  if (IsFloat(to)) return Arg(RoundFloat(FloatValue(v, from), to));
  if (const double* d = v.TryGet<double>()) return Arg(FloatToInt(*d, to));
  return Arg(WrapInt(static_cast<u128>(IntValue(v, from)), to));
}

Arg BitcastValue(const Arg& v, DType from, DType to) {
  uint64_t bits = 0;
  if (IsFloat(from)) {
    double d = v.Get<double>();
    switch (from) {
      case DType::kF64: std::memcpy(&bits, &d, 8); break;
      case DType::kF32: {
        float f = static_cast<float>(d);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        bits = u;
        break;
      }
      case DType::kF16: bits = F32ToF16(static_cast<float>(d)); break;
      default: bits = F32ToBF16(static_cast<float>(d)); break;
    }
  } else {
    bits = static_cast<uint64_t>(IsBool(from) ? Truthy(v) : v.Get<int64_t>());
  }
  if (DTypeSize(to) < 8) bits &= (uint64_t{1} << (DTypeSize(to) * 8)) - 1;
  switch (to) {
    case DType::kF64: {
      double d;
      std::memcpy(&d, &bits, 8);
      return Arg(d);
    }
    case DType::kF32: {
      uint32_t u = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &u, 4);
      return Arg(static_cast<double>(f));
    }
    case DType::kF16: return Arg(static_cast<double>(F16ToF32(static_cast<uint16_t>(bits))));
    case DType::kBF16: return Arg(static_cast<double>(BF16ToF32(static_cast<uint16_t>(bits))));
    case DType::kBool: return Arg(bits != 0);
    default: return Arg(WrapInt(bits, to));
  }
}

std::optional<Arg> EvalAlu(Ops op, DType in, DType out, absl::Span<const Arg> x) {
  switch (op) {
    case Ops::WHERE: return Truthy(x[0]) ? x[1] : x[2];
    case Ops::CAST: return CastValue(x[0], in, out);
    case Ops::BITCAST:
      if (DTypeSize(in) != DTypeSize(out)) return std::nullopt;
      return BitcastValue(x[0], in, out);
    UOPC_FOR_EACH_NON_ALU_OP(UOPC_OP_CASE) case Ops::EXP2: case Ops::LOG2: case Ops::SIN:
    case Ops::SQRT: case Ops::RECIP: case Ops::TRUNC: case Ops::ADD: case Ops::MUL:
    case Ops::FDIV: case Ops::FLOORDIV: case Ops::MOD: case Ops::MAX: case Ops::CMPLT:
    case Ops::CMPNE: case Ops::CMPEQ: case Ops::AND: case Ops::OR: case Ops::XOR:
    case Ops::SHL: case Ops::SHR: case Ops::MULACC:
      break;
  }
  if (IsBool(in)) return EvalBool(op, x);
  if (IsFloat(in)) return EvalFloat(op, in, x);
  if (IsInt(in)) return EvalInt(op, in, x);
  return std::nullopt;
}

}  // namespace uopc
