#include "core/json.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace uopc {
namespace {

class Parser {
 public:
  explicit Parser(absl::string_view t) : t_(t) {}

  absl::StatusOr<Json> Document() {
    auto v = Value(0);
    if (!v.ok()) return v;
    Space();
    if (p_ != t_.size()) return Error("text after the JSON value");
    return v;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("JSON at byte ", p_, ": ", what));
  }
  void Space() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r'))
      ++p_;
  }
  bool Eat(char c) {
    Space();
    if (p_ < t_.size() && t_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }

  absl::StatusOr<std::string> String() {
    if (!Eat('"')) return Error("expected a string");
    std::string out;
    while (p_ < t_.size() && t_[p_] != '"') {
      char c = t_[p_++];
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ >= t_.size()) break;
      char e = t_[p_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (p_ + 4 > t_.size()) return Error("short \\u escape");
          unsigned cp = 0;
          for (int k = 0; k < 4; ++k) {
            char h = t_[p_++];
            cp <<= 4;
            if (h >= '0' && h <= '9')
              cp |= h - '0';
            else if (h >= 'a' && h <= 'f')
              cp |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F')
              cp |= h - 'A' + 10;
            else
              return Error("bad \\u escape");
          }
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            out += static_cast<char>(0xc0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3f));
          } else {
            out += static_cast<char>(0xe0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
          }
          break;
        }
        default: return Error("bad escape");
      }
    }
    if (p_ >= t_.size()) return Error("unterminated string");
    ++p_;
    return out;
  }

  absl::StatusOr<Json> Value(int depth) {
    if (depth > 64) return Error("nested too deeply");
    Space();
    if (p_ >= t_.size()) return Error("unexpected end");
    Json j;
    char c = t_[p_];
    if (c == '{') {
      ++p_;
      j.kind = Json::Kind::kObject;
      if (Eat('}')) return j;
      do {
        auto k = String();
        if (!k.ok()) return k.status();
        if (!Eat(':')) return Error("expected ':'");
        auto v = Value(depth + 1);
        if (!v.ok()) return v;
        for (const auto& [name, x] : j.object)
          if (name == *k) return Error(absl::StrCat("key \"", *k, "\" twice"));
        j.object.emplace_back(*std::move(k), *std::move(v));
      } while (Eat(','));
      if (!Eat('}')) return Error("expected ',' or '}'");
      return j;
    }
    if (c == '[') {
      ++p_;
      j.kind = Json::Kind::kArray;
      if (Eat(']')) return j;
      do {
        auto v = Value(depth + 1);
        if (!v.ok()) return v;
        j.array.push_back(*std::move(v));
      } while (Eat(','));
      if (!Eat(']')) return Error("expected ',' or ']'");
      return j;
    }
    if (c == '"') {
      auto s = String();
      if (!s.ok()) return s.status();
      j.kind = Json::Kind::kString;
      j.str = *std::move(s);
      return j;
    }
    for (auto [word, kind, b] : {std::tuple{"true", Json::Kind::kBool, true},
                                 std::tuple{"false", Json::Kind::kBool, false},
                                 std::tuple{"null", Json::Kind::kNull, false}}) {
      absl::string_view w(word);
      if (t_.substr(p_, w.size()) == w) {
        p_ += w.size();
        j.kind = kind;
        j.boolean = b;
        return j;
      }
    }
    size_t start = p_;
    while (p_ < t_.size() && (std::isdigit(static_cast<unsigned char>(t_[p_])) || t_[p_] == '-' ||
                              t_[p_] == '+' || t_[p_] == '.' || t_[p_] == 'e' || t_[p_] == 'E'))
      ++p_;
    if (start == p_) return Error("unexpected character");
    std::string num(t_.substr(start, p_ - start));
    char* end = nullptr;
    j.number = std::strtod(num.c_str(), &end);
    if (end != num.c_str() + num.size()) return Error("bad number");
    j.kind = Json::Kind::kNumber;
    return j;
  }

  absl::string_view t_;
  size_t p_ = 0;
};

}  // namespace

const Json* Json::Find(absl::string_view key) const {
  for (const auto& [k, v] : object)
    if (k == key) return &v;
  return nullptr;
}

bool Json::IsInt(int64_t lo, int64_t hi) const {
  return kind == Kind::kNumber && std::floor(number) == number &&
         number >= static_cast<double>(lo) && number <= static_cast<double>(hi);
}

absl::StatusOr<Json> ParseJson(absl::string_view text) { return Parser(text).Document(); }

std::string JsonQuote(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace uopc
