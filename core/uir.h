// UIR, the text form of a graph: one line per node, sources before users, the root last.
//
//   %0 = range 4 : idx=0 kind=loop
//   %1 = buffer 1 : dtype=i32 slot=1
//   %2 = index %1, 0
//
// A line is `%id = op operands : attributes`. Operands are earlier ids or inline
// constants: i32 integers (`8`, `-1`), f32 floats (`0.5`, `inf`, `nan`; always with a
// `.`, an exponent or a name) and bools (`true`); a constant of another dtype gets its own
// line (`%3 = const 2 : dtype=i64`). BUFFER and ALLOC take their size as the operand.
// Attributes are `key=value`: `dtype=` first where the dtype is declared (buffers, casts,
// constants) or differs from the one derived from the sources, then the argument's
// fields (slot, name/lo/hi, idx/kind, op/axes, axes, device). `#` starts a comment.
// Printing then parsing gives the same node; parsing then printing gives the same text
// for text that ToUir produced.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/uop.h"

namespace uopc {

/// The UIR text of the graph rooted at `root`, ids numbered from 0, each line ending in
/// a newline.
std::string ToUir(const UOp& root);
/// Parses UIR text; the root is the node of the last line. A malformed line is an
/// InvalidArgument error naming its line and column.
absl::StatusOr<UOp> ParseUir(absl::string_view text);

}  // namespace uopc
