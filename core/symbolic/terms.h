// A sum as a list of terms: x*3 + y + x*2 + 5 is {(x, 3), (y, 1), (x, 2)} + 5. The add
// rules use it to collect terms, the div/mod rules to split off multiples of a divisor.
// Coefficients are integers of the sum's dtype; arithmetic on them wraps as the dtype does.
#pragma once

#include <cstdint>
#include <vector>

#include "core/uop.h"

namespace uopc {

struct Term {
  UOp base;
  int64_t coeff;
};

struct Sum {
  std::vector<Term> terms;
  int64_t constant = 0;
  int num_constants = 0;  // how many CONSTs were added into `constant`
};

/// Flattens the ADD tree under `u` (an integer node) into terms: MUL by a CONST is a
/// term with that coefficient, a CONST adds to the constant, anything else is a term of 1.
Sum FlattenSum(const UOp& u);
/// Builds the terms back into a left-nested sum of `dtype`, in order, constant last;
/// terms with coefficient 0 are left out. An empty sum is the CONST 0.
UOp BuildSum(const std::vector<Term>& terms, int64_t constant, DType dtype);
/// Wraps an integer to `dtype` (two's complement), as the IR's arithmetic does.
int64_t WrapTo(DType dtype, __int128 v);

}  // namespace uopc
