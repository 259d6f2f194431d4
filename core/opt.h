// Opt: one named, parameterized optimization action on one loop of a kernel, as the
// default heuristics pick them and the kernel search (runtime/kernel_search.h) tries them.
// A kernel's schedule is a list of them, applied by rangeify as it builds the kernel's
// loops; each keeps every sum's order, so any list gives the bits of any other.
//
//   upcast A N   a register tile: N consecutive iterations of output loop A share each step
//                of the reductions, their sums held in registers. On the last two output
//                loops (A counts the loops, dims of size 1 have none): the tile's column
//                blocks outermost, then its rows, and in each step a row's columns innermost.
//   group A N    the same on the stack: a row of N sums (the last loop, N up to 512) for a
//                group of N rows (the loop before it); rows of groups outermost, then column
//                blocks, and in each step a column's rows innermost.
//   unroll A N   reduction loop A (of every reduction the kernel computes) in steps of N,
//                the N inner iterations a loop of constant length that the compiler unrolls.
//
// The text form, one action per comma: "upcast 1 48, upcast 0 8".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/uop.h"

namespace uopc {

enum class OptOp : uint8_t { kUpcast = 0, kGroup = 1, kUnroll = 2 };

struct Opt {
  OptOp op = OptOp::kUpcast;
  int axis = 0;
  int64_t amount = 0;
  bool operator==(const Opt&) const = default;
};

/// "upcast 1 48, upcast 0 8"; "" for none.
std::string OptsToString(const std::vector<Opt>& opts);
/// The inverse of OptsToString; InvalidArgument names the part it could not read.
absl::StatusOr<std::vector<Opt>> ParseOpts(absl::string_view text);

/// `opts` with `action` in place of any action of the same op on the same loop; an upcast
/// drops every group and a group every upcast (a kernel keeps its sums in one of the two).
std::vector<Opt> WithOpt(std::vector<Opt> opts, const Opt& action);

/// What a kernel search may choose among for one kernel: the heuristics' actions, every
/// single action that applies to the kernel, and the kernel built with any list of them
/// (InvalidArgument for a list that does not apply; valid only during the call that was
/// given the space).
struct OptSpace {
  std::vector<Opt> defaults;
  std::vector<Opt> actions;
  std::function<absl::StatusOr<UOp>(const std::vector<Opt>&)> build;
  std::string kernel;  // what the kernel computes, for messages: "(48, 96), a matmul"
};

/// A random list of actions for testing that every list gives the same bits: the defaults
/// or none, changed by one to three of `space`'s actions, the first of a few tries that
/// builds (else the defaults). The same `seed`, the same list.
std::vector<Opt> RandomOpts(const OptSpace& space, uint64_t seed);

}  // namespace uopc
