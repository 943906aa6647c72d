// MakeArrowStreamTextSource (tokpack/builder.h): the Arrow C stream interface
// read with its header alone.
#include "frontend/arrow_stream_source.h"

#include <arrow/c/abi.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

namespace tokpack {
namespace {

// How the texts' column lies in memory, by its format string.
enum class Layout {
  kOffsets32,  // "u" utf8, "z" binary: validity, int32 offsets, data.
  kOffsets64,  // "U" large_utf8, "Z" large_binary: the same with int64 offsets.
  kView,       // "vu" string_view, "vz" binary_view: validity, 16-byte views,
               // the variadic data buffers, then their int64 sizes.
  kNull,       // "n": every value is null.
  kOther,      // Not a string type: every row is a bad record.
};

// Offsets and lengths from the producer beyond this are nonsense; refusing
// them keeps sums of a few of them far from overflowing int64.
constexpr int64_t kMaxExtent = int64_t{1} << 56;

// Entries per batch at most (as the file reader's records per batch), so a
// batch of many empty strings stays small.
constexpr size_t kMaxEntries = 4096;

// A view's length up to which its bytes are inline in the view itself.
constexpr int32_t kInlineViewBytes = 12;

// pyarrow's name of the type of `format`, so errors read like the type the
// user sees in Python.
std::string FormatName(std::string_view f) {
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"n", "null"},
      {"b", "bool"},
      {"c", "int8"},
      {"C", "uint8"},
      {"s", "int16"},
      {"S", "uint16"},
      {"i", "int32"},
      {"I", "uint32"},
      {"l", "int64"},
      {"L", "uint64"},
      {"e", "halffloat"},
      {"f", "float"},
      {"g", "double"},
      {"u", "string"},
      {"U", "large_string"},
      {"vu", "string_view"},
      {"z", "binary"},
      {"Z", "large_binary"},
      {"vz", "binary_view"},
      {"tdD", "date32[day]"},
      {"tdm", "date64[ms]"},
      {"+l", "list"},
      {"+L", "large_list"},
      {"+vl", "list_view"},
      {"+vL", "large_list_view"},
      {"+s", "struct"},
      {"+m", "map"},
      {"+r", "run_end_encoded"},
  };
  for (const auto& [format, name] : kNames) {
    if (f == format) return std::string(name);
  }
  static constexpr std::pair<std::string_view, std::string_view> kPrefixes[] = {
      {"w:", "fixed_size_binary"}, {"d:", "decimal"},  {"ts", "timestamp"},        {"tt", "time"},
      {"tD", "duration"},          {"ti", "interval"}, {"+w:", "fixed_size_list"}, {"+u", "union"},
  };
  for (const auto& [prefix, name] : kPrefixes) {
    if (f.substr(0, prefix.size()) == prefix) return std::string(name);
  }
  return "Arrow type '" + std::string(f) + "'";
}

std::string TypeName(const ArrowSchema& s) {
  if (s.dictionary != nullptr && s.dictionary->format != nullptr) {
    return "dictionary<values=" + FormatName(s.dictionary->format) +
           ", indices=" + FormatName(s.format) + ">";
  }
  return FormatName(s.format);
}

Layout LayoutOf(const ArrowSchema& s) {
  if (s.dictionary != nullptr) return Layout::kOther;  // The format is the indices'.
  const std::string_view f = s.format;
  if (f == "u" || f == "z") return Layout::kOffsets32;
  if (f == "U" || f == "Z") return Layout::kOffsets64;
  if (f == "vu" || f == "vz") return Layout::kView;
  if (f == "n") return Layout::kNull;
  return Layout::kOther;
}

// Whether buffers[0] of an array of this type is a validity bitmap: all
// types but null, unions and run-end encoded arrays have one.
bool HasValidity(const ArrowSchema& s) {
  const std::string_view f = s.format;
  return s.dictionary != nullptr || (f != "n" && f.substr(0, 2) != "+u" && f != "+r");
}

std::string ChildNames(const ArrowSchema& s) {
  std::string names;
  for (int64_t i = 0; i < s.n_children; ++i) {
    if (i == 20) return names + ", ... (" + std::to_string(s.n_children) + " in all)";
    if (i > 0) names += ", ";
    const char* name = s.children[i]->name;
    names += name != nullptr ? name : "";
  }
  return names.empty() ? "none" : names;
}

// The index of the child of `s` named `name`, or -1.
int64_t FindChild(const ArrowSchema& s, std::string_view name) {
  for (int64_t i = 0; i < s.n_children; ++i) {
    if (s.children[i]->name != nullptr && name == s.children[i]->name) return i;
  }
  return -1;
}

// The producer's schema tree, checked where it is walked.
Status CheckSchemaNode(const ArrowSchema* s, const std::string& name) {
  if (s == nullptr || s->format == nullptr || s->n_children < 0 ||
      (s->n_children > 0 && s->children == nullptr)) {
    return InvalidArgumentError(name + ": the Arrow stream's schema is malformed");
  }
  for (int64_t i = 0; i < s->n_children; ++i) {
    if (s->children[i] == nullptr || s->children[i]->format == nullptr) {
      return InvalidArgumentError(name + ": the Arrow stream's schema is malformed");
    }
  }
  return Status::Ok();
}

// "meta.text" or "/meta/text" (a JSON pointer: ~1 is '/', ~0 is '~') as
// field names; a column named exactly `key` wins over a dotted path.
std::vector<std::string> KeySegments(const ArrowSchema& root, const std::string& key) {
  std::vector<std::string> segments;
  if (!key.empty() && key[0] == '/') {
    std::string seg;
    for (size_t i = 1; i <= key.size(); ++i) {
      if (i == key.size() || key[i] == '/') {
        segments.push_back(seg);
        seg.clear();
      } else if (key[i] == '~' && i + 1 < key.size() && (key[i + 1] == '0' || key[i + 1] == '1')) {
        seg += key[++i] == '0' ? '~' : '/';
      } else {
        seg += key[i];
      }
    }
    return segments;
  }
  if (FindChild(root, key) >= 0) return {key};
  size_t begin = 0;
  while (true) {
    const size_t dot = key.find('.', begin);
    segments.push_back(key.substr(begin, dot - begin));
    if (dot == std::string::npos) return segments;
    begin = dot + 1;
  }
}

class ArrowStreamTextSource final : public TextSource {
 public:
  ArrowStreamTextSource(const ArrowArrayStream& stream, std::string name)
      : stream_(stream), name_(std::move(name)) {}
  ArrowStreamTextSource(const ArrowStreamTextSource&) = delete;
  ArrowStreamTextSource& operator=(const ArrowStreamTextSource&) = delete;
  ~ArrowStreamTextSource() override {
    ReleaseArray();
    if (stream_.release != nullptr) stream_.release(&stream_);
  }

  // Reads the schema and finds the texts' column.
  Status Init(const std::string& text_key);

  StatusOr<bool> Next(size_t max_bytes, TextBatch* batch) override;
  std::string name() const override { return name_; }

 private:
  Status StreamError(int code, const char* what);
  Status Malformed(const std::string& why) const {
    return DataLossError(name_ + ": record batch " + std::to_string(batches_) +
                         " of the Arrow stream is malformed: " + why);
  }
  std::string Where(int64_t row) const {
    return name_ + ":" + std::to_string(rows_before_ + static_cast<uint64_t>(row) + 1);
  }
  // Gets the next non-empty record batch; false at the end of the stream.
  StatusOr<bool> LoadArray();
  Status CheckArray();
  // Adds row `row` of the current batch; false when it does not fit.
  StatusOr<bool> AppendRow(int64_t row, TextBatch* batch);
  StatusOr<std::string_view> Text(int64_t row, int64_t pos) const;
  void ReleaseArray();

  ArrowArrayStream stream_;
  const std::string name_;
  std::vector<int64_t> path_;  // Child indexes from a batch to the column.
  Layout layout_ = Layout::kOther;
  bool leaf_validity_ = true;
  std::string not_a_string_;  // The bad-record reason for kOther.

  ArrowArray array_{};                    // The current record batch.
  std::vector<const ArrowArray*> chain_;  // Its arrays from the batch to the column.
  int64_t variadic_ = 0;                  // kView: the number of data buffers.
  int64_t row_ = 0;                       // The next row of array_.
  uint64_t rows_before_ = 0;              // Rows in the batches before array_.
  uint64_t batches_ = 0;                  // Batches got so far.
  bool done_ = false;
};

Status ArrowStreamTextSource::StreamError(int code, const char* what) {
  const char* detail =
      stream_.get_last_error != nullptr ? stream_.get_last_error(&stream_) : nullptr;
  std::string message = detail != nullptr ? detail : std::strerror(code);
  return IoError(name_ + ": " + what + " failed: " + message);
}

Status ArrowStreamTextSource::Init(const std::string& text_key) {
  if (stream_.get_schema == nullptr || stream_.get_next == nullptr) {
    return InvalidArgumentError(name_ + ": not a valid Arrow C stream (no callbacks)");
  }
  ArrowSchema schema{};
  if (int rc = stream_.get_schema(&stream_, &schema); rc != 0) {
    return StreamError(rc, "getting the Arrow stream's schema");
  }
  if (schema.release == nullptr) {
    return InvalidArgumentError(name_ + ": the Arrow stream gave a released schema");
  }
  struct Release {
    ArrowSchema* s;
    ~Release() {
      if (s->release != nullptr) s->release(s);
    }
  } release{&schema};
  TOKPACK_RETURN_IF_ERROR(CheckSchemaNode(&schema, name_));

  const ArrowSchema* leaf = &schema;
  if (std::string_view(schema.format) != "+s") {
    // A stream of plain arrays (e.g. an exported ChunkedArray): no columns.
    if (LayoutOf(schema) == Layout::kOther || LayoutOf(schema) == Layout::kNull) {
      return InvalidArgumentError(name_ + ": the Arrow stream holds " + TypeName(schema) +
                                  " arrays, not record batches or strings");
    }
  } else {
    if (text_key.empty()) return InvalidArgumentError(name_ + ": the text key is empty");
    std::string where;  // The fields walked so far, dotted.
    for (const std::string& segment : KeySegments(schema, text_key)) {
      if (std::string_view(leaf->format) != "+s") {
        return InvalidArgumentError(name_ + ": column '" + where + "' is " + TypeName(*leaf) +
                                    ", not a struct: it has no field '" + segment + "'");
      }
      const int64_t index = FindChild(*leaf, segment);
      if (index < 0) {
        if (where.empty()) {
          return InvalidArgumentError(name_ + ": no column '" + segment +
                                      "' in the Arrow stream (its columns: " + ChildNames(*leaf) +
                                      ")");
        }
        return InvalidArgumentError(name_ + ": no field '" + segment + "' in column '" + where +
                                    "' (its fields: " + ChildNames(*leaf) + ")");
      }
      path_.push_back(index);
      leaf = leaf->children[index];
      TOKPACK_RETURN_IF_ERROR(CheckSchemaNode(leaf, name_));
      where += (where.empty() ? "" : ".") + segment;
    }
  }
  layout_ = LayoutOf(*leaf);
  leaf_validity_ = HasValidity(*leaf);
  not_a_string_ = "text is " + TypeName(*leaf) + ", not a string";
  return Status::Ok();
}

void ArrowStreamTextSource::ReleaseArray() {
  if (array_.release != nullptr) {
    rows_before_ += static_cast<uint64_t>(array_.length);
    array_.release(&array_);
  }
  array_ = ArrowArray{};
  chain_.clear();
  row_ = 0;
}

StatusOr<bool> ArrowStreamTextSource::LoadArray() {
  ReleaseArray();  // One record batch in memory at a time.
  while (!done_) {
    ArrowArray next{};
    if (int rc = stream_.get_next(&stream_, &next); rc != 0) {
      return StreamError(rc, "reading the Arrow stream");
    }
    if (next.release == nullptr) {
      done_ = true;
      // Nothing more is needed from the producer: let it go now.
      stream_.release(&stream_);
      stream_.release = nullptr;
      break;
    }
    array_ = next;
    ++batches_;
    TOKPACK_RETURN_IF_ERROR(CheckArray());
    if (array_.length > 0) return true;
    ReleaseArray();
  }
  return false;
}

// Checks what the rows will read against what the interface says of the
// arrays: their lengths, offsets, buffer and child counts.
Status ArrowStreamTextSource::CheckArray() {
  const int64_t rows = array_.length;
  int64_t offsets = 0;  // Sum of the offsets of the levels above.
  const ArrowArray* a = &array_;
  for (size_t level = 0;; ++level) {
    if (a == nullptr) return Malformed("a child array is missing");
    if (a->length < 0 || a->offset < 0 || a->n_buffers < 0 || a->n_children < 0 ||
        a->length > kMaxExtent || a->offset > kMaxExtent ||
        (a->n_buffers > 0 && a->buffers == nullptr) ||
        (a->n_children > 0 && a->children == nullptr)) {
      return Malformed("negative or huge length, offset or counts, or null pointers");
    }
    // Row r reads this level at logical index offsets + r, which must be
    // within its length (the parent's offset applies to its children).
    if (a->length < rows + offsets) {
      return Malformed("an array of " + std::to_string(a->length) + " rows where " +
                       std::to_string(rows + offsets) + " are needed");
    }
    offsets += a->offset;
    if (offsets > kMaxExtent) return Malformed("offsets too large");
    chain_.push_back(a);
    if (level == path_.size()) break;
    if (a->n_buffers != 1 || a->n_children <= path_[level]) {
      return Malformed("a struct array without the schema's children");
    }
    a = a->children[path_[level]];
  }
  const bool any = rows > 0;
  switch (layout_) {
    case Layout::kOffsets32:
    case Layout::kOffsets64:
      if (a->n_buffers != 3 || (any && a->buffers[1] == nullptr)) {
        return Malformed("a string array without its offsets");
      }
      break;
    case Layout::kView:
      variadic_ = a->n_buffers - 3;
      if (variadic_ < 0 || (any && a->buffers[1] == nullptr) ||
          (variadic_ > 0 && a->buffers[a->n_buffers - 1] == nullptr)) {
        return Malformed("a string_view array without its views or buffer sizes");
      }
      break;
    case Layout::kNull:
      break;
    case Layout::kOther:
      if (leaf_validity_ && a->n_buffers < 1) return Malformed("an array without buffers");
      break;
  }
  return Status::Ok();
}

bool IsValid(const ArrowArray& a, int64_t pos) {
  const auto* bits = static_cast<const uint8_t*>(a.buffers[0]);
  if (bits == nullptr || a.null_count == 0) return true;
  return (bits[pos >> 3] >> (pos & 7)) & 1;
}

StatusOr<std::string_view> ArrowStreamTextSource::Text(int64_t row, int64_t pos) const {
  const ArrowArray& a = *chain_.back();
  int64_t begin = 0, end = 0;
  const char* data = nullptr;
  if (layout_ == Layout::kView) {
    const auto* view = static_cast<const char*>(a.buffers[1]) + 16 * pos;
    int32_t length = 0;
    std::memcpy(&length, view, 4);
    if (length < 0) return DataLossError(Where(row) + ": a string_view of negative length");
    if (length <= kInlineViewBytes) return std::string_view(view + 4, length);
    int32_t buffer = 0, offset = 0;
    std::memcpy(&buffer, view + 8, 4);
    std::memcpy(&offset, view + 12, 4);
    if (buffer < 0 || buffer >= variadic_ || offset < 0) {
      return DataLossError(Where(row) + ": a string_view points at buffer " +
                           std::to_string(buffer) + " offset " + std::to_string(offset) + " of " +
                           std::to_string(variadic_) + " buffers");
    }
    int64_t size = 0;
    std::memcpy(&size, static_cast<const char*>(a.buffers[a.n_buffers - 1]) + 8 * buffer, 8);
    data = static_cast<const char*>(a.buffers[2 + buffer]);
    if (int64_t{offset} + length > size || data == nullptr) {
      return DataLossError(Where(row) + ": a string_view of " + std::to_string(length) +
                           " bytes at offset " + std::to_string(offset) + " of a buffer of " +
                           std::to_string(size));
    }
    return std::string_view(data + offset, static_cast<size_t>(length));
  }
  if (layout_ == Layout::kOffsets32) {
    int32_t o[2];
    std::memcpy(o, static_cast<const int32_t*>(a.buffers[1]) + pos, sizeof(o));
    begin = o[0];
    end = o[1];
  } else {
    std::memcpy(&begin, static_cast<const int64_t*>(a.buffers[1]) + pos, 8);
    std::memcpy(&end, static_cast<const int64_t*>(a.buffers[1]) + pos + 1, 8);
  }
  data = static_cast<const char*>(a.buffers[2]);
  if (begin < 0 || end < begin || (end > begin && data == nullptr)) {
    return DataLossError(Where(row) + ": string offsets " + std::to_string(begin) + ".." +
                         std::to_string(end) + " are out of order");
  }
  if (end == begin) return std::string_view();
  return std::string_view(data + begin, static_cast<size_t>(end - begin));
}

StatusOr<bool> ArrowStreamTextSource::AppendRow(int64_t row, TextBatch* batch) {
  int64_t pos = row;
  for (size_t level = 0; level < chain_.size(); ++level) {
    const ArrowArray& a = *chain_[level];
    pos += a.offset;
    const bool has_validity = level + 1 < chain_.size() || leaf_validity_;
    if (has_validity && a.n_buffers >= 1 && !IsValid(a, pos)) {
      batch->Add("text is null", true);
      return true;
    }
  }
  if (layout_ == Layout::kNull) {
    batch->Add("text is null", true);
    return true;
  }
  if (layout_ == Layout::kOther) {
    batch->Add(not_a_string_, true);
    return true;
  }
  TOKPACK_ASSIGN_OR_RETURN(std::string_view text, Text(row, pos));
  if (text.size() > std::numeric_limits<uint32_t>::max() - batch->data.size()) {
    if (batch->entries.empty()) {
      return InvalidArgumentError(Where(row) + ": a single text of over 4 GiB");
    }
    return false;  // It goes into the next batch.
  }
  batch->Add(text);
  return true;
}

StatusOr<bool> ArrowStreamTextSource::Next(size_t max_bytes, TextBatch* batch) {
  batch->Clear();
  while (batch->entries.empty() ||
         (batch->data.size() < max_bytes && batch->entries.size() < kMaxEntries)) {
    if (array_.release == nullptr || row_ == array_.length) {
      TOKPACK_ASSIGN_OR_RETURN(bool more, LoadArray());
      if (!more) break;
      continue;
    }
    TOKPACK_ASSIGN_OR_RETURN(bool added, AppendRow(row_, batch));
    if (!added) break;
    ++row_;
  }
  return !batch->entries.empty();
}

}  // namespace

StatusOr<std::unique_ptr<TextSource>> MakeArrowStreamTextSource(void* arrow_array_stream,
                                                                std::string text_key,
                                                                std::string name) {
  auto* in = static_cast<ArrowArrayStream*>(arrow_array_stream);
  if (in == nullptr || in->release == nullptr) {
    return InvalidArgumentError(name + ": the Arrow stream is missing or already consumed");
  }
  const ArrowArrayStream moved = *in;
  in->release = nullptr;  // Moved: the producer's holder must not release it.
  auto source = std::make_unique<ArrowStreamTextSource>(moved, std::move(name));
  TOKPACK_RETURN_IF_ERROR(source->Init(text_key));
  return std::unique_ptr<TextSource>(std::move(source));
}

}  // namespace tokpack
