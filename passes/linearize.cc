#include "passes/linearize.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

#include "core/status_macros.h"
#include "passes/scope.h"

namespace uopc {
namespace {

using Scope = std::vector<const UOp::Node*>;  // sorted: the RANGEs a node is inside

Scope Union(const Scope& a, const Scope& b) {
  Scope out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

bool Within(const Scope& s, const Scope& open) {
  return std::includes(open.begin(), open.end(), s.begin(), s.end());
}

class Linearizer {
 public:
  explicit Linearizer(const UOp& sink) : scopes_(sink) {}

  absl::StatusOr<std::vector<UOp>> Run(const UOp& sink) {
    RETURN_IF_ERROR(EmitBody(sink.Toposort(), {}));
    return std::move(program_);
  }

 private:
  bool Ready(const UOp& u) const {
    for (const UOp& s : u.src())
      if (!placed_.contains(s.get())) return false;
    return true;
  }

  void Place(const UOp& u) {
    placed_.insert(u.get());
    program_.push_back(u);
  }

  // Places the nodes of `body` (in topological order) that belong at nesting `open`;
  // ENDs open their loops and place what is inside. Nodes that need deeper loops are left
  // for the END that closes those loops.
  absl::Status EmitBody(const std::vector<UOp>& body, const Scope& open) {
    for (const UOp& u : body) {
      if (placed_.contains(u.get()) || !Within(scopes_.Of(u), open)) continue;
      if (u.is(Ops::END)) {
        RETURN_IF_ERROR(EmitEnd(u, open));
      } else if (Ready(u)) {
        Place(u);
      }
    }
    for (const UOp& u : body)
      if (!placed_.contains(u.get())) return Misplaced(u, open);
    return absl::OkStatus();
  }

  // An END: what its body needs outside the loops first, then the RANGEs, the body, the END.
  absl::Status EmitEnd(const UOp& end, const Scope& open) {
    std::vector<UOp> body;
    for (const UOp& u : end.src(0).Toposort())
      if (!placed_.contains(u.get())) body.push_back(u);
    for (size_t i = 1; i < end.src().size(); ++i)
      for (const UOp& u : end.src(i).src(0).Toposort())
        if (!placed_.contains(u.get())) body.push_back(u);
    // Each loop opens after what its body needs from outside it (hoisted), then the body.
    Scope inner = open;
    for (size_t i = 1; i < end.src().size(); ++i) {
      for (const UOp& u : body) {
        if (placed_.contains(u.get()) || !Within(scopes_.Of(u), inner)) continue;
        if (u.is(Ops::END)) {  // a whole loop that belongs out here (an accumulator's reset)
          RETURN_IF_ERROR(EmitEnd(u, inner));
        } else if (Ready(u)) {
          Place(u);
        }
      }
      const UOp& r = end.src(i);
      if (r.is(Ops::RANGE) && placed_.contains(r.get()))
        return absl::InvalidArgumentError(
            absl::StrCat("linearize: RANGE idx=", r.arg().Get<RangeArg>().idx,
                         " is closed by two ENDs; expected one RANGE per loop"));
      if (!r.is(Ops::RANGE) || !Ready(r))
        return absl::InvalidArgumentError(absl::StrCat("linearize: END closes a ", OpName(r.op()),
                                                       " that is not a loop it can open here"));
      Place(r);
      inner = Union(inner, {r.get()});
    }
    RETURN_IF_ERROR(EmitBody(body, inner));
    Place(end);
    return absl::OkStatus();
  }

  absl::Status Misplaced(const UOp& u, const Scope& open) {
    if (u.is(Ops::RANGE))
      return absl::InvalidArgumentError(
          absl::StrCat("linearize: RANGE idx=", u.arg().Get<RangeArg>().idx,
                       " is not closed by an END; expected one END per loop"));
    for (const UOp::Node* r : scopes_.Of(u))
      if (!std::binary_search(open.begin(), open.end(), r))
        return absl::InvalidArgumentError(
            absl::StrCat("linearize: ", OpName(u.op()),
                         " uses the loop RANGE idx=", scopes_.Range(r).arg().Get<RangeArg>().idx,
                         " outside of it; expected an END that closes the RANGE around every use"));
    return absl::InvalidArgumentError(
        absl::StrCat("linearize: ", OpName(u.op()), " could not be placed"));
  }

  ScopeAnalysis scopes_;
  absl::flat_hash_set<const UOp::Node*> placed_;
  std::vector<UOp> program_;
};

}  // namespace

absl::StatusOr<std::vector<UOp>> Linearize(const UOp& sink) { return Linearizer(sink).Run(sink); }

}  // namespace uopc
