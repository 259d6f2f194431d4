#include "core/env.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace uopc {
namespace {

// One line on stderr for a bad value of `name`, once per process and variable.
void Refuse(const char* name, const std::string& value, const std::string& accepts) {
  static std::mutex mu;
  static auto* said = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  if (!said->insert(name).second) return;
  std::cerr << "uopc: " << name << "=" << value << " is not " << accepts << "; ignored\n";
}

}  // namespace

int64_t EnvInt(const char* name, int64_t lo, int64_t hi, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v) return fallback;
  int64_t n = 0;
  if (absl::SimpleAtoi(v, &n) && n >= lo && n <= hi) return n;
  Refuse(name, v, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return fallback;
}

bool EnvBool(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v) return fallback;
  const std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(v));
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  Refuse(name, v, "0 or 1");
  return fallback;
}

std::vector<std::string> EnvNames(const char* name, const std::vector<std::string>& known) {
  std::vector<std::string> out;
  const char* v = std::getenv(name);
  if (!v) return out;
  std::vector<std::string> bad;
  for (absl::string_view n : absl::StrSplit(v, ',', absl::SkipWhitespace())) {
    const std::string s(absl::StripAsciiWhitespace(n));
    if (known.empty() || std::find(known.begin(), known.end(), s) != known.end())
      out.push_back(s);
    else
      bad.push_back(s);
  }
  if (!bad.empty())
    Refuse(name, v, "a comma-separated list of " + absl::StrJoin(known, ", ") + " (" +
                        absl::StrJoin(bad, ", ") + " unknown)");
  return out;
}

}  // namespace uopc
