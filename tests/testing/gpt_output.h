// What the GPT programs print, read back by the tests that run them (gpt_train's progress
// lines and its last line).
#pragma once

#include <regex>
#include <string>
#include <vector>

namespace uopc::testing {

/// The losses of every progress line ("step 10/40  loss 2.7251 ..."), in order.
inline std::vector<double> Losses(const std::string& out) {
  std::vector<double> v;
  std::regex re("loss ([0-9.]+)");
  for (std::sregex_iterator it(out.begin(), out.end(), re), end; it != end; ++it)
    v.push_back(std::stod((*it)[1]));
  return v;
}

/// "(N plans compiled)" of gpt_train's last line; -1 when there is none.
inline int PlansCompiled(const std::string& out) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("\\(([0-9]+) plans compiled\\)")) ? std::stoi(m[1])
                                                                                 : -1;
}

}  // namespace uopc::testing
