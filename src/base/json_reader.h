// JsonReader: typed reads of the fields of one JSON object (a simdjson DOM
// object), with errors that name the source (a file) and the field's full
// path, for every JSON file tokpack reads: manifest.json, tokenizer.json and
// phases files. A reader is a view: the parsed document and the source text
// must outlive it. Const methods only; safe to use from several threads.
#ifndef TOKPACK_SRC_BASE_JSON_READER_H_
#define TOKPACK_SRC_BASE_JSON_READER_H_

#include <simdjson.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "tokpack/status.h"

namespace tokpack {

class JsonReader {
 public:
  // How an error names a field. Each file kind keeps the wording its users
  // (and their scripts) already see.
  enum class Style {
    kQuoted,  // "m.json: field 'shards[0].path' is missing or not a string"
    kBare,    // "t.json: model.vocab: is missing or not an object"
  };

  JsonReader() = default;
  JsonReader(simdjson::dom::object obj, std::string path, std::string_view source,
             Style style = Style::kQuoted)
      : obj_(obj), path_(std::move(path)), source_(source), style_(style) {}

  // `e` read as an object at `path`; InvalidArgument ("... is not an
  // object") otherwise.
  [[nodiscard]] static Status Of(simdjson::dom::element e, std::string path,
                                 std::string_view source, Style style, JsonReader* out);

  // The full path of a field of this object ("tokenizer.file").
  std::string Path(std::string_view key) const;
  // InvalidArgument about field `key` (which may carry an index: "xxh3_64[2]").
  [[nodiscard]] Status Error(std::string_view key, const std::string& what) const;
  // InvalidArgument about this object itself.
  [[nodiscard]] Status SelfError(const std::string& what) const;
  // Error(key, "is missing or not " + want).
  [[nodiscard]] Status Missing(std::string_view key, std::string_view want) const;

  // Present, null included.
  bool Has(std::string_view key) const { return obj_[key].error() == simdjson::SUCCESS; }
  // Present and not null (tokenizer.json treats both as "not set").
  bool IsSet(std::string_view key) const;
  // The value of a field that Has(); unchecked.
  simdjson::dom::element Value(std::string_view key) const { return obj_[key].value_unsafe(); }

  // Required fields: Missing() unless present with the type.
  [[nodiscard]] Status Get(std::string_view key, uint64_t* out) const;
  [[nodiscard]] Status Get(std::string_view key, int64_t* out) const;
  [[nodiscard]] Status Get(std::string_view key, int* out) const;  // In the int32 range.
  [[nodiscard]] Status Get(std::string_view key, bool* out) const;
  [[nodiscard]] Status Get(std::string_view key, double* out) const;  // Any number.
  [[nodiscard]] Status Get(std::string_view key, std::string* out) const;
  // The string in the parsed document (valid while it is).
  [[nodiscard]] Status Get(std::string_view key, std::string_view* out) const;
  // An optional boolean: `fallback` when not set, else it must be a boolean.
  [[nodiscard]] Status GetOr(std::string_view key, bool fallback, bool* out) const;
  [[nodiscard]] Status Object(std::string_view key, JsonReader* out) const;
  [[nodiscard]] Status Array(std::string_view key, simdjson::dom::array* out) const;

  // Only `allowed` keys, each at most once: a misspelled key is an error
  // ("field 'phases[1].weight' <unknown>"), not ignored, and so is a
  // repeated one, which simdjson would otherwise read as its first value.
  [[nodiscard]] Status OnlyKeys(std::initializer_list<std::string_view> allowed,
                                const std::string& unknown) const;

  simdjson::dom::object obj() const { return obj_; }
  const std::string& path() const { return path_; }
  std::string_view source() const { return source_; }
  Style style() const { return style_; }

 private:
  simdjson::dom::object obj_;
  std::string path_;
  std::string_view source_;
  Style style_ = Style::kQuoted;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_BASE_JSON_READER_H_
