#include "base/option_table.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "tokpack/json_writer.h"

namespace tokpack {
namespace {

const char* TypeName(OptionType t) {
  switch (t) {
    case OptionType::kBool:
      return "a bool";
    case OptionType::kInt:
      return "an integer";
    case OptionType::kUInt:
      return "a non-negative integer";
    case OptionType::kFloat:
      return "a number";
    case OptionType::kString:
      return "a string";
  }
  return "?";
}

Status WrongType(const std::string& name, OptionType type) {
  return InvalidArgumentError(name + " must be " + TypeName(type));
}

// Levenshtein distance, for suggestions; option names are short.
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string FormatOptionValue(const OptionValue& value) {
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const int64_t* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const uint64_t* u = std::get_if<uint64_t>(&value)) return std::to_string(*u);
  if (const double* d = std::get_if<double>(&value)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.17g", *d);
    return buf;
  }
  return std::get<std::string>(value);
}

std::string OptionFlag(const OptionInfo& info) {
  if (!info.flag.empty()) return info.flag;
  std::string flag = "--" + info.name;
  std::replace(flag.begin() + 2, flag.end(), '_', '-');
  return flag;
}

namespace {

template <typename Int>
std::string DescribeRange(Int min, Int max) {
  if (max == std::numeric_limits<Int>::max()) return "at least " + std::to_string(min);
  return "between " + std::to_string(min) + " and " + std::to_string(max);
}

}  // namespace

std::string DescribeIntRange(int64_t min, int64_t max) { return DescribeRange(min, max); }
std::string DescribeIntRange(uint64_t min, uint64_t max) { return DescribeRange(min, max); }

StatusOr<OptionValue> CoerceOptionValue(const std::string& name, OptionType type,
                                        const OptionValue& v) {
  const int64_t* i = std::get_if<int64_t>(&v);
  const uint64_t* u = std::get_if<uint64_t>(&v);
  switch (type) {
    case OptionType::kBool:
      if (std::holds_alternative<bool>(v)) return v;
      break;
    case OptionType::kInt:
      if (i) return v;
      if (u && *u <= static_cast<uint64_t>(INT64_MAX)) return OptionValue(static_cast<int64_t>(*u));
      if (u) return InvalidArgumentError(name + " is too large: " + std::to_string(*u));
      break;
    case OptionType::kUInt:
      if (u) return v;
      if (i && *i >= 0) return OptionValue(static_cast<uint64_t>(*i));
      if (i) return InvalidArgumentError(name + " must not be negative");
      break;
    case OptionType::kFloat:
      if (std::holds_alternative<double>(v)) return v;
      if (i) return OptionValue(static_cast<double>(*i));
      if (u) return OptionValue(static_cast<double>(*u));
      break;
    case OptionType::kString:
      if (std::holds_alternative<std::string>(v)) return v;
      break;
  }
  return WrongType(name, type);
}

StatusOr<OptionValue> ParseOptionText(const std::string& name, OptionType type,
                                      const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  switch (type) {
    case OptionType::kBool:
      if (text == "true" || text == "1") return OptionValue(true);
      if (text == "false" || text == "0") return OptionValue(false);
      break;
    case OptionType::kInt: {
      // strtoll would skip leading blanks; a flag's value has none.
      const bool starts_ok =
          !text.empty() && (text[0] == '-' || std::isdigit(static_cast<unsigned char>(text[0])));
      const long long x = std::strtoll(s, &end, 10);
      if (starts_ok && *end == '\0' && errno == 0) return OptionValue(int64_t{x});
      break;
    }
    case OptionType::kUInt: {
      // strtoull would also take " -1" and wrap it.
      const bool starts_ok = !text.empty() && std::isdigit(static_cast<unsigned char>(text[0]));
      const unsigned long long x = std::strtoull(s, &end, 10);
      if (starts_ok && *end == '\0' && errno == 0) return OptionValue(uint64_t{x});
      break;
    }
    case OptionType::kFloat: {
      const double x = std::strtod(s, &end);
      if (!text.empty() && *end == '\0' && errno == 0 && std::isfinite(x)) return OptionValue(x);
      break;
    }
    case OptionType::kString:
      return OptionValue(text);
  }
  return InvalidArgumentError(name + " must be " + TypeName(type) + ", not '" + text + "'");
}

std::string SuggestOption(const std::string& name, const std::vector<OptionInfo>& infos) {
  std::string best;
  size_t best_distance = 3;  // Farther than two edits is no suggestion.
  for (const OptionInfo& info : infos) {
    const size_t d = Distance(name, info.name);
    if (d < best_distance) {
      best_distance = d;
      best = info.name;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string OptionsToJson(const std::vector<std::pair<std::string, OptionValue>>& values) {
  JsonWriter w(JsonWriter::Layout::kOneLine);
  w.BeginObject();
  for (const auto& [name, v] : values) {
    if (const bool* b = std::get_if<bool>(&v)) {
      w.Bool(name, *b);
    } else if (const int64_t* i = std::get_if<int64_t>(&v)) {
      w.Int(name, *i);
    } else if (const uint64_t* u = std::get_if<uint64_t>(&v)) {
      w.UInt(name, *u);
    } else if (const double* d = std::get_if<double>(&v)) {
      w.Double(name, *d);
    } else {
      w.String(name, std::get<std::string>(v));
    }
  }
  w.EndObject();
  return w.str();
}

Status NotAChoice(const std::string& name, const std::vector<std::string>& choices,
                  const std::string& value) {
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "'" : ", '") + c + "'";
  return InvalidArgumentError(name + " must be one of " + list + ", not '" + value + "'");
}

}  // namespace tokpack
