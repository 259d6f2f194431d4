#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

#include "core/alu.h"
#include "core/status_macros.h"
#include "core/uir.h"

namespace uopc {
namespace {

// One line being parsed: a cursor with the line and column for error messages.
class LineParser {
 public:
  LineParser(absl::string_view text, int line) : text_(text), line_(line) {}

  absl::Status Error(absl::string_view what) const { return ErrorAt(pos_, what); }
  absl::Status ErrorAt(size_t pos, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("UIR line ", line_, ", column ", pos + 1, ": ", what));
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ >= text_.size();
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  absl::Status Expect(char c) {
    if (Consume(c)) return absl::OkStatus();
    return Error(absl::StrCat("expected '", std::string(1, c), "'"));
  }
  // A run of characters up to whitespace, ',', ':' or '=' (what a token can hold).
  absl::string_view Word() {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() &&
           absl::string_view(" \t,:=").find(text_[pos_]) == absl::string_view::npos)
      ++pos_;
    return text_.substr(start, pos_ - start);
  }
  // The value of an attribute: up to whitespace.
  absl::string_view Value() {
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != ' ' && text_[pos_] != '\t') ++pos_;
    return text_.substr(start, pos_ - start);
  }
  size_t pos() const { return pos_; }
  void set_pos(size_t p) { pos_ = p; }

 private:
  absl::string_view text_;
  size_t pos_ = 0;
  int line_;
};

struct Literal {
  Arg value;
  DType dtype;         // the dtype an inline literal has
  bool integer = false;  // written as an integer
  bool above_i64 = false;  // an integer past INT64_MAX (it fits u64 only)
};

/// Whether an integer literal's value fits `dtype` (a float or bool dtype takes any).
bool Fits(const Literal& l, DType dtype) {
  if (!l.integer || !IsInt(dtype)) return true;
  if (l.above_i64) return dtype == DType::kU64;
  const int64_t v = l.value.Get<int64_t>();
  return v >= DTypeMin(dtype) && (dtype == DType::kU64 || v <= DTypeMax(dtype));
}

absl::Status NotFitting(const LineParser& p, size_t col, absl::string_view text, DType dtype) {
  return p.ErrorAt(col, absl::StrCat("the literal ", text, " does not fit ", DTypeName(dtype),
                                     " [", DTypeMin(dtype), ", ",
                                     dtype == DType::kU64 ? std::string("18446744073709551615")
                                                          : absl::StrCat(DTypeMax(dtype)),
                                     "]"));
}

std::optional<Literal> ParseLiteral(absl::string_view w) {
  if (w == "true" || w == "false") return Literal{Arg(w == "true"), DType::kBool};
  if (w == "nan" || w == "inf" || w == "-inf") {
    double v = w == "nan" ? std::nan("") : w == "inf" ? INFINITY : -INFINITY;
    return Literal{Arg(v), DType::kF32};
  }
  if (w.empty() || !(absl::ascii_isdigit(w[0]) || w[0] == '-' || w[0] == '.')) return std::nullopt;
  if (w.find_first_of(".eE") == absl::string_view::npos) {
    int64_t i;
    if (absl::SimpleAtoi(w, &i)) return Literal{Arg(i), DType::kI32, true};
    uint64_t u;  // u64 constants above INT64_MAX
    if (absl::SimpleAtoi(w, &u)) return Literal{Arg(static_cast<int64_t>(u)), DType::kI32, true, true};
    return std::nullopt;
  }
  std::string s(w);
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return Literal{Arg(d), DType::kF32};
}

absl::StatusOr<std::vector<int>> ParseInts(const LineParser& p, size_t at, absl::string_view v) {
  std::vector<int> out;
  if (v.empty()) return out;
  for (absl::string_view part : absl::StrSplit(v, ',')) {
    int i;
    if (!absl::SimpleAtoi(part, &i))
      return p.ErrorAt(at, absl::StrCat("expected integers, got '", v, "'"));
    out.push_back(i);
  }
  return out;
}

// The attributes of a line, by key, each with its column.
struct Attrs {
  absl::flat_hash_map<std::string, std::pair<std::string, size_t>> kv;
  const LineParser* p;

  absl::StatusOr<std::string> Take(absl::string_view key) {
    auto it = kv.find(key);
    if (it == kv.end()) return p->Error(absl::StrCat("missing attribute '", key, "='"));
    std::string v = it->second.first;
    kv.erase(it);
    return v;
  }
  size_t Col(absl::string_view key) const {
    auto it = kv.find(key);
    return it == kv.end() ? p->pos() : it->second.second;
  }
  template <typename T>
  absl::StatusOr<T> TakeInt(absl::string_view key) {
    size_t col = Col(key);
    ASSIGN_OR_RETURN(std::string v, Take(key));
    T out;
    if (!absl::SimpleAtoi(v, &out))
      return p->ErrorAt(col,
                        absl::StrCat("attribute '", key, "' must be an integer, got '", v, "'"));
    return out;
  }
};

bool IsName(absl::string_view s, bool device) {
  if (s.empty() || absl::ascii_isdigit(s[0])) return false;
  for (char c : s)
    if (!(absl::ascii_isalnum(c) || c == '_' || (device && (c == ':' || c == '.' || c == '-'))))
      return false;
  return true;
}

// The optional `device=` attribute (empty when absent).
absl::StatusOr<std::string> ParseDevice(Attrs& a, const LineParser& p) {
  if (!a.kv.contains("device")) return std::string();
  size_t col = a.Col("device");
  ASSIGN_OR_RETURN(std::string d, a.Take("device"));
  if (!IsName(d, true)) return p.ErrorAt(col, absl::StrCat("device name '", d, "' is not valid"));
  return d;
}

absl::StatusOr<Arg> ParseArg(Ops op, Attrs& a, const LineParser& p, std::optional<int64_t> size) {
  switch (OpArgKind(op)) {
    case ArgKind::None:
    case ArgKind::Const: return Arg();
    case ArgKind::Param: {
      ASSIGN_OR_RETURN(int slot, a.TakeInt<int>("slot"));
      ASSIGN_OR_RETURN(std::string device, ParseDevice(a, p));
      return Arg(ParamArg{slot, *size, std::move(device)});
    }
    case ArgKind::Var: {
      size_t col = a.Col("name");
      ASSIGN_OR_RETURN(std::string name, a.Take("name"));
      if (!IsName(name, false))
        return p.ErrorAt(col, absl::StrCat("VAR name '", name, "' is not an identifier"));
      ASSIGN_OR_RETURN(int64_t lo, a.TakeInt<int64_t>("lo"));
      ASSIGN_OR_RETURN(int64_t hi, a.TakeInt<int64_t>("hi"));
      return Arg(VarArg{std::move(name), lo, hi});
    }
    case ArgKind::Range: {
      ASSIGN_OR_RETURN(int idx, a.TakeInt<int>("idx"));
      size_t col = a.Col("kind");
      ASSIGN_OR_RETURN(std::string k, a.Take("kind"));
      RangeKind kind;
      if (!ParseRangeKind(k, &kind))
        return p.ErrorAt(col, absl::StrCat("unknown range kind '", k, "'"));
      return Arg(RangeArg{idx, kind});
    }
    case ArgKind::Axes: {
      size_t col = a.Col("axes");
      ASSIGN_OR_RETURN(std::string v, a.Take("axes"));
      ASSIGN_OR_RETURN(std::vector<int> axes, ParseInts(p, col, v));
      return Arg(Axes{std::move(axes)});
    }
    case ArgKind::Reduce: {
      size_t col = a.Col("op");
      ASSIGN_OR_RETURN(std::string o, a.Take("op"));
      std::optional<Ops> rop = ParseOp(o);
      if (!rop) return p.ErrorAt(col, absl::StrCat("unknown reduce op '", o, "'"));
      col = a.Col("axes");
      ASSIGN_OR_RETURN(std::string v, a.Take("axes"));
      ASSIGN_OR_RETURN(std::vector<int> axes, ParseInts(p, col, v));
      return Arg(ReduceArg{*rop, std::move(axes)});
    }
    case ArgKind::Device: {
      ASSIGN_OR_RETURN(std::string d, ParseDevice(a, p));
      return Arg(DeviceArg{std::move(d)});
    }
    case ArgKind::Collective: {
      CollectiveArg c;
      for (auto [key, kind] : {std::pair{"kind", &c.kind}, std::pair{"grad", &c.grad}}) {
        size_t col = a.Col(key);
        ASSIGN_OR_RETURN(std::string k, a.Take(key));
        if (!ParseCollectiveKind(k, kind))
          return p.ErrorAt(col, absl::StrCat("unknown collective kind '", k, "'"));
      }
      size_t col = a.Col("op");
      ASSIGN_OR_RETURN(std::string o, a.Take("op"));
      std::optional<Ops> rop = ParseOp(o);
      if (!rop) return p.ErrorAt(col, absl::StrCat("unknown reduce op '", o, "'"));
      c.reduce = *rop;
      ASSIGN_OR_RETURN(c.group, a.TakeInt<int>("group"));
      ASSIGN_OR_RETURN(c.size, a.TakeInt<int>("size"));
      return Arg(c);
    }
  }
  return Arg();
}

using Ids = absl::flat_hash_map<int64_t, UOp>;

// `%id`, or an inline literal constant.
absl::StatusOr<UOp> ParseOperand(LineParser& p, const Ids& ids) {
  size_t at = (p.SkipSpace(), p.pos());
  if (p.Consume('%')) {
    absl::string_view w = p.Word();
    int64_t id;
    if (!absl::SimpleAtoi(w, &id)) return p.ErrorAt(at, absl::StrCat("bad id '%", w, "'"));
    auto it = ids.find(id);
    if (it == ids.end()) return p.ErrorAt(at, absl::StrCat("%", id, " is not defined above"));
    return it->second;
  }
  absl::string_view w = p.Word();
  std::optional<Literal> lit = ParseLiteral(w);
  if (!lit) return p.ErrorAt(at, absl::StrCat("expected %id or a constant, got '", w, "'"));
  if (!Fits(*lit, lit->dtype)) return NotFitting(p, at, w, lit->dtype);
  return UOp::ConstFromArg(lit->dtype, lit->value);
}

absl::Status ParseLine(LineParser& p, Ids& ids, UOp* out) {
  size_t at = (p.SkipSpace(), p.pos());
  RETURN_IF_ERROR(p.Expect('%'));
  int64_t id;
  if (absl::string_view w = p.Word(); !absl::SimpleAtoi(w, &id) || id < 0)
    return p.ErrorAt(at, absl::StrCat("bad id '%", w, "'"));
  if (ids.contains(id)) return p.ErrorAt(at, absl::StrCat("%", id, " is defined twice"));
  RETURN_IF_ERROR(p.Expect('='));
  size_t op_at = (p.SkipSpace(), p.pos());
  absl::string_view name = p.Word();
  std::optional<Ops> op = ParseOp(name);
  if (!op) return p.ErrorAt(op_at, absl::StrCat("unknown op '", name, "'"));

  // operands: a literal value (CONST), a size (BUFFER, ALLOC), then sources
  std::optional<Literal> value;
  std::string value_text;
  size_t value_col = 0;
  std::optional<int64_t> size;
  std::vector<UOp> src;
  bool first = true;
  while (!p.AtEnd() && !p.Consume(':')) {
    if (!first) RETURN_IF_ERROR(p.Expect(','));
    size_t col = (p.SkipSpace(), p.pos());
    if (first && *op == Ops::CONST) {
      absl::string_view w = p.Word();
      value = ParseLiteral(w);
      if (!value) return p.ErrorAt(col, absl::StrCat("expected a constant, got '", w, "'"));
      value_text = std::string(w);
      value_col = col;
    } else if (first && OpArgKind(*op) == ArgKind::Param) {
      absl::string_view w = p.Word();
      int64_t n;
      if (!absl::SimpleAtoi(w, &n) || n < 0)
        return p.ErrorAt(col, absl::StrCat("expected a size, got '", w, "'"));
      size = n;
    } else {
      ASSIGN_OR_RETURN(UOp s, ParseOperand(p, ids));
      src.push_back(std::move(s));
    }
    first = false;
  }
  if (*op == Ops::CONST && !value) return p.Error("const needs a value");
  if (OpArgKind(*op) == ArgKind::Param && !size)
    return p.Error(absl::StrCat(name, " needs a size"));
  int arity = OpArity(*op);
  if ((arity >= 0 && static_cast<int>(src.size()) != arity) ||
      static_cast<int>(src.size()) < OpMinArity(*op))
    return p.ErrorAt(op_at, absl::StrCat(name, " takes ",
                                         arity >= 0 ? absl::StrCat(arity)
                                                    : absl::StrCat("at least ", OpMinArity(*op)),
                                         " sources, got ", src.size()));

  Attrs attrs{{}, &p};
  while (!p.AtEnd()) {
    size_t col = p.pos();
    std::string key(p.Word());
    if (key.empty() || !p.Consume('=')) return p.ErrorAt(col, "expected key=value");
    if (attrs.kv.contains(key))
      return p.ErrorAt(col, absl::StrCat("attribute '", key, "' given twice"));
    attrs.kv[key] = {std::string(p.Value()), col};
  }
  std::optional<DType> dtype;
  if (attrs.kv.contains("dtype")) {
    size_t col = attrs.Col("dtype");
    ASSIGN_OR_RETURN(std::string d, attrs.Take("dtype"));
    dtype = ParseDType(d);
    if (!dtype) return p.ErrorAt(col, absl::StrCat("unknown dtype '", d, "'"));
    if (*dtype == DType::kVoid && !DerivedDType(*op, src))
      return p.ErrorAt(
          col, absl::StrCat("dtype void is for statements; ", name, " needs a value dtype"));
  }
  ASSIGN_OR_RETURN(Arg arg, ParseArg(*op, attrs, p, size));
  if (!attrs.kv.empty()) {
    auto it = attrs.kv.begin();
    return p.ErrorAt(it->second.second,
                     absl::StrCat("unknown attribute '", it->first, "' for ", name));
  }

  if (*op == Ops::CONST) {
    if (!Fits(*value, dtype.value_or(value->dtype)))
      return NotFitting(p, value_col, value_text, dtype.value_or(value->dtype));
    *out = UOp::ConstFromArg(dtype.value_or(value->dtype), value->value);
  } else {
    if (!dtype) dtype = *op == Ops::VAR ? std::optional(DType::kI32) : DerivedDType(*op, src);
    if (!dtype) return p.ErrorAt(op_at, absl::StrCat(name, " needs dtype="));
    *out = UOp::Make(*op, *dtype, src, std::move(arg));
  }
  ids[id] = *out;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<UOp> ParseUir(absl::string_view text) {
  Ids ids;
  UOp root;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LineParser p(line, line_no);
    if (p.AtEnd()) continue;
    RETURN_IF_ERROR(ParseLine(p, ids, &root));
  }
  if (!root) return absl::InvalidArgumentError("UIR: no nodes (an empty graph)");
  return root;
}

}  // namespace uopc
