#include "core/interpreter.h"

#include <cstring>
#include <memory>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"

#include "core/alu.h"
#include "core/element.h"
#include "core/status_macros.h"

namespace uopc {
namespace {

constexpr uint8_t kZero[16] = {};  // (the value of no value, any dtype)

// Where an INDEX points: a region of memory and the element.
struct Region {
  void* data;
  DType dtype;
  int64_t count;
  std::string name;  // "buffer slot 2", for errors
};

class Machine {
 public:
  Machine(absl::Span<const UOp> program, absl::Span<const BufferRef> buffers,
          const absl::flat_hash_map<std::string, int64_t>& vars)
      : p_(program),
        buffers_(buffers),
        vars_(vars),
        val_(program.size()),
        poison_(program.size(), nullptr) {}

  absl::Status Run();

 private:
  absl::Status Prepare();
  absl::StatusOr<Region*> RegionOf(UOp b);
  absl::Status Step(size_t pc);
  // the value of instruction pc's source i
  const Arg& V(size_t pc, size_t i) const { return val_[src_[pc][i]]; }
  // why that value is no value (an index past its buffer, or what it was computed from), or
  // null: a read past a buffer is an error where its value is used (stored, a loop's trip
  // count), not where a WHERE leaves it unpicked, as `c ? x[i] : 0` reads x[i] only when c
  const std::string* Poison(size_t pc, size_t i) const { return poison_[src_[pc][i]]; }

  absl::Span<const UOp> p_;
  absl::Span<const BufferRef> buffers_;
  const absl::flat_hash_map<std::string, int64_t>& vars_;
  std::vector<Arg> val_;
  std::vector<const std::string*> poison_;  // (by position; into why_)
  std::vector<std::unique_ptr<std::string>> why_;
  absl::flat_hash_map<const UOp::Node*, size_t> pos_;
  std::vector<absl::InlinedVector<size_t, 3>> src_;        // by position: its sources' positions
  absl::flat_hash_map<const UOp::Node*, Region> regions_;  // (none added after Prepare)
  std::vector<Region*> region_;  // by position: where an INDEX, LOAD or STORE points
  std::vector<std::vector<char>> locals_;
  // loops: for a RANGE position, its END's position and its level in that END, and its trip
  // count this time
  std::vector<std::pair<size_t, size_t>> loop_of_;
  std::vector<int64_t> trip_;
};

absl::StatusOr<Region*> Machine::RegionOf(UOp b) {
  while (b.is(Ops::AFTER)) b = b.src(0);
  auto it = regions_.find(b.get());
  if (it != regions_.end()) return &it->second;
  const ParamArg& pa = b.arg().Get<ParamArg>();
  Region r;
  if (b.is(Ops::BUFFER)) {
    if (pa.slot < 0 || pa.slot >= static_cast<int>(buffers_.size()) || !buffers_[pa.slot].data)
      return absl::InvalidArgumentError(
          absl::StrCat("interpret: no memory bound to buffer slot ", pa.slot));
    const BufferRef& ref = buffers_[pa.slot];
    if (ref.dtype != b.dtype() || ref.count < pa.size)
      return absl::InvalidArgumentError(absl::StrCat(
          "interpret: buffer slot ", pa.slot, " is ", pa.size, " x ", DTypeName(b.dtype()),
          " but the memory bound to it is ", ref.count, " x ", DTypeName(ref.dtype)));
    r = {ref.data, ref.dtype, pa.size, absl::StrCat("buffer slot ", pa.slot)};
  } else {
    locals_.emplace_back(pa.size * DTypeSize(b.dtype()), 0);
    r = {locals_.back().data(), b.dtype(), pa.size, absl::StrCat("alloc slot ", pa.slot)};
  }
  return &regions_.emplace(b.get(), std::move(r)).first->second;
}

absl::Status Machine::Prepare() {
  constexpr size_t kNone = ~size_t{0};
  const size_t n = p_.size();
  for (size_t k = 0; k < n; ++k) pos_[p_[k].get()] = k;
  src_.resize(n);
  loop_of_.assign(n, {kNone, 0});
  trip_.assign(n, 0);
  for (size_t k = 0; k < n; ++k) {
    const UOp& u = p_[k];
    for (const UOp& s : u.src()) src_[k].push_back(pos_.at(s.get()));
    if (u.is(Ops::END))
      for (size_t t = 1; t < u.src().size(); ++t) loop_of_[src_[k][t]] = {k, t - 1};
    if (u.is(Ops::BUFFER) || u.is(Ops::ALLOC)) RETURN_IF_ERROR(RegionOf(u).status());
  }
  region_.assign(n, nullptr);
  for (size_t k = 0; k < n; ++k) {
    const UOp& u = p_[k];
    if (u.is(Ops::RANGE) && loop_of_[k].first == kNone)
      return absl::InvalidArgumentError(
          "interpret: a RANGE without an END (linearize the kernel first)");
    if (u.is(Ops::INDEX) || u.is(Ops::LOAD) || u.is(Ops::STORE)) {
      ASSIGN_OR_RETURN(region_[k], RegionOf(u.is(Ops::INDEX) ? u.src(0) : u.src(0).src(0)));
    }
  }
  return absl::OkStatus();
}

absl::Status Machine::Step(size_t pc) {
  const UOp& u = p_[pc];
  switch (u.op()) {
    case Ops::CONST: val_[pc] = u.arg(); return absl::OkStatus();
    case Ops::VAR: {
      const VarArg& v = u.arg().Get<VarArg>();
      auto it = vars_.find(v.name);
      if (it == vars_.end())
        return absl::InvalidArgumentError(absl::StrCat("interpret: no value for VAR ", v.name));
      if (it->second < v.lo || it->second > v.hi)
        return absl::OutOfRangeError(absl::StrCat("interpret: VAR ", v.name, " = ", it->second,
                                                  " is outside its bounds [", v.lo, ", ", v.hi,
                                                  "]"));
      val_[pc] = Arg(it->second);
      return absl::OkStatus();
    }
    case Ops::AFTER:
      val_[pc] = V(pc, 0);
      poison_[pc] = Poison(pc, 0);
      return absl::OkStatus();
    case Ops::INDEX: {
      const Region* r = region_[pc];
      int64_t i = V(pc, 1).Get<int64_t>();
      poison_[pc] = Poison(pc, 1);
      if (!poison_[pc] && (i < 0 || i >= r->count)) {
        why_.push_back(std::make_unique<std::string>(
            absl::StrCat("interpret: index ", i, " is outside ", r->name, " (", r->count,
                         " elements of ", DTypeName(r->dtype), ")")));
        poison_[pc] = why_.back().get();
      }
      val_[pc] = Arg(poison_[pc] ? int64_t{0} : i);
      return absl::OkStatus();
    }
    case Ops::LOAD: {
      const Region* r = region_[pc];
      poison_[pc] = Poison(pc, 0);
      val_[pc] = poison_[pc] ? LoadElement(kZero, r->dtype, 0)
                             : LoadElement(r->data, r->dtype, V(pc, 0).Get<int64_t>());
      return absl::OkStatus();
    }
    case Ops::STORE: {
      const Region* r = region_[pc];
      for (size_t i = 0; i < src_[pc].size(); ++i)
        if (const std::string* why = Poison(pc, i)) return absl::OutOfRangeError(*why);
      StoreElement(r->data, r->dtype, V(pc, 0).Get<int64_t>(), V(pc, 1));
      return absl::OkStatus();
    }
    case Ops::SINK:
    case Ops::BUFFER:
    case Ops::ALLOC:
    case Ops::RANGE:
    case Ops::END:                               // loops are run by Run
    case Ops::BARRIER: return absl::OkStatus();  // (a block's threads, a local loop, run in turn)
    case Ops::RESHAPE: case Ops::EXPAND: case Ops::PERMUTE: case Ops::PAD: case Ops::SHRINK:
    case Ops::FLIP: case Ops::IOTA: case Ops::REDUCE: case Ops::STAGE: case Ops::COPY: case Ops::ASSIGN:
    case Ops::COLLECTIVE:
    case Ops::MATMUL: UOPC_FOR_EACH_ALU_OP(UOPC_OP_CASE) break;
  }
  if (!IsAlu(u.op()))
    return absl::InvalidArgumentError(
        absl::StrCat("interpret: ", OpName(u.op()), " is not a loop-level op; lower it first"));
  absl::InlinedVector<Arg, 3> in;
  for (size_t i = 0; i < src_[pc].size(); ++i) in.push_back(V(pc, i));
  DType in_t = u.src(u.is(Ops::WHERE) ? 1 : 0).dtype();
  // no value from no value (a WHERE's, from its condition or the operand it picks)
  const std::string* why = nullptr;
  if (u.is(Ops::WHERE))
    why = Poison(pc, 0) ? Poison(pc, 0) : Poison(pc, Truthy(in[0]) ? 1 : 2);
  else
    for (size_t i = 0; i < src_[pc].size(); ++i) why = why ? why : Poison(pc, i);
  poison_[pc] = why;
  if (why) {
    val_[pc] = LoadElement(kZero, u.dtype(), 0);
    return absl::OkStatus();
  }
  std::optional<Arg> r = EvalAlu(u.op(), in_t, u.dtype(), in);
  if (!r)
    return absl::InvalidArgumentError(absl::StrCat("interpret: ", OpName(u.op()), " of ",
                                                   DTypeName(in_t),
                                                   " is undefined here (division by zero?)"));
  val_[pc] = *std::move(r);
  return absl::OkStatus();
}

absl::Status Machine::Run() {
  RETURN_IF_ERROR(Prepare());
  size_t pc = 0;
  std::optional<size_t> resume_level;  // set when an empty loop jumps to its END
  while (pc < p_.size()) {
    const UOp& u = p_[pc];
    if (u.is(Ops::RANGE)) {
      if (const std::string* why = Poison(pc, 0)) return absl::OutOfRangeError(*why);
      int64_t trip = V(pc, 0).Get<int64_t>();
      auto [end_pos, level] = loop_of_[pc];
      if (trip <= 0) {  // an empty loop: continue with the loops around it
        resume_level = level;
        pc = end_pos;
        continue;
      }
      trip_[pc] = trip;
      val_[pc] = Arg(int64_t{0});
      ++pc;
      continue;
    }
    if (u.is(Ops::END)) {
      size_t levels = u.src().size() - 1;
      size_t start = resume_level ? *resume_level : levels;  // levels above `start` continue
      resume_level.reset();
      bool looped = false;
      for (size_t t = start; t-- > 0;) {
        size_t rp = src_[pc][t + 1];
        int64_t next = val_[rp].Get<int64_t>() + 1;
        if (next < trip_[rp]) {
          val_[rp] = Arg(next);
          pc = rp + 1;
          looped = true;
          break;
        }
      }
      if (!looped) ++pc;
      continue;
    }
    RETURN_IF_ERROR(Step(pc));
    ++pc;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Interpret(absl::Span<const UOp> program, absl::Span<const BufferRef> buffers,
                       const absl::flat_hash_map<std::string, int64_t>& vars) {
  return Machine(program, buffers, vars).Run();
}

}  // namespace uopc
