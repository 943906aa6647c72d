#include "inputs/input_formats.h"

#include <cctype>
#include <deque>
#include <mutex>

#include "base/quote.h"

namespace tokpack {

// Each format's file defines its open (and units).
StatusOr<std::unique_ptr<RecordSource>> OpenJsonlInput(const InputRecord& in,
                                                       const SourceContext& context);
StatusOr<std::unique_ptr<RecordSource>> OpenTextInput(const InputRecord& in,
                                                      const SourceContext& context);
StatusOr<std::unique_ptr<RecordSource>> OpenParquetRecords(const InputRecord& in,
                                                           const SourceContext& context);
StatusOr<std::vector<uint64_t>> ParquetRowGroupBytes(const std::string& path,
                                                     const std::string& text_key,
                                                     const StorageOptions& storage);

namespace {

std::mutex registry_mutex;

// The table, in the order "auto" tries it and help lists it. A deque: rows
// keep their address as rows are registered.
std::deque<InputFormat>& Rows() {
  static auto* rows = new std::deque<InputFormat>{
      {"jsonl", {".jsonl", ".ndjson", ".json"}, true, false, OpenJsonlInput, nullptr},
      {"text", {".txt", ".text"}, true, false, OpenTextInput, nullptr},
      {"parquet", {".parquet", ".pq"}, false, true, OpenParquetRecords, ParquetRowGroupBytes},
  };
  return *rows;
}

constexpr std::string_view kStdinFormat = "jsonl";
constexpr std::string_view kCompressionSuffixes[] = {".gz", ".zst", ".zstd"};

bool EndsWith(std::string_view s, std::string_view suffix, bool any_case) {
  if (s.size() < suffix.size()) return false;
  s = s.substr(s.size() - suffix.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const auto a = static_cast<unsigned char>(s[i]);
    const auto b = static_cast<unsigned char>(suffix[i]);
    if (a != b && (!any_case || std::tolower(a) != std::tolower(b))) return false;
  }
  return true;
}

// `name` without one compression suffix (ending it in any case if `any_case`).
std::string_view StripCompression(std::string_view name, bool any_case) {
  for (std::string_view suffix : kCompressionSuffixes) {
    if (EndsWith(name, suffix, any_case)) return name.substr(0, name.size() - suffix.size());
  }
  return name;
}

bool NamesFormat(std::string_view path, const InputFormat& f) {
  const std::string_view base = f.compressible ? StripCompression(path, false) : path;
  for (const std::string& suffix : f.suffixes) {
    if (EndsWith(base, suffix, f.any_case)) return true;
  }
  return false;
}

// "jsonl: .jsonl, .ndjson, .json; ...", for the error naming every rule.
std::string NameRules() {
  std::vector<std::string> rules;
  for (const InputFormat* f : InputFormats()) {
    rules.push_back(std::string(f->name) + ": " + JoinList(f->suffixes, ", "));
    if (f->compressible) rules.back() += " (optionally .gz/.zst/.zstd)";
  }
  return JoinList(rules, "; ");
}

}  // namespace

std::vector<const InputFormat*> InputFormats() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  std::vector<const InputFormat*> out;
  for (const InputFormat& f : Rows()) out.push_back(&f);
  return out;
}

void RegisterInputFormat(const InputFormat& format) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  Rows().push_back(format);
}

StatusOr<const InputFormat*> InputFormatFor(const std::string& path, const std::string& format) {
  const std::vector<const InputFormat*> formats = InputFormats();
  if (format != "auto") {
    for (const InputFormat* f : formats) {
      if (format == f->name) return f;
    }
    return InvalidArgumentError("unknown input format '" + format + "' (" +
                                JoinList(InputFormatChoices(), ", ") + ")");
  }
  for (const InputFormat* f : formats) {
    if (path == "-" ? f->name == kStdinFormat : NamesFormat(path, *f)) return f;
  }
  return InvalidArgumentError("cannot tell the format of '" + path + "' from its name (" +
                              NameRules() + "); pass --input-format");
}

std::vector<std::string> InputFormatChoices() {
  std::vector<std::string> choices = {"auto"};
  for (const InputFormat* f : InputFormats()) choices.emplace_back(f->name);
  return choices;
}

bool LooksLikeInputName(std::string_view name) {
  const std::string_view base = StripCompression(name, /*any_case=*/true);
  for (const InputFormat* f : InputFormats()) {
    for (const std::string& suffix : f->suffixes) {
      if (EndsWith(base, suffix, /*any_case=*/true)) return true;
    }
  }
  return false;
}

}  // namespace tokpack
