#include "backends/c/render_c.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "core/alu.h"
#include "core/bounds.h"
#include "core/float_format.h"
#include "core/kernel_signature.h"
#include "core/status_macros.h"

namespace uopc {
namespace {

// What differs between the C-style languages: data, read by one printer.
struct CStyle {
  const char* name;       // in messages
  const char* bool_type;  // a bool value's C type
  // f16 values: a type of the language's (_Float16), rounded by a cast; or (CUDA) float in
  // registers, held as bits in memory and rounded by a helper
  bool native_f16;
  const char* fma_f32;  // a * b + c rounded once
  const char* fma_f64;
  // integer + and * wrap as written (gcc's -fwrapv); else they are computed unsigned where
  // the operands' bounds do not prove the result fits (NVRTC assumes no overflow)
  bool wrapping_ints;
  // bits reinterpreted through a compound literal of a union (C), or a helper (C++)
  bool compound_literals;
  // global and local ranges are the thread's place in the grid (the block's index and the
  // thread's, x then y then z); else loops, a global range running the chunk `gchunk` of
  // `gchunks` (C)
  bool grid_ranges;
  const char* block_index;
  const char* thread_index;
  const char* restrict_kw;
  // every buffer slot is a parameter, used or not (the device passes them all); else only
  // the used ones, and an entry that takes the launch convention calls the kernel
  bool every_slot_a_parameter;
  const char* kernel_prefix;  // before the kernel's name
  // storage that a block's threads share (an ALLOC in kSharedMemory), and the barrier that
  // waits for the block's threads: where the block's threads run in turn (C: a local range is
  // a loop, and what follows it comes after all of them), neither needs a word
  const char* shared_prefix;
  const char* barrier;
  // a warp's registers (an ALLOC in kWarpRegisters): a register a thread, read c lanes up by
  // this call (value, c); none: an array like any other (threads run in turn)
  const char* shuffle_down;
  // a WHERE that picks an f32 read (in range wherever it is) or +0 is the read's bits and a
  // mask: gcc vectorizes that in a chain of fmas, and not the select (a decode step's q . k
  // over a paged cache, one key at a time: 2x slower)
  bool masked_picks;
};

constexpr CStyle kC = {
    .name = "C",
    .bool_type = "_Bool",
    .native_f16 = true,
    .fma_f32 = "__builtin_fmaf",
    .fma_f64 = "__builtin_fma",
    .wrapping_ints = true,
    .compound_literals = true,
    .grid_ranges = false,
    .block_index = "",
    .thread_index = "",
    .restrict_kw = "restrict",
    .every_slot_a_parameter = false,
    .kernel_prefix = "void ",
    .shared_prefix = "",
    .barrier = "",
    .shuffle_down = nullptr,
    .masked_picks = true,
};
constexpr CStyle kCuda = {
    .name = "CUDA",
    .bool_type = "bool",
    .native_f16 = false,
    .fma_f32 = "fmaf",
    .fma_f64 = "fma",
    .wrapping_ints = false,
    .compound_literals = false,
    .grid_ranges = true,
    .block_index = "blockIdx.",
    .thread_index = "threadIdx.",
    .restrict_kw = "__restrict__",
    .every_slot_a_parameter = true,
    .kernel_prefix = "extern \"C\" __global__ void ",
    .shared_prefix = "__shared__ ",
    .barrier = "__syncthreads();",
    .shuffle_down = "__shfl_down_sync(0xffffffffu, ",
    .masked_picks = false,
};

const CStyle& StyleOf(CLang lang) { return lang == CLang::kCuda ? kCuda : kC; }

// The C type of a value of `t` (bf16 values are computed in float; without a native f16,
// f16 too).
const char* CType(DType t, const CStyle& lang = kC) {
  switch (t) {
    case DType::kBool: return lang.bool_type;
    case DType::kI8: return "int8_t";
    case DType::kU8: return "uint8_t";
    case DType::kI16: return "int16_t";
    case DType::kU16: return "uint16_t";
    case DType::kI32: return "int";
    case DType::kU32: return "unsigned int";
    case DType::kI64: return "long long";
    case DType::kU64: return "unsigned long long";
    case DType::kF16: return lang.native_f16 ? "_Float16" : "float";
    case DType::kBF16: return "float";
    case DType::kF32: return "float";
    case DType::kF64: return "double";
    case DType::kVoid: return "void";
  }
  return "void";
}

// The C type of an element in memory (16-bit floats held as their bits where C has no type
// for them).
// Whether a 16-bit float lives in memory as bits and in registers as float.
bool AsBits(DType t, const CStyle& lang) {
  return t == DType::kBF16 || (t == DType::kF16 && !lang.native_f16);
}

const char* MemType(DType t, const CStyle& lang) {
  if (t == DType::kBool) return "uint8_t";
  if (AsBits(t, lang)) return "uint16_t";
  return CType(t, lang);
}
// The calls that turn such bits into a float and back.
std::string FromBits(DType t, const std::string& e) {
  return (t == DType::kBF16 ? "uopc_bf16_to_f32(" : "uopc_f16_to_f32(") + e + ")";
}
std::string ToBits(DType t, const std::string& e) {
  return (t == DType::kBF16 ? "uopc_f32_to_bf16(" : "uopc_f32_to_f16(") + e + ")";
}

// `e` without an outermost bf16 rounding, where ToBits follows: uopc_f32_to_bf16 rounds the
// same way (a value rounded once is rounded again to itself; a NaN keeps its bits and sign
// and is quieted either way), so the bits are the same and the rounding is 6 integer ops an
// element spent twice (a GELU kernel 4-10% of its time).
std::string WithoutBf16Rounding(DType t, const std::string& e) {
  constexpr absl::string_view kCall = "uopc_rbf16(";
  if (t != DType::kBF16 || !absl::StartsWith(e, kCall) || e.back() != ')') return e;
  int depth = 0;  // (the call's parenthesis must close at the end, not before)
  for (size_t i = kCall.size() - 1; i + 1 < e.size(); ++i) {
    depth += e[i] == '(' ? 1 : e[i] == ')' ? -1 : 0;
    if (depth == 0) return e;
  }
  return e.substr(kCall.size(), e.size() - kCall.size() - 1);
}

// The unsigned type of the same width, for shifts that must not overflow.
const char* UType(DType t) {
  switch (DTypeSize(t)) {
    case 1: return "uint8_t";
    case 2: return "uint16_t";
    case 4: return "unsigned int";
    default: return "unsigned long long";
  }
}

// The unsigned type integer arithmetic of `t` wraps in (C promotes narrow types to int).
const char* WrapType(DType t) { return DTypeSize(t) == 8 ? "unsigned long long" : "unsigned int"; }

// Suffix of the int helpers in the prelude ("i32").
std::string Sfx(DType t) { return std::string(DTypeName(t)); }

std::string Literal(const UOp& c, const CStyle& lang) {
  DType t = c.dtype();
  const Arg& a = c.arg();
  if (IsBool(t)) return Truthy(a) ? "1" : "0";
  if (IsFloat(t)) {
    const bool half = t == DType::kF16 && lang.native_f16;  // a _Float16 value
    double v = a.Get<double>();
    if (std::isnan(v)) return half ? "((_Float16)NAN)" : "NAN";
    if (std::isinf(v))
      return std::string(half ? "((_Float16)" : "(") + (v > 0 ? "" : "-") + "INFINITY)";
    if (t == DType::kF64) return FormatFloat(v, t);
    if (t == DType::kF32) return FormatFloat(v, t) + "f";
    char hex[40];  // f16 and bf16 values are exact in a hex float literal
    std::snprintf(hex, sizeof hex, "%af", v);
    return half ? absl::StrCat("((_Float16)", hex, ")") : std::string(hex);
  }
  int64_t v = a.Get<int64_t>();
  switch (t) {
    case DType::kI64: return v == INT64_MIN ? "(-9223372036854775807LL-1)" : absl::StrCat(v, "LL");
    case DType::kU64: return absl::StrCat(static_cast<uint64_t>(v), "ULL");
    case DType::kU32: return absl::StrCat(v, "u");
    case DType::kI32: return v == INT32_MIN ? "(-2147483647-1)" : absl::StrCat(v);
    default: return absl::StrCat("((", CType(t), ")", v, ")");
  }
}

// Whether an integer ADD or MUL provably stays within its dtype (from its operands' bounds).
bool Fits(const UOp& u) {
  const UOp &a = u.src(0), &b = u.src(1);
  if (!HasBounds(a.dtype()) || !HasBounds(b.dtype())) return false;
  __int128 lo, hi;
  if (u.is(Ops::ADD)) {
    lo = static_cast<__int128>(VMin(a)) + VMin(b);
    hi = static_cast<__int128>(VMax(a)) + VMax(b);
  } else {
    __int128 c[4] = {static_cast<__int128>(VMin(a)) * VMin(b), static_cast<__int128>(VMin(a)) * VMax(b),
                     static_cast<__int128>(VMax(a)) * VMin(b), static_cast<__int128>(VMax(a)) * VMax(b)};
    lo = std::min({c[0], c[1], c[2], c[3]});
    hi = std::max({c[0], c[1], c[2], c[3]});
  }
  DType t = u.dtype();
  // bounds of a wide type can be its whole range: prove nothing there
  return DTypeSize(t) < 8 && lo >= DTypeMin(t) && hi <= DTypeMax(t) &&
         VMin(a) > DTypeMin(t) && VMax(a) < DTypeMax(t) && VMin(b) > DTypeMin(t) &&
         VMax(b) < DTypeMax(t);
}

// Whether a RANGE is written out: an unroll range of a constant length, its body once per
// value (a register tile's rows: gcc keeps their sums in registers then, and vectorizes
// under -fwrapv, where a loop or `#pragma GCC unroll` of it did not).
bool IsWrittenOut(const UOp& range) {
  return range.arg().Get<RangeArg>().kind == RangeKind::kUnroll &&
         range.src(0).ConstIntValue().has_value();
}

// Whether a RANGE is a loop the kernel runs, rather than a launch dimension or written out.
bool IsLoop(const UOp& range, const CStyle& lang) {
  RangeKind k = range.arg().Get<RangeArg>().kind;
  return !IsWrittenOut(range) &&
         (!lang.grid_ranges || (k != RangeKind::kGlobal && k != RangeKind::kLocal));
}

// The memory an INDEX, LOAD or STORE's buffer lives in: an ALLOC's (kSharedMemory,
// kWarpRegisters, "" for a thread's own), "" for a kernel buffer.
std::string MemoryOf(UOp b) {
  while (b.is(Ops::AFTER)) b = b.src(0);
  return b.is(Ops::ALLOC) ? b.arg().Get<ParamArg>().device : std::string();
}

// How many lanes up a warp register index reads: l (0), l + c or (l + c) % n, for l a local
// range and c, n constants; nullopt for any other index.
std::optional<int64_t> LaneOffset(UOp idx) {
  auto local = [](const UOp& r) {
    return r.is(Ops::RANGE) && r.arg().Get<RangeArg>().kind == RangeKind::kLocal;
  };
  if (idx.is(Ops::MOD) && idx.src(1).ConstIntValue()) idx = idx.src(0);
  if (local(idx)) return 0;
  if (idx.is(Ops::ADD) && local(idx.src(0))) return idx.src(1).ConstIntValue();
  return std::nullopt;
}

// Whether a BARRIER waits for a store that other threads of the block may read (to the
// block's shared memory or a kernel buffer; not to a thread's own registers nor to a warp's,
// which its shuffles wait for), back to the barriers before it.
bool StoresForTheBlock(const UOp& barrier) {
  std::vector<UOp> stack(barrier.src().begin(), barrier.src().end());
  absl::flat_hash_set<const UOp::Node*> seen;
  while (!stack.empty()) {
    UOp x = std::move(stack.back());
    stack.pop_back();
    if (x.is(Ops::BARRIER) || !seen.insert(x.get()).second) continue;
    if (x.is(Ops::STORE)) {
      UOp b = x.src(0).src(0);
      while (b.is(Ops::AFTER)) b = b.src(0);
      if (b.is(Ops::BUFFER) || MemoryOf(b) == kSharedMemory) return true;
    }
    stack.insert(stack.end(), x.src().begin(), x.src().end());
  }
  return false;
}

class Renderer {
 public:
  Renderer(absl::Span<const UOp> p, const CStyle& lang) : p_(p), lang_(lang) {}
  absl::StatusOr<std::string> Run(absl::string_view name);

 private:
  void Line(const std::string& s) { body_ += std::string(2 * depth_, ' ') + s + "\n"; }
  std::string R(const UOp& u) const { return expr_.at(u.get()); }  // a copy: expr_ may rehash
  /// Whether `u` is a read of a kernel buffer whose index lies in the buffer wherever it is.
  static bool ReadInRange(const UOp& u) {
    if (!u.is(Ops::LOAD) || !u.src(0).is(Ops::INDEX)) return false;
    UOp b = u.src(0).src(0);
    while (b.is(Ops::AFTER)) b = b.src(0);
    const UOp& index = u.src(0).src(1);
    return b.is(Ops::BUFFER) && HasBounds(index.dtype()) && VMin(index) >= 0 &&
           VMax(index) < b.arg().Get<ParamArg>().size;
  }
  absl::StatusOr<std::string> Alu(const UOp& u) const;
  std::string Div(const UOp& u) const;
  /// `x`, a value of `from`'s memory type, as `to`'s memory type with the same bits.
  std::string Reinterpret(DType from, DType to, const std::string& x) const {
    if (!lang_.compound_literals)
      return absl::StrCat("uopc_bits<", MemType(to, lang_), ">((", MemType(from, lang_), ")", x,
                          ")");
    return absl::StrCat("(((union { ", MemType(from, lang_), " a; ", MemType(to, lang_),
                        " b; }){.a = ", x, "}).b)");
  }
  std::string Round(DType t, const std::string& e) const;
  absl::Status Emit(const UOp& u, size_t pos);
  /// Emits p_[k] (a range written out: its body once per value); the index after it.
  absl::StatusOr<size_t> EmitAt(size_t k);

  absl::Span<const UOp> p_;
  absl::flat_hash_map<const UOp::Node*, std::string> expr_;  // a node's C expression or name
  absl::flat_hash_map<const UOp::Node*, int> uses_;
  absl::flat_hash_map<const UOp::Node*, int> branch_uses_;  // as a WHERE's value
  absl::flat_hash_map<const UOp::Node*, int> depth_at_;   // loop depth where a node is placed
  absl::flat_hash_map<const UOp::Node*, int> use_depth_;  // deepest loop depth of a use
  std::string body_;
  const CStyle& lang_;
  int depth_ = 1, vals_ = 0, alus_ = 0, globals_ = 0;
  int locals_ = 0;         // the block's axes that local ranges used (grid_ranges)
  int open_locals_ = 0;    // local ranges whose END has not come
  bool returned_ = false;  // threads past a run-time end return (grid_ranges)
};

// f16 and bf16 results are rounded to their dtype after every op, as the IR defines, and
// integers narrower than int (which C computes in int) wrap to their width.
std::string Renderer::Round(DType t, const std::string& e) const {
  if (t == DType::kF16) return lang_.native_f16 ? "((_Float16)" + e + ")" : "uopc_rf16(" + e + ")";
  if (t == DType::kBF16) return "uopc_rbf16(" + e + ")";
  if (IsInt(t) && DTypeSize(t) < 4) return absl::StrCat("((", CType(t), ")", e, ")");
  return e;
}

std::string Renderer::Div(const UOp& u) const {
  const UOp &a = u.src(0), &b = u.src(1);
  bool plain = HasBounds(a.dtype()) ? VMin(a) >= 0 && VMin(b) > 0 : false;
  if (plain) return absl::StrCat("(", R(a), u.is(Ops::FLOORDIV) ? "/" : "%", R(b), ")");
  return absl::StrCat(u.is(Ops::FLOORDIV) ? "uopc_floordiv_" : "uopc_mod_", Sfx(a.dtype()), "(",
                      R(a), ", ", R(b), ")");
}

absl::StatusOr<std::string> Renderer::Alu(const UOp& u) const {
  DType t = u.dtype(), in = u.src(0).dtype();
  auto bin = [&](const char* op) { return absl::StrCat("(", R(u.src(0)), op, R(u.src(1)), ")"); };
  // float math on f16/bf16 goes through float; f64 has its own functions
  auto fn = [&](const char* f32, const char* f64) {
    if (t == DType::kF64) return absl::StrCat(f64, "(", R(u.src(0)), ")");
    std::string arg = t == DType::kF16 && lang_.native_f16 ? "(float)" + R(u.src(0)) : R(u.src(0));
    return absl::StrCat(f32, "(", arg, ")");
  };
  // integer + and * wrap: where the language does not say so (CUDA), computed unsigned
  // unless the operands' bounds prove the result fits (index arithmetic, mostly)
  auto wrapping = [&](const char* op) {
    if (lang_.wrapping_ints || !IsInt(t) || Fits(u)) return bin(op);
    return absl::StrCat("((", CType(t, lang_), ")((", WrapType(t), ")", R(u.src(0)), op, "(",
                        WrapType(t), ")", R(u.src(1)), "))");
  };
  switch (u.op()) {
    case Ops::ADD: return Round(t, wrapping("+"));
    case Ops::MUL: return Round(t, wrapping("*"));
    case Ops::FDIV: return Round(t, bin("/"));
    case Ops::FLOORDIV:
    case Ops::MOD: return Div(u);
    case Ops::CMPLT: return bin("<");
    case Ops::CMPNE: return bin("!=");
    case Ops::CMPEQ: return bin("==");
    case Ops::AND: return bin("&");
    case Ops::OR: return bin("|");
    case Ops::XOR: return bin("^");
    case Ops::MAX:
      if (IsFloat(t)) {  // (in float for all but f64: exact, and a loop of it vectorizes)
        const char* fmax = t == DType::kF64 ? "uopc_fmax" : "uopc_fmaxf";
        return absl::StrCat("((", CType(t, lang_), ")", fmax, "(", R(u.src(0)), ", ",
                            R(u.src(1)), "))");
      }
      return absl::StrCat("((", R(u.src(0)), ">", R(u.src(1)), ")?", R(u.src(0)), ":", R(u.src(1)),
                          ")");
    case Ops::SHL:
    case Ops::SHR: {
      const UOp& b = u.src(1);
      int bits = DTypeSize(t) * 8;
      bool in_range = HasBounds(b.dtype()) && VMin(b) >= 0 && VMax(b) < bits;
      if (!in_range)
        return absl::StrCat(u.is(Ops::SHL) ? "uopc_shl_" : "uopc_shr_", Sfx(t), "(", R(u.src(0)),
                            ", ", R(b), ")");
      if (u.is(Ops::SHR)) return bin(">>");
      return absl::StrCat("((", CType(t, lang_), ")((", UType(t), ")", R(u.src(0)), "<<", R(b),
                          "))");
    }
    case Ops::WHERE:
      if (lang_.masked_picks && t == DType::kF32 && ReadInRange(u.src(1)) &&
          u.src(2).is(Ops::CONST) && u.src(2).arg().Get<double>() == 0.0 &&
          !std::signbit(u.src(2).arg().Get<double>()))
        return absl::StrCat("uopc_pickf(", R(u.src(0)), ", ", R(u.src(1)), ")");
      return absl::StrCat("(", R(u.src(0)), "?", R(u.src(1)), ":", R(u.src(2)), ")");
    case Ops::MULACC: {  // a * b + c rounded once: an fma instruction (a half's in float)
      auto x = [&](size_t i) {
        return t == DType::kF16 && lang_.native_f16 ? "(float)" + R(u.src(i)) : R(u.src(i));
      };
      const char* f = t == DType::kF64 ? lang_.fma_f64 : lang_.fma_f32;
      return Round(t, absl::StrCat(f, "(", x(0), ", ", x(1), ", ", x(2), ")"));
    }
    case Ops::EXP2: return Round(t, fn("uopc_exp2f", "exp2"));  // (core/exp2_f32.h)
    case Ops::LOG2: return Round(t, fn("log2f", "log2"));
    case Ops::SIN: return Round(t, fn("sinf", "sin"));
    case Ops::SQRT: return Round(t, fn("sqrtf", "sqrt"));
    case Ops::TRUNC: return Round(t, fn("truncf", "trunc"));
    case Ops::RECIP:
      return Round(t, t == DType::kF64 ? absl::StrCat("(1.0/", R(u.src(0)), ")")
                                       : absl::StrCat("(1.0f/", R(u.src(0)), ")"));
    case Ops::CAST: {
      if (IsBool(t)) return absl::StrCat("(", R(u.src(0)), "!=0)");
      if (IsInt(t) && IsFloat(in))
        return absl::StrCat("uopc_f2", Sfx(t), "((double)", R(u.src(0)), ")");
      if (t == DType::kBF16) return absl::StrCat("uopc_rbf16((float)", R(u.src(0)), ")");
      if (t == DType::kF16 && !lang_.native_f16)
        return absl::StrCat("uopc_rf16((float)", R(u.src(0)), ")");
      if (t == DType::kF16 && in == DType::kF64)
        return absl::StrCat("((_Float16)(float)", R(u.src(0)), ")");
      return absl::StrCat("((", CType(t, lang_), ")", R(u.src(0)), ")");
    }
    case Ops::BITCAST: {  // the bits in memory form (16-bit floats as bits)
      std::string x = AsBits(in, lang_) ? ToBits(in, R(u.src(0))) : R(u.src(0));
      std::string bits = Reinterpret(in, t, x);
      return AsBits(t, lang_) ? FromBits(t, bits) : bits;
    }
    case Ops::SINK:
    case Ops::CONST:
    case Ops::VAR:
    case Ops::BUFFER:
    case Ops::ALLOC:
    case Ops::RANGE:
    case Ops::INDEX:
    case Ops::LOAD:
    case Ops::STORE:
    case Ops::END:
    case Ops::BARRIER:
    case Ops::AFTER:
    case Ops::RESHAPE:
    case Ops::EXPAND:
    case Ops::PERMUTE:
    case Ops::PAD:
    case Ops::SHRINK:
    case Ops::FLIP:
    case Ops::IOTA:
    case Ops::REDUCE:
    case Ops::STAGE:
    case Ops::COPY:
    case Ops::COLLECTIVE:
    case Ops::MATMUL:
    case Ops::ASSIGN: break;
  }
  return absl::InternalError(
      absl::StrCat("render C: ", OpName(u.op()), " is not an ALU op, and has no C expression"));
}

absl::StatusOr<size_t> Renderer::EmitAt(size_t k) {
  const UOp& r = p_[k];
  if (!r.is(Ops::RANGE) || !IsWrittenOut(r)) {
    RETURN_IF_ERROR(Emit(r, k));
    return k + 1;
  }
  size_t end = k + 1;  // the END that closes it
  while (end < p_.size() &&
         !(p_[end].is(Ops::END) &&
           std::find(p_[end].src().begin() + 1, p_[end].src().end(), r) != p_[end].src().end()))
    ++end;
  if (end == p_.size())
    return absl::InvalidArgumentError(absl::StrCat("render ", lang_.name, ": a range never ends"));
  // (no block per value: the values' names are new each time, and a value computed inside
  // that is used after it keeps its last name)
  for (int64_t i = 0; i < *r.src(0).ConstIntValue(); ++i) {
    expr_[r.get()] = absl::StrCat(i);
    for (size_t j = k + 1; j < end;) {
      ASSIGN_OR_RETURN(j, EmitAt(j));
    }
  }
  RETURN_IF_ERROR(Emit(p_[end], end));  // (the loops it also closes)
  return end + 1;
}

absl::Status Renderer::Emit(const UOp& u, size_t pos) {
  switch (u.op()) {
    case Ops::SINK: return absl::OkStatus();
    case Ops::CONST: expr_[u.get()] = Literal(u, lang_); return absl::OkStatus();
    case Ops::VAR: expr_[u.get()] = u.arg().Get<VarArg>().name; return absl::OkStatus();
    case Ops::BUFFER:
      expr_[u.get()] = absl::StrCat("data", u.arg().Get<ParamArg>().slot);
      return absl::OkStatus();
    case Ops::ALLOC: {
      const ParamArg& a = u.arg().Get<ParamArg>();
      std::string name = absl::StrCat("acc", a.slot);
      const bool registers = a.device == kWarpRegisters && lang_.shuffle_down;
      Line(absl::StrCat(a.device == kSharedMemory ? lang_.shared_prefix : "",
                        CType(u.dtype(), lang_), " ", name,
                        a.size == 1 || registers ? "" : absl::StrCat("[", a.size, "]"), ";"));
      expr_[u.get()] = name;
      return absl::OkStatus();
    }
    case Ops::AFTER: expr_[u.get()] = R(u.src(0)); return absl::OkStatus();
    case Ops::BARRIER:
      if (returned_)  // (CUDA: a barrier that returned threads never reach hangs the block)
        return absl::InvalidArgumentError(absl::StrCat(
            "render ", lang_.name,
            ": a BARRIER after threads past a run-time end returned; expected constant ends"));
      if (*lang_.barrier && StoresForTheBlock(u)) Line(lang_.barrier);
      return absl::OkStatus();
    case Ops::RANGE: {
      std::string r = absl::StrCat("ridx", u.arg().Get<RangeArg>().idx);
      expr_[u.get()] = r;
      if (!IsLoop(u, lang_)) {  // the thread's place in the grid: x, then y, then z
        // (a local range after others have closed, a block's next stage, is the same
        // threads again: its axis is the number of local ranges open around it)
        bool global = u.arg().Get<RangeArg>().kind == RangeKind::kGlobal;
        int n = global ? globals_++ : open_locals_++;
        if (n > 2)
          return absl::InvalidArgumentError(
              absl::StrCat("render ", lang_.name, ": more than 3 global or local ranges"));
        if (!global) locals_ = std::max(locals_, n + 1);
        Line(absl::StrCat("int ", r, " = ", global ? lang_.block_index : lang_.thread_index,
                          std::string(1, "xyz"[n]), ";"));
        // an end that is not the launch's (a run-time length): the threads past it return
        if (!u.src(0).ConstIntValue()) {
          Line(absl::StrCat("if (", r, " >= ", R(u.src(0)), ") return;"));
          returned_ = true;
        }
        return absl::OkStatus();
      }
      if (u.arg().Get<RangeArg>().kind == RangeKind::kGlobal) {  // C: this chunk's part
        const std::string n = absl::StrCat("(long long)", R(u.src(0)));
        // (the end in the loop's type: compared with a long long, gcc cannot count the
        // iterations under -fwrapv and does not vectorize; and the chunk lies in [0, n):
        // without saying so, gcc cannot tell that indices built from it do not wrap, and
        // reads contiguous rows by gathers)
        Line(absl::StrCat("for (", CType(u.dtype(), lang_), " ", r, " = ", n,
                          " * gchunk / gchunks, ", r, "_end = ", n, " * (gchunk + 1) / gchunks; ",
                          r, " < ", r, "_end; ", r, "++) {"));
        Line(absl::StrCat("  if (", r, " < 0 || ", r, " >= ", n, ") __builtin_unreachable();"));
      } else {
        Line(absl::StrCat("for (", CType(u.dtype(), lang_), " ", r, " = 0; ", r, " < ", R(u.src(0)),
                          "; ", r, "++) {"));
      }
      ++depth_;
      return absl::OkStatus();
    }
    case Ops::END:
      for (size_t i = 1; i < u.src().size(); ++i) {
        if (!IsLoop(u.src(i), lang_)) {
          open_locals_ -= u.src(i).arg().Get<RangeArg>().kind == RangeKind::kLocal;
          continue;
        }
        --depth_;
        Line("}");
      }
      return absl::OkStatus();
    case Ops::INDEX: {
      UOp b = u.src(0);
      while (b.is(Ops::AFTER)) b = b.src(0);
      if (lang_.shuffle_down && MemoryOf(b) == kWarpRegisters) {  // its own, or c lanes up
        const std::optional<int64_t> c = LaneOffset(u.src(1));
        if (!c || *c < 0)
          return absl::InvalidArgumentError(absl::StrCat(
              "render ", lang_.name, ": a warp's registers indexed by a ", OpName(u.src(1).op()),
              "; expected the thread's local index l, l + c or (l + c) % n"));
        expr_[u.get()] = *c == 0 ? R(b) : absl::StrCat(lang_.shuffle_down, R(b), ", ", *c, ")");
        return absl::OkStatus();
      }
      bool scalar = b.is(Ops::ALLOC) && b.arg().Get<ParamArg>().size == 1;
      expr_[u.get()] = scalar ? R(u.src(0)) : absl::StrCat(R(u.src(0)), "[", R(u.src(1)), "]");
      return absl::OkStatus();
    }
    case Ops::LOAD: {
      std::string name = absl::StrCat("val", vals_++), from = R(u.src(0));
      UOp b = u.src(0).src(0);
      while (b.is(Ops::AFTER)) b = b.src(0);
      bool memory = b.is(Ops::BUFFER);
      if (memory && AsBits(u.dtype(), lang_)) from = FromBits(u.dtype(), from);
      if (memory && u.dtype() == DType::kBool) from = "(" + from + "!=0)";
      // read only where a WHERE picks it: read in its branch, so that an index that is out
      // of range where the WHERE does not pick it (a PAD's, a concatenation's) is never read;
      // an index in range wherever it is (a paged cache's, its block 0 where the gate is off)
      // is read before the WHERE, which gcc then vectorizes
      if (memory && branch_uses_[u.get()] == uses_[u.get()] && !ReadInRange(u)) {
        expr_[u.get()] = "(" + from + ")";
        return absl::OkStatus();
      }
      Line(absl::StrCat(CType(u.dtype(), lang_), " ", name, " = ", from, ";"));
      expr_[u.get()] = name;
      return absl::OkStatus();
    }
    case Ops::STORE: {
      UOp b = u.src(0).src(0);
      while (b.is(Ops::AFTER)) b = b.src(0);
      std::string v = R(u.src(1));
      if (b.is(Ops::BUFFER) && AsBits(u.src(1).dtype(), lang_))
        v = ToBits(u.src(1).dtype(), WithoutBf16Rounding(u.src(1).dtype(), v));
      if (lang_.shuffle_down && MemoryOf(b) == kWarpRegisters && LaneOffset(u.src(0).src(1)) != 0)
        return absl::InvalidArgumentError(
            absl::StrCat("render ", lang_.name,
                         ": a store into a warp's registers at another thread's element"));
      // a store to memory after a block's threads were closed (a block's result, computed
      // alike by each of them): the block's, done by its first thread
      std::string first;
      if (b.is(Ops::BUFFER) && locals_ > 0 && open_locals_ == 0)
        for (int d = 0; d < locals_; ++d)
          absl::StrAppend(&first, first.empty() ? "if (" : " && ", lang_.thread_index,
                          std::string(1, "xyz"[d]), " == 0");
      Line(absl::StrCat(first.empty() ? "" : first + ") ", R(u.src(0)), " = ", v, ";"));
      return absl::OkStatus();
    }
    case Ops::RESHAPE: case Ops::EXPAND: case Ops::PERMUTE: case Ops::PAD: case Ops::SHRINK:
    case Ops::FLIP: case Ops::IOTA: case Ops::REDUCE: case Ops::STAGE: case Ops::COPY: case Ops::ASSIGN:
    case Ops::COLLECTIVE:
    case Ops::MATMUL: UOPC_FOR_EACH_ALU_OP(UOPC_OP_CASE) break;
  }
  if (!IsAlu(u.op()))
    return absl::InvalidArgumentError(
        absl::StrCat("render C: ", OpName(u.op()), " is not a loop-level op; lower it first"));
  ASSIGN_OR_RETURN(std::string e, Alu(u));
  // a value used once, at the depth where it is computed, is inlined into its use
  if (uses_[u.get()] == 1 && use_depth_[u.get()] == depth_at_.at(u.get())) {
    expr_[u.get()] = e;
  } else {
    std::string name = absl::StrCat("alu", alus_++);
    Line(absl::StrCat(CType(u.dtype(), lang_), " ", name, " = ", e, ";"));
    expr_[u.get()] = name;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Renderer::Run(absl::string_view name) {
  int depth = 0;
  for (const UOp& u : p_) {
    if (u.is(Ops::END))
      for (size_t i = 1; i < u.src().size(); ++i) depth -= IsLoop(u.src(i), lang_);
    depth_at_[u.get()] = depth;
    for (size_t i = 0; i < u.src().size(); ++i) {
      const UOp& s = u.src(i);
      ++uses_[s.get()];
      if (u.is(Ops::WHERE) && i > 0) ++branch_uses_[s.get()];
      use_depth_[s.get()] = std::max(use_depth_[s.get()], depth);
    }
    if (u.is(Ops::RANGE) && IsLoop(u, lang_)) ++depth;
  }
  for (size_t k = 0; k < p_.size();) {
    ASSIGN_OR_RETURN(k, EmitAt(k));
  }
  if (p_.empty() || !p_.back().is(Ops::SINK))
    return absl::InvalidArgumentError("render C: a program ends with its SINK");
  ASSIGN_OR_RETURN(KernelSignature sig, SignatureOf(p_.back()));
  std::vector<std::string> params, args;
  for (size_t s = 0; s < sig.buffers.size(); ++s) {
    const char* type = MemType(sig.buffers[s].dtype, lang_);
    if (lang_.every_slot_a_parameter && !sig.buffers[s].used) {
      params.push_back(absl::StrCat("void* unused", s));
      continue;
    }
    if (!sig.buffers[s].used) continue;
    params.push_back(absl::StrCat(type, "* ", lang_.restrict_kw, " data", s));
    args.push_back(absl::StrCat("(", type, "*)bufs[", s, "]"));
  }
  std::string checks;
  for (size_t v = 0; v < sig.vars.size(); ++v) {
    const VarArg& var = sig.vars[v];
    params.push_back(absl::StrCat("int ", var.name));
    args.push_back(absl::StrCat("(int)vars[", v, "]"));
    // where ints wrap (C under -fwrapv), an index built from a VAR of unknown range might
    // wrap as far as gcc can tell, and a loop over it reads an element at a time; its
    // bounds, said, make such indices affine (and a VAR outside them runs nothing)
    if (lang_.wrapping_ints)
      absl::StrAppend(&checks, "  if (", var.name, " < ", var.lo, " || ", var.name, " > ", var.hi,
                      ") return;\n");
  }
  if (lang_.every_slot_a_parameter)  // (the device calls the kernel itself)
    return absl::StrCat(lang_.kernel_prefix, name, "(", absl::StrJoin(params, ", "), ") {\n",
                        checks, body_, "}\n");
  // a global range runs chunk gchunk of gchunks (of a CPU's threads); all of it in one
  const bool chunked = std::any_of(p_.begin(), p_.end(), [](const UOp& u) {
    return u.is(Ops::RANGE) && u.arg().Get<RangeArg>().kind == RangeKind::kGlobal;
  });
  if (chunked) {
    params.push_back("long long gchunk");
    params.push_back("long long gchunks");
    args.push_back("gchunk");
    args.push_back("gchunks");
  }
  return absl::StrCat(
      lang_.kernel_prefix, name, "(", absl::StrJoin(params, ", "), ") {\n", checks, body_, "}\n",
      "UOPC_ENTRY void ", name,
      "_entry(void* const* bufs, const long long* vars, long long gchunk, long long gchunks) {\n",
      "  (void)bufs; (void)vars; (void)gchunk; (void)gchunks;\n  ", name, "(",
      absl::StrJoin(args, ", "), ");\n}\n");
}

}  // namespace

std::string CStyleHelpers() {
  return R"C(#define UOPC_INT_HELPERS(S, T, U, BITS)                                                      \
  UOPC_FN T uopc_floordiv_##S(T a, T b) {                                              \
    if (b == 0) return 0;                                                                    \
    if ((T)-1 < 0 && b == (T)-1) return (T)(0 - (U)a);                                       \
    T q = a / b;                                                                             \
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;                                 \
  }                                                                                          \
  UOPC_FN T uopc_mod_##S(T a, T b) {                                                   \
    if (b == 0 || ((T)-1 < 0 && b == (T)-1)) return 0;                                       \
    T m = a % b;                                                                             \
    return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;                                     \
  }                                                                                          \
  UOPC_FN T uopc_shl_##S(T a, T b) { return (b < 0 || b >= BITS) ? 0 : (T)((U)a << b); } \
  UOPC_FN T uopc_shr_##S(T a, T b) { return (b < 0 || b >= BITS) ? (a < 0 ? (T)-1 : 0) : (T)(a >> b); } \
  UOPC_FN T uopc_f2##S(double x) {                                                     \
    const double lo = (T)-1 < 0 ? -(double)((U)1 << (BITS - 1)) : 0.0;                      \
    const double hi = (T)-1 < 0 ? (double)((U)1 << (BITS - 1)) : 2.0 * (double)((U)1 << (BITS - 1)); \
    if (x != x) return 0;                                                                    \
    if (x <= lo) return (T)lo;                                                               \
    if (x >= hi) return (T)((T)-1 < 0 ? (T)((U)1 << (BITS - 1)) - 1 : (T)-1);                \
    return (T)x;                                                                             \
  }
UOPC_INT_HELPERS(i8, int8_t, uint8_t, 8)
UOPC_INT_HELPERS(u8, uint8_t, uint8_t, 8)
UOPC_INT_HELPERS(i16, int16_t, uint16_t, 16)
UOPC_INT_HELPERS(u16, uint16_t, uint16_t, 16)
UOPC_INT_HELPERS(i32, int, unsigned int, 32)
UOPC_INT_HELPERS(u32, unsigned int, unsigned int, 32)
UOPC_INT_HELPERS(i64, long long, unsigned long long, 64)
UOPC_INT_HELPERS(u64, unsigned long long, unsigned long long, 64)
UOPC_FN float uopc_bf16_to_f32(uint16_t b) {
  union { uint32_t u; float f; } v;
  v.u = (uint32_t)b << 16;
  return v.f;
}
UOPC_FN uint16_t uopc_f32_to_bf16(float f) {  /* (no branch: loops of it vectorize) */
  union { float f; uint32_t u; } v;
  v.f = f;
  return (v.u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((v.u >> 16) | 0x40u)
                                           : (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
}
/* f rounded to bf16: uopc_bf16_to_f32(uopc_f32_to_bf16(f)). A NaN's quiet bit is set with its
   exponent's bits, which it has: gcc computes both branches where it vectorizes a select, and
   0x400000 alone made of a zero a subnormal that the select's product then read (an 18x
   slower multiply on Intel, for every vector of a causal mask's zeros). */
UOPC_FN float uopc_rbf16(float f) {
  union { float f; uint32_t u; } v;
  v.f = f;
  v.u = (v.u & 0x7fffffffu) > 0x7f800000u ? (v.u | 0x7fc00000u) & 0xffff0000u
                                          : (v.u + 0x7fffu + ((v.u >> 16) & 1u)) & 0xffff0000u;
  return v.f;
}
/* g ? x : +0.0f as bits (a mask): a loop of it vectorizes where the select does not */
UOPC_FN float uopc_pickf(int g, float x) {
  union { float f; uint32_t u; } v;
  v.f = x;
  v.u &= 0u - (uint32_t)(g != 0);
  return v.f;
}
UOPC_FN double uopc_fmax(double a, double b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }
UOPC_FN float uopc_fmaxf(float a, float b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }
/* 2^x of a float, core/exp2_f32.h's Exp2F32 (the interpreter's) operation for operation:
   within 1 ulp, the same bits on every backend, and loops of it vectorize (no call). */
UOPC_FN float uopc_exp2f(float x) {
  const int zero = x < -150.0f;
  const float c = zero ? 0.0f : x > 129.0f ? 129.0f : x;
  const float n = rintf(c), f = c - n;
  float p = fmaf(1.5356125e-4f, f, 1.3398818e-3f);
  p = fmaf(p, f, 9.6184276e-3f);
  p = fmaf(p, f, 5.5503327e-2f);
  p = fmaf(p, f, 2.4022648e-1f);
  p = fmaf(p, f, 6.9314718e-1f);
  p = fmaf(p, f, 1.0f);
  const int e = (int)(n == n ? n : 0.0f), e1 = e >> 1;
  union { uint32_t u; float f; } s1, s2;
  s1.u = (uint32_t)(e1 + 127) << 23;
  s2.u = (uint32_t)(e - e1 + 127) << 23;
  return zero ? 0.0f : (p * s1.f) * s2.f;
}
)C";
}

std::string CPrelude() {
  return R"C(#include <math.h>
#include <stdint.h>
#define UOPC_ENTRY __attribute__((visibility("default")))
#define UOPC_FN static inline
)C" + CStyleHelpers();
}

absl::StatusOr<std::string> RenderC(absl::Span<const UOp> program, absl::string_view name,
                                    CLang lang) {
  return Renderer(program, StyleOf(lang)).Run(name);
}

}  // namespace uopc
