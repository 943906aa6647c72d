// libtokpack_parquet.so: reads one string column of a Parquet file with the
// Arrow/Parquet C++ libraries bundled in the pyarrow wheel. It is C++20 (as
// Arrow's headers are) and links only libparquet and libarrow, never the
// core: see parquet_plugin.h for the boundary.
//
// Reading uses Parquet's low-level column readers rather than Arrow tables so
// that memory stays bounded by one row group's text column chunk (read by
// one ranged read) plus one decompressed page, whatever the file's size; a
// page is decompressed only up to a cap (CappedPool), since its header, not
// the file's size, says how large it becomes.
// Arrow signals errors by exceptions; every entry point catches them all and
// turns them into an error string naming the file.
#include "inputs/parquet/parquet_plugin.h"

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <arrow/memory_pool.h>
#include <arrow/result.h>
#include <arrow/status.h>
#include <parquet/column_reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>
#include <parquet/types.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokpack::parquet_plugin {
namespace {

// Values per ReadBatch: large enough to amortize the call, small enough that
// the level and value arrays stay a few KiB.
constexpr int64_t kBatch = 1024;
// Column paths listed in a "no such column" error; a schema from an untrusted
// footer may have millions of them.
constexpr int kMaxListedColumns = 40;
// Row numbers stay far from overflowing whatever a footer claims.
constexpr uint64_t kMaxRows = uint64_t{1} << 62;

// arrow::io::RandomAccessFile over an Input, so that Arrow reads the footer
// and each column chunk with one ReadAt each (ranged GETs when remote).
// ReadAt must be thread-safe for Arrow; Input is not, hence the mutex.
class InputFile final : public arrow::io::RandomAccessFile {
 public:
  explicit InputFile(std::unique_ptr<Input> input)
      : input_(std::move(input)),
        // Arrow's offsets are int64; no real file is larger.
        size_(static_cast<int64_t>(std::min<uint64_t>(input_->Size(), INT64_MAX))) {}

  const std::string& name() const { return input_->Name(); }
  // The Input's own message for the last failed read: a clearer diagnosis
  // than the "corrupt file" Arrow's exception would suggest.
  std::string io_error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return io_error_;
  }

  arrow::Status Close() override {
    closed_ = true;
    return arrow::Status::OK();
  }
  bool closed() const override { return closed_; }
  arrow::Result<int64_t> Tell() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return position_;
  }
  arrow::Status Seek(int64_t position) override {
    if (position < 0) return arrow::Status::Invalid("negative seek position");
    std::lock_guard<std::mutex> lock(mu_);
    position_ = position;
    return arrow::Status::OK();
  }
  arrow::Result<int64_t> GetSize() override { return size_; }

  arrow::Result<int64_t> Read(int64_t nbytes, void* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    ARROW_ASSIGN_OR_RAISE(int64_t n, ReadLocked(position_, nbytes, true, out));
    position_ += n;
    return n;
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(int64_t nbytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    ARROW_ASSIGN_OR_RAISE(auto buffer, ReadBufferLocked(position_, nbytes, true));
    position_ += buffer->size();
    return buffer;
  }
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, bool allow_short_read,
                                void* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    return ReadLocked(position, nbytes, allow_short_read, out);
  }
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, void* out) override {
    return ReadAt(position, nbytes, true, out);
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes,
                                                       bool allow_short_read) override {
    std::lock_guard<std::mutex> lock(mu_);
    return ReadBufferLocked(position, nbytes, allow_short_read);
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes) override {
    return ReadAt(position, nbytes, true);
  }

 private:
  // Bytes of [position, position + nbytes) that exist. Clamping here is what
  // keeps a footer's bogus lengths from becoming huge allocations: nothing
  // is allocated beyond the file's real size.
  arrow::Result<int64_t> Available(int64_t position, int64_t nbytes, bool allow_short_read) const {
    if (closed_) return arrow::Status::Invalid(name(), ": read after close");
    if (position < 0 || nbytes < 0) {
      return arrow::Status::Invalid(name(), ": negative read offset or length");
    }
    const int64_t n = position >= size_ ? 0 : std::min(nbytes, size_ - position);
    if (n < nbytes && !allow_short_read) {
      return arrow::Status::IOError(name(), ": read of ", nbytes, " bytes at ", position,
                                    " is past the end (", size_, " bytes)");
    }
    return n;
  }

  arrow::Result<int64_t> ReadLocked(int64_t position, int64_t nbytes, bool allow_short_read,
                                    void* out) {
    ARROW_ASSIGN_OR_RAISE(int64_t n, Available(position, nbytes, allow_short_read));
    if (n == 0) return n;
    std::string error;
    if (!input_->ReadAt(static_cast<uint64_t>(position), static_cast<uint64_t>(n),
                        static_cast<char*>(out), &error)) {
      io_error_ = error;
      return arrow::Status::IOError(error);
    }
    return n;
  }

  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadBufferLocked(int64_t position, int64_t nbytes,
                                                                 bool allow_short_read) {
    ARROW_ASSIGN_OR_RAISE(int64_t n, Available(position, nbytes, allow_short_read));
    ARROW_ASSIGN_OR_RAISE(std::unique_ptr<arrow::Buffer> buffer, arrow::AllocateBuffer(n));
    ARROW_ASSIGN_OR_RAISE(int64_t got, ReadLocked(position, n, false, buffer->mutable_data()));
    (void)got;  // == n: ReadLocked reads all of what Available allows.
    return std::shared_ptr<arrow::Buffer>(std::move(buffer));
  }

  mutable std::mutex mu_;
  std::unique_ptr<Input> input_;
  const int64_t size_;
  int64_t position_ = 0;
  bool closed_ = false;
  std::string io_error_;
};

// Arrow's memory for one file, refusing any one buffer over `limit`. Arrow
// sizes the buffer a page is decompressed into from the page's header, and
// allocates it before decompressing: so a page too large to read (a 144 KB
// zstd file whose one page inflates to 1.5 GB) fails here, before it exists,
// and no more than `limit` of it is ever held.
class CappedPool final : public arrow::MemoryPool {
 public:
  explicit CappedPool(int64_t limit) : limit_(limit) {}

  arrow::Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override {
    if (size > limit_) return Refuse(size);
    return base_->Allocate(size, alignment, out);
  }
  arrow::Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                           uint8_t** ptr) override {
    if (new_size > limit_) return Refuse(new_size);
    return base_->Reallocate(old_size, new_size, alignment, ptr);
  }
  void Free(uint8_t* buffer, int64_t size, int64_t alignment) override {
    base_->Free(buffer, size, alignment);
  }
  int64_t bytes_allocated() const override { return base_->bytes_allocated(); }
  int64_t total_bytes_allocated() const override { return base_->total_bytes_allocated(); }
  int64_t num_allocations() const override { return base_->num_allocations(); }
  std::string backend_name() const override { return base_->backend_name(); }

  int64_t limit() const { return limit_; }
  // The size of the last buffer refused since the last call; 0 if none was.
  int64_t TakeRefused() { return refused_.exchange(0); }

 private:
  arrow::Status Refuse(int64_t size) {
    refused_.store(size);
    return arrow::Status::OutOfMemory("a buffer of ", size, " bytes, over the cap of ", limit_);
  }

  arrow::MemoryPool* const base_ = arrow::default_memory_pool();
  const int64_t limit_;
  std::atomic<int64_t> refused_{0};
};

// "name: <what went wrong>", preferring the Input's own error when a read
// failed (the exception then only echoes it).
std::string Describe(const InputFile& file, std::string_view what) {
  std::string io = file.io_error();
  if (!io.empty()) return io;
  std::string msg = file.name();
  if (what.find("magic bytes not found") != std::string_view::npos) {
    msg += ": not a Parquet file, or truncated (bad magic)";
  } else {
    msg += ": corrupt Parquet file (";
    msg += what;
    msg += ")";
  }
  return msg;
}

// The text key's path components: "/a/b" is a JSON pointer (RFC 6901
// escapes), anything else a dotted path.
std::vector<std::string> KeyComponents(const std::string& key) {
  std::vector<std::string> parts;
  const bool pointer = !key.empty() && key[0] == '/';
  const char sep = pointer ? '/' : '.';
  size_t start = pointer ? 1 : 0;
  for (;;) {
    size_t end = key.find(sep, start);
    std::string part = key.substr(start, end == std::string::npos ? end : end - start);
    if (pointer) {
      std::string unescaped;
      for (size_t i = 0; i < part.size(); ++i) {
        if (part[i] == '~' && i + 1 < part.size() && (part[i + 1] == '0' || part[i + 1] == '1')) {
          unescaped += part[i + 1] == '0' ? '~' : '/';
          ++i;
        } else {
          unescaped += part[i];
        }
      }
      part = std::move(unescaped);
    }
    parts.push_back(std::move(part));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return parts;
}

// Leaf column paths, dotted, for error messages: all of them, or those
// under `prefix` (a dotted path ending in '.').
std::string ListColumns(const parquet::SchemaDescriptor& schema, const std::string& prefix) {
  std::string list;
  int listed = 0, more = 0;
  for (int i = 0; i < schema.num_columns(); ++i) {
    std::string path = schema.Column(i)->path()->ToDotString();
    if (path.compare(0, prefix.size(), prefix) != 0) continue;
    if (listed == kMaxListedColumns) {
      ++more;
      continue;
    }
    if (listed++) list += ", ";
    list += path;
  }
  if (more) list += ", ... (" + std::to_string(more) + " more)";
  return list.empty() ? "none" : list;
}

// "list" or "map" for nodes that hold many values per row, else null.
const char* ManyValuesKind(const parquet::schema::Node& node) {
  const auto& logical = node.logical_type();
  if (logical && logical->is_map()) return "map";
  if (node.is_repeated() || (logical && logical->is_list())) return "list";
  return nullptr;
}

// The leaf column `key` names, or -1 with *error set.
int ResolveColumn(const parquet::SchemaDescriptor& schema, const std::string& name,
                  const std::string& key, std::string* error) {
  const std::string where = name + ": text column '" + key + "'";
  auto is_many = [](const char* kind) {
    return std::string(" is a ") + kind +
           "; tokpack reads one string per row, from a string column or a struct's field";
  };
  // A top-level name may itself contain dots: an exact match on the whole
  // dotted path wins over walking it component by component.
  int column = key.empty() || key[0] == '/' ? -1 : schema.ColumnIndex(key);
  if (column < 0) {
    const parquet::schema::Node* node = schema.group_node();
    std::string path;
    for (const std::string& part : KeyComponents(key)) {
      const int field = node->is_group()
                            ? static_cast<const parquet::schema::GroupNode*>(node)->FieldIndex(part)
                            : -1;
      if (field < 0) {
        *error = where + " not found; the file's columns are: " + ListColumns(schema, "");
        return -1;
      }
      node = static_cast<const parquet::schema::GroupNode*>(node)->field(field).get();
      path += path.empty() ? part : "." + part;
      if (const char* kind = ManyValuesKind(*node)) {
        *error = where + (path == key ? "" : " ('" + path + "')") + is_many(kind);
        return -1;
      }
    }
    if (node->is_group()) {
      *error = where +
               " is a struct; name one of its fields instead: " + ListColumns(schema, path + ".");
      return -1;
    }
    column = schema.ColumnIndex(*node);
    if (column < 0) {
      *error = where + " not found; the file's columns are: " + ListColumns(schema, "");
      return -1;
    }
  }
  if (schema.Column(column)->max_repetition_level() > 0) {
    *error = where + is_many("list");
    return -1;
  }
  return column;
}

// Empty when the column's values are text; else why each non-null value is
// a bad row. Raw BYTE_ARRAY (no logical type) counts as text, as JSON
// strings do: the packer checks the bytes themselves.
std::string NotTextReason(const parquet::ColumnDescriptor& column) {
  if (column.physical_type() != parquet::Type::BYTE_ARRAY) {
    return "text is " + parquet::TypeToString(column.physical_type()) + ", not a string";
  }
  const auto& logical = column.logical_type();
  if (!logical || logical->is_none() || logical->is_string() || logical->is_JSON() ||
      logical->is_enum()) {
    return "";
  }
  return "text is " + logical->ToString() + ", not a string";
}

// How an integer column's values read as decimal text (ids).
enum class Integers { kNone, kInt32, kUInt32, kInt64, kUInt64 };

// kNone unless the column holds plain integers: INT32 or INT64 with no
// logical type or an integer one (not a date, a time or a decimal).
Integers IntegerKind(const parquet::ColumnDescriptor& column) {
  const parquet::Type::type type = column.physical_type();
  if (type != parquet::Type::INT32 && type != parquet::Type::INT64) return Integers::kNone;
  const auto& logical = column.logical_type();
  bool is_signed = true;
  if (logical && !logical->is_none()) {
    if (!logical->is_int()) return Integers::kNone;
    is_signed = static_cast<const parquet::IntLogicalType&>(*logical).is_signed();
  }
  if (type == parquet::Type::INT32) return is_signed ? Integers::kInt32 : Integers::kUInt32;
  return is_signed ? Integers::kInt64 : Integers::kUInt64;
}

// ReadBatch of a column whose values are only counted, never used.
template <typename DType>
int64_t ReadLevelsAs(parquet::ColumnReader* reader, int16_t* def_levels, int64_t* values_read) {
  std::array<typename DType::c_type, kBatch> values;
  return static_cast<parquet::TypedColumnReader<DType>*>(reader)->ReadBatch(
      kBatch, def_levels, nullptr, values.data(), values_read);
}

int64_t ReadLevels(parquet::ColumnReader* reader, int16_t* def_levels, int64_t* values_read) {
  switch (reader->type()) {
    case parquet::Type::BOOLEAN:
      return ReadLevelsAs<parquet::BooleanType>(reader, def_levels, values_read);
    case parquet::Type::INT32:
      return ReadLevelsAs<parquet::Int32Type>(reader, def_levels, values_read);
    case parquet::Type::INT64:
      return ReadLevelsAs<parquet::Int64Type>(reader, def_levels, values_read);
    case parquet::Type::INT96:
      return ReadLevelsAs<parquet::Int96Type>(reader, def_levels, values_read);
    case parquet::Type::FLOAT:
      return ReadLevelsAs<parquet::FloatType>(reader, def_levels, values_read);
    case parquet::Type::DOUBLE:
      return ReadLevelsAs<parquet::DoubleType>(reader, def_levels, values_read);
    case parquet::Type::BYTE_ARRAY:
      return ReadLevelsAs<parquet::ByteArrayType>(reader, def_levels, values_read);
    case parquet::Type::FIXED_LEN_BYTE_ARRAY:
      return ReadLevelsAs<parquet::FLBAType>(reader, def_levels, values_read);
    default:
      throw parquet::ParquetException("unsupported physical type");
  }
}

class ColumnTextReader final : public TextReader {
 public:
  ColumnTextReader(std::shared_ptr<InputFile> file, std::unique_ptr<CappedPool> pool,
                   std::unique_ptr<parquet::ParquetFileReader> reader, int column, bool integers)
      : file_(std::move(file)),
        pool_(std::move(pool)),
        reader_(std::move(reader)),
        metadata_(reader_->metadata()),
        column_(column),
        max_def_(metadata_->schema()->Column(column)->max_definition_level()),
        integers_(integers ? IntegerKind(*metadata_->schema()->Column(column)) : Integers::kNone),
        not_text_(integers_ != Integers::kNone
                      ? ""
                      : NotTextReason(*metadata_->schema()->Column(column))) {
    // The footer's numbers, read here (inside the caller's try) because
    // Arrow throws on corrupt metadata and the accessors below cannot.
    // Row numbers continue across row groups; the counts are checked
    // against the rows actually read (Next), so a lying footer fails loudly
    // instead of misnumbering.
    const int groups = metadata_->num_row_groups();
    first_row_.assign(1, 0);
    for (int g = 0; g < groups; ++g) {
      auto group = metadata_->RowGroup(g);
      const uint64_t rows = static_cast<uint64_t>(std::max<int64_t>(0, group->num_rows()));
      int64_t bytes = group->total_compressed_size();
      if (bytes <= 0) {
        // Optional in the format (older writers leave it out): sum the chunks.
        bytes = 0;
        for (int c = 0; c < group->num_columns(); ++c) {
          bytes += std::max<int64_t>(0, group->ColumnChunk(c)->total_compressed_size());
        }
      }
      if (rows > kMaxRows - first_row_.back()) {
        throw parquet::ParquetException("its row groups claim more than 2^62 rows");
      }
      group_rows_.push_back(rows);
      group_bytes_.push_back(static_cast<uint64_t>(std::max<int64_t>(0, bytes)));
      first_row_.push_back(first_row_.back() + rows);
    }
    end_group_ = groups;
  }

  int NumRowGroups() const override { return static_cast<int>(group_rows_.size()); }
  uint64_t RowGroupBytes(int g) const override {
    return g >= 0 && g < NumRowGroups() ? group_bytes_[g] : 0;
  }
  uint64_t RowGroupRows(int g) const override {
    return g >= 0 && g < NumRowGroups() ? group_rows_[g] : 0;
  }

  bool Select(int begin, int end, std::string* error) override {
    if (begin < 0 || begin > end || end > NumRowGroups()) {
      *error = file_->name() + ": row groups [" + std::to_string(begin) + ", " +
               std::to_string(end) + ") are not within the file's " +
               std::to_string(NumRowGroups());
      return false;
    }
    column_reader_.reset();
    levels_ = level_pos_ = values_read_ = value_pos_ = 0;
    unread_ = 0;
    reopen_ = false;
    next_group_ = begin;
    end_group_ = end;
    return true;
  }

  int Next(const char** data, size_t* size, uint64_t* row, std::string* bad,
           std::string* error) override {
    for (;;) {
      try {
        return NextRow(data, size, row, bad, error);
      } catch (const std::exception& e) {
        if (const int64_t refused = pool_->TakeRefused(); refused > 0) {
          SkipRefusedPage(refused);
          continue;
        }
        *error =
            Describe(*file_, std::string("row group ") + std::to_string(group_) + ": " + e.what());
      } catch (...) {
        *error = Describe(*file_, "row group " + std::to_string(group_) + ": unknown error");
      }
      column_reader_.reset();  // Unusable after a failure; Select() restarts.
      return -1;
    }
  }

 private:
  // The column reader of group_, skipping its first skip_pages_ data pages.
  void OpenColumn() {
    std::unique_ptr<parquet::PageReader> pages =
        reader_->RowGroup(group_)->GetColumnPageReader(column_);
    pages_seen_ = 0;
    // Called for each data page before it is decompressed.
    pages->set_data_page_filter([this](const parquet::DataPageStats& stats) {
      page_values_ = stats.num_values;
      return ++pages_seen_ <= skip_pages_;
    });
    column_reader_ = parquet::ColumnReader::Make(metadata_->schema()->Column(column_),
                                                 std::move(pages), pool_.get());
  }

  // After the pool refused a page of `bytes` (CappedPool): its rows become
  // bad rows that say why, and reading goes on after it, so that the value
  // too large to be a document costs a bad record, as a smaller one would,
  // not the build. A data page's header says how many rows it holds; a
  // dictionary page comes before every data page (none seen yet), and
  // without it none of the group's values can be read.
  void SkipRefusedPage(int64_t bytes) {
    column_reader_.reset();
    levels_ = level_pos_ = values_read_ = value_pos_ = 0;
    const uint64_t left = RowGroupRows(group_) - std::min(row_in_group_, RowGroupRows(group_));
    unread_reason_ = "text is in a Parquet page of " + std::to_string(bytes) +
                     " bytes once decompressed, over the cap of " + std::to_string(pool_->limit()) +
                     " (2 x max_document_bytes + 1 MiB); not read";
    if (pages_seen_ == 0) {
      unread_ = left;
      return;
    }
    unread_ = std::min<uint64_t>(static_cast<uint64_t>(std::max<int64_t>(page_values_, 0)), left);
    skip_pages_ = pages_seen_;
    reopen_ = true;
  }

  int NextRow(const char** data, size_t* size, uint64_t* row, std::string* bad,
              std::string* error) {
    for (;;) {
      if (unread_ > 0) {
        --unread_;
        *row = first_row_[group_] + ++row_in_group_;
        *bad = unread_reason_;
        return 1;
      }
      if (reopen_) {
        reopen_ = false;
        OpenColumn();
        continue;
      }
      if (level_pos_ < levels_) {
        if (row_in_group_ >= RowGroupRows(group_)) {
          *error = file_->name() + ": corrupt Parquet file (row group " + std::to_string(group_) +
                   " holds more than the " + std::to_string(RowGroupRows(group_)) +
                   " rows its metadata says)";
          column_reader_.reset();
          return -1;
        }
        *row = first_row_[group_] + ++row_in_group_;
        bad->clear();
        const bool present = max_def_ == 0 || def_levels_[level_pos_] == max_def_;
        ++level_pos_;
        if (!present) {
          *bad = "text is null";
        } else if (!not_text_.empty()) {
          *bad = not_text_;
        } else if (value_pos_ >= values_read_) {
          *error = file_->name() + ": corrupt Parquet file (row group " + std::to_string(group_) +
                   " has fewer values than non-null rows)";
          column_reader_.reset();
          return -1;
        } else if (integers_ != Integers::kNone) {
          number_ = FormatInteger(value_pos_++);
          *data = number_.data();
          *size = number_.size();
        } else {
          const parquet::ByteArray& value = values_[value_pos_++];
          *data = reinterpret_cast<const char*>(value.ptr);
          *size = value.len;
        }
        return 1;
      }
      if (column_reader_ && column_reader_->HasNext()) {
        values_read_ = 0;
        if (integers_ == Integers::kInt32 || integers_ == Integers::kUInt32) {
          levels_ =
              static_cast<parquet::Int32Reader*>(column_reader_.get())
                  ->ReadBatch(kBatch, def_levels_.data(), nullptr, int32s_.data(), &values_read_);
        } else if (integers_ != Integers::kNone) {
          levels_ =
              static_cast<parquet::Int64Reader*>(column_reader_.get())
                  ->ReadBatch(kBatch, def_levels_.data(), nullptr, int64s_.data(), &values_read_);
        } else if (not_text_.empty()) {
          levels_ =
              static_cast<parquet::ByteArrayReader*>(column_reader_.get())
                  ->ReadBatch(kBatch, def_levels_.data(), nullptr, values_.data(), &values_read_);
        } else {
          levels_ = ReadLevels(column_reader_.get(), def_levels_.data(), &values_read_);
        }
        level_pos_ = value_pos_ = 0;
        if (levels_ <= 0) column_reader_.reset();  // No progress: treat as the end.
        continue;
      }
      if (column_reader_) {
        column_reader_.reset();
        if (row_in_group_ != RowGroupRows(group_)) {
          *error = file_->name() + ": corrupt Parquet file (row group " + std::to_string(group_) +
                   " holds " + std::to_string(row_in_group_) + " rows, its metadata says " +
                   std::to_string(RowGroupRows(group_)) + ")";
          return -1;
        }
      }
      if (next_group_ >= end_group_) return 0;
      group_ = next_group_++;
      row_in_group_ = 0;
      levels_ = level_pos_ = values_read_ = value_pos_ = 0;
      skip_pages_ = 0;
      OpenColumn();
    }
  }

  // Value k of the current batch of an integer column, as decimal text.
  std::string FormatInteger(int64_t k) const {
    switch (integers_) {
      case Integers::kInt32:
        return std::to_string(int32s_[k]);
      case Integers::kUInt32:
        return std::to_string(static_cast<uint32_t>(int32s_[k]));
      case Integers::kInt64:
        return std::to_string(int64s_[k]);
      case Integers::kUInt64:
        return std::to_string(static_cast<uint64_t>(int64s_[k]));
      case Integers::kNone:
        break;
    }
    return "";
  }

  std::shared_ptr<InputFile> file_;
  std::unique_ptr<CappedPool> pool_;  // Before reader_, which uses it till its end.
  std::unique_ptr<parquet::ParquetFileReader> reader_;
  std::shared_ptr<parquet::FileMetaData> metadata_;
  const int column_;
  const int16_t max_def_;
  const Integers integers_;  // kNone: the values are text.
  const std::string not_text_;
  std::vector<uint64_t> group_rows_, group_bytes_;
  std::vector<uint64_t> first_row_;  // 0-based first row of each group, and the total.

  int next_group_ = 0, end_group_ = 0;
  int group_ = 0;  // The group column_reader_ reads.
  uint64_t row_in_group_ = 0;
  std::shared_ptr<parquet::ColumnReader> column_reader_;
  // The current batch: values_ point into the reader's current page, valid
  // until the next ReadBatch, so a row's text lives until the next Next().
  std::array<int16_t, kBatch> def_levels_{};
  std::array<parquet::ByteArray, kBatch> values_{};
  std::array<int32_t, kBatch> int32s_{};  // An integer column's batch instead.
  std::array<int64_t, kBatch> int64s_{};
  std::string number_;  // The current row's integer as text.
  int64_t levels_ = 0, level_pos_ = 0, values_read_ = 0, value_pos_ = 0;
  // Data pages of the group the filter has seen (and their last's values);
  // those up to skip_pages_ are skipped (read, or refused, before a reopen).
  int64_t pages_seen_ = 0, page_values_ = 0, skip_pages_ = 0;
  uint64_t unread_ = 0;        // Rows of a refused page still to report.
  std::string unread_reason_;  // What they report.
  bool reopen_ = false;        // Then read on after it.
};

}  // namespace
}  // namespace tokpack::parquet_plugin

extern "C" {

int tokpack_parquet_abi() { return tokpack::parquet_plugin::kParquetPluginAbi; }

tokpack::parquet_plugin::TextReader* tokpack_parquet_open(tokpack::parquet_plugin::Input* input,
                                                          const char* text_key,
                                                          uint64_t max_document_bytes,
                                                          bool integers, std::string* error) {
  using tokpack::parquet_plugin::CappedPool;
  using tokpack::parquet_plugin::ColumnTextReader;
  using tokpack::parquet_plugin::InputFile;
  std::unique_ptr<tokpack::parquet_plugin::Input> owned(input);
  const std::string name = owned->Name();
  std::shared_ptr<InputFile> file;
  try {
    // The smallest Parquet file: "PAR1", a footer length, "PAR1".
    if (owned->Size() < 12) {
      *error =
          name + ": not a Parquet file (" + std::to_string(owned->Size()) + " bytes, too short)";
      return nullptr;
    }
    file = std::make_shared<InputFile>(std::move(owned));
    auto pool = std::make_unique<CappedPool>(
        static_cast<int64_t>(std::min<uint64_t>(max_document_bytes, INT64_MAX / 4)) * 2 +
        (int64_t{1} << 20));
    std::unique_ptr<parquet::ParquetFileReader> reader =
        parquet::ParquetFileReader::Open(file, parquet::ReaderProperties(pool.get()));
    const int column = tokpack::parquet_plugin::ResolveColumn(*reader->metadata()->schema(), name,
                                                              text_key, error);
    if (column < 0) return nullptr;
    return new ColumnTextReader(file, std::move(pool), std::move(reader), column, integers);
  } catch (const std::exception& e) {
    *error = file ? tokpack::parquet_plugin::Describe(*file, e.what())
                  : name + ": cannot open Parquet file (" + e.what() + ")";
  } catch (...) {
    *error = name + ": cannot open Parquet file (unknown error)";
  }
  return nullptr;
}

}  // extern "C"
