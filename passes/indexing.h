// Indexing: what an element of a view reads, the movement ops defined once. A tensor-level
// value of shape S is read at an index (an i32 expression per dim of S); a movement op maps
// the index of its output to the index of its source, and a PAD also to whether the element
// is there at all. Rangeify builds every kernel's loads with it; a buffer of a symbolic
// shape is laid out row-major for the shape at its upper bounds (MaxShape), as the frontend
// lays realized tensors out.
#pragma once

#include <vector>

#include "core/shape.h"
#include "core/uop.h"
#include "core/verify.h"

namespace uopc {

using Index = std::vector<UOp>;  // one i32 index expression per dim

/// The flat offset of `idx` in a row-major `shape`.
UOp Ravel(const Index& idx, const Shape& shape);
/// The index of flat offset `flat` in a row-major `shape`.
Index Unravel(const UOp& flat, const Shape& shape);
/// Each dim at the largest value its VARs allow.
Shape MaxShape(const Shape& s);
/// The BUFFER that a view (movement ops over a BUFFER, and over writes into it) lies in; the
/// first node that is no such view where there is none.
UOp ViewedBuffer(const UOp& u);

/// Where an element of a movement op's output comes from.
struct SourceIndex {
  Index index;  // the element of the source (clamped into it where `valid` is false)
  UOp valid;    // null, or a bool: the element is the source's there, else 0 (a PAD)
};
/// The element of `view`'s source (src 0) that `view` (a movement op: RESHAPE, EXPAND,
/// PERMUTE, SHRINK, FLIP, PAD) holds at `idx`; `shapes` has the shapes of view and source.
SourceIndex IndexThrough(const UOp& view, const Index& idx, const ShapeMap& shapes);

}  // namespace uopc
