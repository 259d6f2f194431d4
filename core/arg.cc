#include "core/arg.h"

#include <cstring>

#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace uopc {

absl::string_view RangeKindName(RangeKind k) {
  switch (k) {
#define UOPC_RK_NAME(e, n) \
  case RangeKind::e: return n;
    UOPC_FOR_EACH_RANGE_KIND(UOPC_RK_NAME)
#undef UOPC_RK_NAME
  }
  return "?";
}

bool ParseRangeKind(absl::string_view name, RangeKind* out) {
#define UOPC_RK_PARSE(e, n) \
  if (name == n) {          \
    *out = RangeKind::e;    \
    return true;            \
  }
  UOPC_FOR_EACH_RANGE_KIND(UOPC_RK_PARSE)
#undef UOPC_RK_PARSE
  return false;
}

absl::string_view CollectiveKindName(CollectiveKind k) {
  switch (k) {
#define UOPC_CK_NAME(e, n) \
  case CollectiveKind::e: return n;
    UOPC_FOR_EACH_COLLECTIVE_KIND(UOPC_CK_NAME)
#undef UOPC_CK_NAME
  }
  return "?";
}

bool ParseCollectiveKind(absl::string_view name, CollectiveKind* out) {
#define UOPC_CK_PARSE(e, n)   \
  if (name == n) {            \
    *out = CollectiveKind::e; \
    return true;              \
  }
  UOPC_FOR_EACH_COLLECTIVE_KIND(UOPC_CK_PARSE)
#undef UOPC_CK_PARSE
  return false;
}

namespace {

uint64_t DoubleBits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}

struct Hasher {
  size_t operator()(std::monostate) const { return 0x9e37; }
  size_t operator()(bool b) const { return absl::HashOf(1, b); }
  size_t operator()(int64_t i) const { return absl::HashOf(2, i); }
  size_t operator()(double d) const { return absl::HashOf(3, DoubleBits(d)); }
  size_t operator()(const ParamArg& p) const { return absl::HashOf(4, p.slot, p.size, p.device); }
  size_t operator()(const VarArg& v) const { return absl::HashOf(5, v.name, v.lo, v.hi); }
  size_t operator()(const RangeArg& r) const { return absl::HashOf(6, r.idx, r.kind); }
  size_t operator()(const Axes& a) const { return absl::HashOf(7, a.v); }
  size_t operator()(const ReduceArg& r) const { return absl::HashOf(8, r.op, r.axes); }
  size_t operator()(const DeviceArg& d) const { return absl::HashOf(9, d.name); }
  size_t operator()(const CollectiveArg& c) const {
    return absl::HashOf(10, c.kind, c.grad, c.reduce, c.group, c.size);
  }
};

}  // namespace

bool Arg::operator==(const Arg& o) const {
  if (v_.index() != o.v_.index()) return false;
  if (const double* d = TryGet<double>()) return DoubleBits(*d) == DoubleBits(o.Get<double>());
  return v_ == o.v_;
}

size_t Arg::Hash() const { return std::visit(Hasher{}, v_); }

}  // namespace uopc
