// A small JSON reader and writer (the checkpoint format's header, the trace): objects, arrays,
// strings (with escapes), numbers, true/false/null. Reading is strict (one value, nothing
// after it, a nesting limit) and never crashes on bad input: an error names the offset.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace uopc {

struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string str;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;  // in file order

  /// The member `key` of an object, or null.
  const Json* Find(absl::string_view key) const;
  /// Whether a number is an integer in [lo, hi].
  bool IsInt(int64_t lo, int64_t hi) const;
};

absl::StatusOr<Json> ParseJson(absl::string_view text);
/// `s` as a JSON string literal, quoted and escaped.
std::string JsonQuote(absl::string_view s);

}  // namespace uopc
