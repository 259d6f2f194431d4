#include "core/float_format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/alu.h"

namespace uopc {

std::string FormatFloat(double v, DType dtype) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  Arg want = CastValue(Arg(v), DType::kF64, dtype);
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, v);
    if (CastValue(Arg(std::strtod(buf, nullptr)), DType::kF64, dtype) == want) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace uopc
