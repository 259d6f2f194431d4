#include "core/uop.h"

#include <array>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"

#include "core/alu.h"

namespace uopc {

struct UOp::Node {
  std::atomic<uint32_t> rc{1};
  Ops op;
  DType dtype;
  size_t hash;
  absl::InlinedVector<UOp, 3> src;
  Arg arg;
  BoundsCache bounds;
};

namespace {

// What identifies a node, for lookups that must not allocate one.
struct Key {
  Ops op;
  DType dtype;
  absl::Span<const UOp> src;
  const Arg* arg;
  size_t hash;
};

size_t HashKey(Ops op, DType dtype, absl::Span<const UOp> src, const Arg& arg) {
  size_t h = absl::HashOf(op, dtype, arg.Hash(), src.size());
  for (const UOp& s : src) h = absl::HashOf(h, s.get());
  return h;
}

bool SameSrc(absl::Span<const UOp> a, absl::Span<const UOp> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].get() != b[i].get()) return false;
  return true;
}

struct NodeHash {
  using is_transparent = void;
  size_t operator()(const UOp::Node* n) const { return n->hash; }
  size_t operator()(const Key& k) const { return k.hash; }
};

struct NodeEq {
  using is_transparent = void;
  static bool Same(const UOp::Node* n, const Key& k) {
    return n->hash == k.hash && n->op == k.op && n->dtype == k.dtype && SameSrc(n->src, k.src) &&
           n->arg == *k.arg;
  }
  bool operator()(const UOp::Node* a, const UOp::Node* b) const {
    return a == b || Same(a, Key{b->op, b->dtype, b->src, &b->arg, b->hash});
  }
  bool operator()(const UOp::Node* n, const Key& k) const { return Same(n, k); }
  bool operator()(const Key& k, const UOp::Node* n) const { return Same(n, k); }
};

}  // namespace

// The interner: shards of (mutex, hash set). A node's count drops to zero only under its
// shard's lock, and lookups increment under the same lock, so a lookup never revives a
// node that is being destroyed.
class Interner {
 public:
  static Interner& Get() {
    static Interner* interner = new Interner();  // never destroyed: nodes may outlive main
    return *interner;
  }

  UOp::Node* Intern(Ops op, DType dtype, absl::Span<const UOp> src, Arg&& arg) {
    Key key{op, dtype, src, &arg, HashKey(op, dtype, src, arg)};
    Shard& shard = ShardFor(key.hash);
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.set.find(key);
    if (it != shard.set.end()) {
      (*it)->rc.fetch_add(1, std::memory_order_relaxed);
      return *it;
    }
    auto* n = new UOp::Node{.op = op,
                            .dtype = dtype,
                            .hash = key.hash,
                            .src = {src.begin(), src.end()},
                            .arg = std::move(arg)};
    shard.set.insert(n);
    return n;
  }

  void Release(UOp::Node* n) {
    uint32_t c = n->rc.load(std::memory_order_relaxed);
    while (c > 1)
      if (n->rc.compare_exchange_weak(c, c - 1, std::memory_order_acq_rel)) return;
    {
      Shard& shard = ShardFor(n->hash);
      std::lock_guard<std::mutex> lock(shard.mu);
      if (n->rc.fetch_sub(1, std::memory_order_acq_rel) != 1) return;  // revived by a lookup
      shard.set.erase(n);
    }
    Destroy(n);
  }

  size_t Live() {
    size_t total = 0;
    for (Shard& s : shards_) {
      std::lock_guard<std::mutex> lock(s.mu);
      total += s.set.size();
    }
    return total;
  }

 private:
  static constexpr int kShards = 64;
  struct Shard {
    std::mutex mu;
    absl::flat_hash_set<UOp::Node*, NodeHash, NodeEq> set;
  };

  Shard& ShardFor(size_t hash) { return shards_[(hash >> 58) % kShards]; }

  static void Destroy(UOp::Node* n);

  std::array<Shard, kShards> shards_;
};

// Deleting a node releases its sources; a long chain would recurse as deep as the chain,
// so nodes to delete go on a per-thread list that one loop drains. (File-scope
// thread_locals: a plugin's copy of this code must not share them with the host's.)
namespace {
thread_local std::vector<UOp::Node*> tls_pending;
thread_local bool tls_draining = false;
}  // namespace

void Interner::Destroy(UOp::Node* n) {
  tls_pending.push_back(n);
  if (tls_draining) return;
  tls_draining = true;
  while (!tls_pending.empty()) {
    UOp::Node* d = tls_pending.back();
    tls_pending.pop_back();
    delete d;  // may push its sources
  }
  tls_draining = false;
}

// ---- handle ----

UOp::UOp(const UOp& o) noexcept : n_(o.n_) {
  if (n_) n_->rc.fetch_add(1, std::memory_order_relaxed);
}

UOp& UOp::operator=(const UOp& o) noexcept {
  if (o.n_) o.n_->rc.fetch_add(1, std::memory_order_relaxed);
  if (n_) Interner::Get().Release(n_);
  n_ = o.n_;
  return *this;
}

UOp& UOp::operator=(UOp&& o) noexcept {
  if (this != &o) {
    if (n_) Interner::Get().Release(n_);
    n_ = o.n_;
    o.n_ = nullptr;
  }
  return *this;
}

UOp::~UOp() {
  if (n_) Interner::Get().Release(n_);
}

Ops UOp::op() const { return n_->op; }
DType UOp::dtype() const { return n_->dtype; }
const Arg& UOp::arg() const { return n_->arg; }
absl::Span<const UOp> UOp::src() const { return n_->src; }
size_t UOp::hash() const { return n_->hash; }
UOp::BoundsCache& UOp::bounds_cache() const { return n_->bounds; }
size_t UOp::LiveCount() { return Interner::Get().Live(); }

std::optional<int64_t> UOp::ConstIntValue() const {
  if (!is(Ops::CONST)) return std::nullopt;
  if (const int64_t* i = arg().TryGet<int64_t>()) return *i;
  if (const bool* b = arg().TryGet<bool>()) return *b ? 1 : 0;
  return std::nullopt;
}

UOp UOp::Make(Ops op, DType dtype, absl::Span<const UOp> src, Arg arg) {
  return UOp(Interner::Get().Intern(op, dtype, src, std::move(arg)));
}

std::optional<DType> DerivedDType(Ops op, absl::Span<const UOp> src) {
  switch (op) {
    case Ops::CONST:
    case Ops::VAR:
    case Ops::BUFFER:
    case Ops::ALLOC:
    case Ops::IOTA:
    case Ops::CAST:
    case Ops::BITCAST: return std::nullopt;
    case Ops::SINK:
    case Ops::STORE:
    case Ops::END:
    case Ops::BARRIER:
    case Ops::MATMUL: return DType::kVoid;
    case Ops::CMPLT:
    case Ops::CMPNE:
    case Ops::CMPEQ: return DType::kBool;
    case Ops::WHERE: return src.size() == 3 ? std::optional(src[1].dtype()) : std::nullopt;
    case Ops::RANGE:
    case Ops::INDEX:
    case Ops::LOAD:
    case Ops::AFTER:
    case Ops::RESHAPE:
    case Ops::EXPAND:
    case Ops::PERMUTE:
    case Ops::PAD:
    case Ops::SHRINK:
    case Ops::FLIP:
    case Ops::REDUCE:
    case Ops::STAGE:
    case Ops::COPY:
    case Ops::COLLECTIVE:
    case Ops::ASSIGN:
    case Ops::EXP2:
    case Ops::LOG2:
    case Ops::SIN:
    case Ops::SQRT:
    case Ops::RECIP:
    case Ops::TRUNC:
    case Ops::ADD:
    case Ops::MUL:
    case Ops::FDIV:
    case Ops::FLOORDIV:
    case Ops::MOD:
    case Ops::MAX:
    case Ops::AND:
    case Ops::OR:
    case Ops::XOR:
    case Ops::SHL:
    case Ops::SHR:
    case Ops::MULACC: return src.empty() ? std::nullopt : std::optional(src[0].dtype());
  }
  return std::nullopt;
}

UOp UOp::Derived(Ops op, absl::Span<const UOp> src, Arg arg) {
  return Make(op, DerivedDType(op, src).value_or(DType::kVoid), src, std::move(arg));
}

UOp UOp::ConstFromArg(DType dtype, const Arg& value) {
  DType from = value.Is<double>() ? DType::kF64 : value.Is<bool>() ? DType::kBool : DType::kI64;
  return Make(Ops::CONST, dtype, {}, CastValue(value, from, dtype));
}
UOp UOp::ConstInt(DType dtype, int64_t v) { return ConstFromArg(dtype, Arg(v)); }
UOp UOp::ConstFloat(DType dtype, double v) { return ConstFromArg(dtype, Arg(v)); }
UOp UOp::ConstBool(DType dtype, bool v) { return ConstFromArg(dtype, Arg(v)); }

UOp UOp::Var(std::string name, int64_t lo, int64_t hi) {
  return Make(Ops::VAR, DType::kI32, {}, VarArg{std::move(name), lo, hi});
}
UOp UOp::Buffer(DType dtype, int slot, int64_t size, std::string device) {
  return Make(Ops::BUFFER, dtype, {}, ParamArg{slot, size, std::move(device)});
}
UOp UOp::Alloc(DType dtype, int slot, int64_t size) {
  return Make(Ops::ALLOC, dtype, {}, ParamArg{slot, size, ""});
}
UOp UOp::Range(UOp end, int idx, RangeKind kind) {
  return Derived(Ops::RANGE, {std::move(end)}, RangeArg{idx, kind});
}
UOp UOp::Sink(absl::Span<const UOp> roots) { return Make(Ops::SINK, DType::kVoid, roots); }

UOp UOp::Index(UOp idx) const { return Derived(Ops::INDEX, {*this, std::move(idx)}); }
UOp UOp::Load() const { return Derived(Ops::LOAD, {*this}); }
UOp UOp::Store(UOp value) const { return Derived(Ops::STORE, {*this, std::move(value)}); }
UOp UOp::Cast(DType dtype) const { return Make(Ops::CAST, dtype, {*this}); }
UOp UOp::Bitcast(DType dtype) const { return Make(Ops::BITCAST, dtype, {*this}); }

UOp UOp::End(std::initializer_list<UOp> ranges) const {
  absl::InlinedVector<UOp, 4> src{*this};
  src.insert(src.end(), ranges.begin(), ranges.end());
  return Derived(Ops::END, src);
}

UOp UOp::After(std::initializer_list<UOp> deps) const {
  absl::InlinedVector<UOp, 4> src{*this};
  src.insert(src.end(), deps.begin(), deps.end());
  return Derived(Ops::AFTER, src);
}

UOp UOp::WithSrc(absl::Span<const UOp> src) const { return Make(op(), dtype(), src, arg()); }

std::vector<UOp> UOp::Toposort() const {
  std::vector<UOp> order;
  absl::flat_hash_set<const Node*> seen;
  // (node, next source to visit): an explicit stack, so deep graphs do not recurse.
  std::vector<std::pair<const UOp*, size_t>> stack;
  if (!n_) return order;
  stack.push_back({this, 0});
  seen.insert(n_);
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    if (i < u->src().size()) {
      const UOp* s = &u->src()[i++];
      if (seen.insert(s->get()).second) stack.push_back({s, 0});
    } else {
      order.push_back(*u);
      stack.pop_back();
    }
  }
  return order;
}

UOp operator+(const UOp& a, const UOp& b) { return UOp::Derived(Ops::ADD, {a, b}); }
UOp operator*(const UOp& a, const UOp& b) { return UOp::Derived(Ops::MUL, {a, b}); }
UOp operator-(const UOp& a) { return a * UOp::ConstInt(a.dtype(), -1); }
UOp operator-(const UOp& a, const UOp& b) { return a + (-b); }
UOp operator+(const UOp& a, int64_t b) { return a + UOp::ConstInt(a.dtype(), b); }
UOp operator*(const UOp& a, int64_t b) { return a * UOp::ConstInt(a.dtype(), b); }
UOp operator-(const UOp& a, int64_t b) { return a + UOp::ConstInt(a.dtype(), -b); }

}  // namespace uopc
