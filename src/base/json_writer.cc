#include "tokpack/json_writer.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/utf8.h"

namespace tokpack {

std::string ShortestDouble(double v) {
  if (v == 0) return "0";  // -0 too: "-0" would read back as the integer 0.
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";  // Messages only.
  char buf[40];
  int digits = 1;  // The fewest significant digits that read back as v.
  for (; digits < 17; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*e", digits - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::snprintf(buf, sizeof(buf), "%.*e", digits - 1, v);
  const int exponent = std::atoi(std::strchr(buf, 'e') + 1);
  // Plain decimals where they are short, as Python's repr: 90, 0.9, 1e-05.
  if (exponent >= -4 && exponent < 16) {
    std::snprintf(buf, sizeof(buf), "%.*f", std::max(0, digits - 1 - exponent), v);
  }
  return buf;
}

void JsonWriter::Newline() {
  if (layout_ == Layout::kOneLine) return;
  out_ += '\n';
  out_.append(2 * first_.size(), ' ');
}

void JsonWriter::Separator() {
  if (first_.empty()) return;
  if (!first_.back()) out_ += ',';
  first_.back() = false;
  Newline();
}

void JsonWriter::Key(std::string_view key) {
  Separator();
  Escaped(key);
  out_ += ": ";
}

void JsonWriter::Escaped(std::string_view raw) {
  // JSON text must be UTF-8; file names need not be, so repair them.
  const std::string repaired = IsValidUtf8(raw) ? std::string() : RepairUtf8(raw);
  const std::string_view s = repaired.empty() ? raw : std::string_view(repaired);
  out_ += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\r':
        out_ += "\\r";
        break;
      case '\t':
        out_ += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out_ += buf;
        } else {
          out_ += static_cast<char>(c);
        }
    }
  }
  out_ += '"';
}

void JsonWriter::BeginObject() {
  Separator();
  out_ += '{';
  first_.push_back(true);
}

void JsonWriter::BeginObject(std::string_view key) {
  Key(key);
  out_ += '{';
  first_.push_back(true);
}

void JsonWriter::EndObject() {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) Newline();
  out_ += '}';
  if (first_.empty()) out_ += '\n';
}

void JsonWriter::BeginArray() {
  Separator();
  out_ += '[';
  first_.push_back(true);
}

void JsonWriter::BeginArray(std::string_view key) {
  Key(key);
  out_ += '[';
  first_.push_back(true);
}

void JsonWriter::EndArray() {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) Newline();
  out_ += ']';
}

void JsonWriter::String(std::string_view v) {
  Separator();
  Escaped(v);
}

void JsonWriter::String(std::string_view key, std::string_view v) {
  Key(key);
  Escaped(v);
}

void JsonWriter::Int(std::string_view key, int64_t v) {
  Key(key);
  out_ += std::to_string(v);
}

void JsonWriter::UInt(std::string_view key, uint64_t v) {
  Key(key);
  out_ += std::to_string(v);
}

void JsonWriter::UInt(uint64_t v) {
  Separator();
  out_ += std::to_string(v);
}

void JsonWriter::Double(std::string_view key, double v) {
  Key(key);
  if (!std::isfinite(v)) {
    out_ += "null";
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  out_ += buf;
}

void JsonWriter::Bool(std::string_view key, bool v) {
  Key(key);
  out_ += v ? "true" : "false";
}

void JsonWriter::InlineStringArray(std::string_view key, const std::vector<std::string>& v) {
  Key(key);
  out_ += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out_ += ", ";
    Escaped(v[i]);
  }
  out_ += ']';
}

void JsonWriter::InlineDoubleArray(std::string_view key, const std::vector<double>& v) {
  Key(key);
  out_ += '[';
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out_ += ", ";
    if (std::isfinite(v[i])) {
      std::snprintf(buf, sizeof(buf), "%.9g", v[i]);
      out_ += buf;
    } else {
      out_ += "null";
    }
  }
  out_ += ']';
}

}  // namespace tokpack
