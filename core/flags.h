// Command-line flags for uopc's programs: --name=value or --name value, booleans as
// --name or --name=VALUE (true/false, 1/0, yes/no), --help listing every flag with its
// default and range. Numbers are read by core/parse_number.h within each flag's range
// (never nan or inf). Unknown flags and bad values are errors that name the flag.
#pragma once

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#include "core/parse_number.h"

namespace uopc {

class Flags {
 public:
  explicit Flags(std::string usage) : usage_(std::move(usage)) {}

  void Add(const std::string& name, std::string* value, const std::string& help) {
    flags_.push_back({name, help, *value, "", value});
  }
  /// An integer flag taking values from lo to hi.
  void Add(const std::string& name, int64_t* value, const std::string& help, int64_t lo,
           int64_t hi) {
    flags_.push_back({name, help, std::to_string(*value), absl::StrCat(lo, " to ", hi), nullptr,
                      value, nullptr, nullptr, lo, hi});
  }
  /// A real flag taking finite values from lo to hi.
  void Add(const std::string& name, double* value, const std::string& help, double lo, double hi) {
    flags_.push_back({name, help, absl::StrCat(*value), absl::StrCat(lo, " to ", hi), nullptr,
                      nullptr, value, nullptr, 0, 0, lo, hi});
  }
  void Add(const std::string& name, bool* value, const std::string& help) {
    flags_.push_back({name, help, *value ? "true" : "false", "", nullptr, nullptr, nullptr, value});
  }

  /// Whether --`name` was on the command line (else it holds its default).
  bool Given(const std::string& name) const {
    for (const Flag& f : flags_)
      if (f.name == name) return f.given;
    return false;
  }
  /// Parses argv; returns -1 to go on, else the exit status (0 after --help, 2 on error).
  int Parse(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        std::cout << usage_ << "\n\nflags:\n";
        for (const Flag& f : flags_)
          std::cout << "  --" << f.name << " (default " << f.def
                    << (f.range.empty() ? "" : ", " + f.range) << ")\n      " << f.help << "\n";
        return 0;
      }
      if (a.rfind("--", 0) != 0) return Fail("unexpected argument '" + a + "'");
      std::string name = a.substr(2), value;
      bool has_value = false;
      if (size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      Flag* f = nullptr;
      for (Flag& x : flags_)
        if (x.name == name) f = &x;
      if (!f) return Fail("unknown flag --" + name);
      f->given = true;
      if (f->b && !has_value) {
        *f->b = true;
        continue;
      }
      if (!has_value) {
        if (i + 1 >= argc) return Fail("--" + name + " needs a value");
        value = argv[++i];
      }
      absl::Status s;
      if (f->s) {
        *f->s = value;
      } else if (f->b) {
        absl::StatusOr<bool> v = ParseBool("--" + name, value);
        if (v.ok()) *f->b = *v;
        s = v.status();
      } else if (f->i) {
        absl::StatusOr<int64_t> v = ParseInt("--" + name, value, f->ilo, f->ihi);
        if (v.ok()) *f->i = *v;
        s = v.status();
      } else {
        absl::StatusOr<double> v = ParseReal("--" + name, value, f->dlo, f->dhi);
        if (v.ok()) *f->d = *v;
        s = v.status();
      }
      if (!s.ok()) return Fail(std::string(s.message()));
    }
    return -1;
  }

 private:
  struct Flag {
    std::string name, help, def, range;
    std::string* s = nullptr;
    int64_t* i = nullptr;
    double* d = nullptr;
    bool* b = nullptr;
    int64_t ilo = 0, ihi = 0;
    double dlo = 0, dhi = 0;
    bool given = false;  // on the command line
  };
  int Fail(const std::string& what) {
    std::cerr << what << " (see --help)\n";
    return 2;
  }
  std::string usage_;
  std::vector<Flag> flags_;
};

}  // namespace uopc
