// Command-line flags for the GPT programs: --name=value or --name value, booleans as
// --name, --help listing every flag with its default. Unknown flags and bad values are
// errors that name the flag.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace uopc {

class Flags {
 public:
  explicit Flags(std::string usage) : usage_(std::move(usage)) {}

  void Add(const std::string& name, std::string* value, const std::string& help) {
    flags_.push_back({name, value, nullptr, nullptr, nullptr, help, *value});
  }
  void Add(const std::string& name, int64_t* value, const std::string& help) {
    flags_.push_back({name, nullptr, value, nullptr, nullptr, help, std::to_string(*value)});
  }
  void Add(const std::string& name, double* value, const std::string& help) {
    std::string d = std::to_string(*value);
    d.erase(d.find_last_not_of('0') + 1);
    if (d.back() == '.') d += '0';
    flags_.push_back({name, nullptr, nullptr, value, nullptr, help, d});
  }
  void Add(const std::string& name, bool* value, const std::string& help) {
    flags_.push_back({name, nullptr, nullptr, nullptr, value, help, *value ? "true" : "false"});
  }

  /// Parses argv; returns -1 to go on, else the exit status (0 after --help, 2 on error).
  int Parse(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        std::cout << usage_ << "\n\nflags:\n";
        for (const Flag& f : flags_)
          std::cout << "  --" << f.name << " (default " << f.def << ")\n      " << f.help << "\n";
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
      if (f->b) {
        *f->b = !has_value || value == "true" || value == "1";
        continue;
      }
      if (!has_value) {
        if (i + 1 >= argc) return Fail("--" + name + " needs a value");
        value = argv[++i];
      }
      char* end = nullptr;
      if (f->s)
        *f->s = value;
      else if (f->i) {
        *f->i = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end)
          return Fail("--" + name + " wants an integer, got '" + value + "'");
      } else {
        *f->d = std::strtod(value.c_str(), &end);
        if (value.empty() || *end)
          return Fail("--" + name + " wants a number, got '" + value + "'");
      }
    }
    return -1;
  }

 private:
  struct Flag {
    std::string name;
    std::string* s;
    int64_t* i;
    double* d;
    bool* b;
    std::string help, def;
  };
  int Fail(const std::string& what) {
    std::cerr << what << " (see --help)\n";
    return 2;
  }
  std::string usage_;
  std::vector<Flag> flags_;
};

}  // namespace uopc
