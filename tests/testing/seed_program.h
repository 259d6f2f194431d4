// The seed's section 15.2 loop program, shared by the tests that lower, render, interpret
// and run it: out[i] = sum(x[i, :n]) for x of 4 x 8 (slot 0), n read from len[0] (slot 1),
// out of 4 (slot 2). With x = 0..31 it gives [3, 27, 51, 75] for n = 3 and
// [28, 92, 156, 220] for n = 8.
#pragma once

#include "core/uop.h"

namespace uopc::testing {

inline UOp SeedTripCountKernel() {
  UOp x = UOp::Buffer(DType::kF32, 0, 32), len = UOp::Buffer(DType::kI32, 1, 1);
  UOp out = UOp::Buffer(DType::kF32, 2, 4);
  UOp n = len.Index(0).Load();
  UOp i = UOp::Range(4, 0), j = UOp::Range(n, 1);
  UOp acc = UOp::Alloc(DType::kF32, 0, 1).After({i});
  UOp init = acc.Index(0).Store(UOp::Const(DType::kF32, 0.0));
  UOp accj = acc.After({init, j});
  UOp upd = accj.Index(0).Store(accj.Index(0).Load() + x.Index(i * 8 + j).Load());
  return UOp::Sink({out.Index(i).Store(acc.After({upd.End({j})}).Index(0).Load()).End({i})});
}

}  // namespace uopc::testing
