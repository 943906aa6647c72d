#include "tokenizer/json_error.h"

#include <cstring>

namespace tokpack {
namespace {

class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}

  // Offset of the first error, or s_.size().
  size_t Run() {
    SkipSpace();
    if (!Value(0)) return pos_;
    SkipSpace();
    return pos_;  // Trailing garbage is an error at its offset; none gives size().
  }

 private:
  static constexpr int kMaxDepth = 1024;

  void SkipSpace() {
    while (pos_ < s_.size() && std::strchr(" \t\r\n", s_[pos_]) != nullptr && s_[pos_] != 0) ++pos_;
  }
  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  bool String() {
    if (!Eat('"')) return false;
    while (pos_ < s_.size()) {
      auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        ++pos_;
        if (pos_ >= s_.size()) return false;
        char e = s_[pos_];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k) {
            if (pos_ + k >= s_.size() ||
                std::strchr("0123456789abcdefABCDEF", s_[pos_ + k]) == nullptr) {
              return false;
            }
          }
          pos_ += 4;
        } else if (std::strchr("\"\\/bfnrt", e) == nullptr || e == 0) {
          return false;
        }
      }
      ++pos_;
    }
    return false;
  }
  bool Digits() {
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    return pos_ > start;
  }
  bool Number() {
    Eat('-');
    if (!Eat('0') && !Digits()) return false;
    if (Eat('.') && !Digits()) return false;
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (!Eat('+')) Eat('-');
      if (!Digits()) return false;
    }
    return true;
  }
  bool Value(int depth) {
    if (pos_ >= s_.size() || depth > kMaxDepth) return false;
    char c = s_[pos_];
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++pos_;
      SkipSpace();
      if (Eat(close)) return true;
      while (true) {
        SkipSpace();
        if (close == '}') {
          if (!String()) return false;
          SkipSpace();
          if (!Eat(':')) return false;
          SkipSpace();
        }
        if (!Value(depth + 1)) return false;
        SkipSpace();
        if (Eat(close)) return true;
        if (!Eat(',')) return false;
      }
    }
    if (c == '"') return String();
    if (c == 't') return Literal("true");
    if (c == 'f') return Literal("false");
    if (c == 'n') return Literal("null");
    return Number();
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

size_t JsonErrorOffset(std::string_view json) { return Scanner(json).Run(); }

std::string DescribeOffset(std::string_view text, size_t offset) {
  if (offset > text.size()) offset = text.size();
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1) +
         " (byte " + std::to_string(offset) + ")";
}

}  // namespace tokpack
