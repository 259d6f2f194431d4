#include "core/parse_number.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace uopc {

absl::StatusOr<int64_t> ParseInt(absl::string_view what, absl::string_view text, int64_t lo,
                                 int64_t hi) {
  int64_t v = 0;
  if (absl::SimpleAtoi(text, &v) && v >= lo && v <= hi) return v;
  return absl::InvalidArgumentError(
      absl::StrCat(what, "=", text, ": expected an integer from ", lo, " to ", hi));
}

absl::StatusOr<double> ParseReal(absl::string_view what, absl::string_view text, double lo,
                                 double hi) {
  double v = 0;
  if (absl::SimpleAtod(text, &v) && std::isfinite(v) && v >= lo && v <= hi) return v;
  return absl::InvalidArgumentError(
      absl::StrCat(what, "=", text, ": expected a number from ", lo, " to ", hi));
}

absl::StatusOr<bool> ParseBool(absl::string_view what, absl::string_view text) {
  std::string t = absl::AsciiStrToLower(text);
  if (t == "true" || t == "1" || t == "yes") return true;
  if (t == "false" || t == "0" || t == "no") return false;
  return absl::InvalidArgumentError(
      absl::StrCat(what, "=", text, ": expected true or false (or 1/0, yes/no)"));
}

}  // namespace uopc
