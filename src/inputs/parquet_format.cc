// The input format "parquet": one text column (--text-key) of a Parquet file,
// read through the plugin (parquet_input.h); its row groups are the units
// --part deals out.
#include <string>

#include "inputs/input_formats.h"
#include "inputs/parquet_input.h"
#include "tokpack/text_source.h"

namespace tokpack {
namespace {

// One text column of a Parquet file (or of some of its row groups).
class ParquetSource : public RecordSource {
 public:
  // `ids` (may be null) reads the id column in step with the text column.
  ParquetSource(std::unique_ptr<ParquetTextReader> reader, std::unique_ptr<ParquetTextReader> ids,
                std::atomic<uint64_t>* raw_bytes_read)
      : reader_(std::move(reader)), ids_(std::move(ids)), raw_bytes_read_(raw_bytes_read) {}

  int num_row_groups() const { return reader_->num_row_groups(); }

  Status Select(int begin, int end) {
    group_ = begin;
    end_ = end;
    group_end_row_ = 0;
    for (int g = 0; g < begin; ++g) group_end_row_ += reader_->row_group_rows(g);
    if (ids_) TOKPACK_RETURN_IF_ERROR(ids_->Select(begin, end));
    return reader_->Select(begin, end);
  }

  StatusOr<bool> Next(uint64_t max_bytes, std::string* out, Record* record) override {
    std::string_view text;
    TOKPACK_ASSIGN_OR_RETURN(bool more, reader_->Next(&text, &record->number, &bad_));
    if (!more) return false;
    record->has_id = false;
    if (ids_) {
      // A null or non-string id is none; the rows of the two columns agree.
      uint64_t row = 0;
      TOKPACK_ASSIGN_OR_RETURN(bool id_more, ids_->Next(&record->id, &row, &id_bad_));
      if (!id_more || row != record->number) {
        return DataLossError("row " + std::to_string(record->number) +
                             ": the id column ends or skips where the text column does not");
      }
      record->has_id = id_bad_.empty();
    }
    // Progress counts a row group's compressed bytes when its first row is read.
    while (record->number > group_end_row_ && group_ < end_) {
      if (raw_bytes_read_) raw_bytes_read_->fetch_add(reader_->row_group_bytes(group_));
      group_end_row_ += reader_->row_group_rows(group_++);
    }
    if (!bad_.empty()) {
      out->append(bad_);
      record->bytes = bad_.size();
      record->kind = RecordKind::kBad;
      return true;
    }
    text_bytes_ += text.size();
    record->bytes = text.size();
    record->kind = RecordKind::kText;
    if (text.size() <= max_bytes) out->append(text);
    return true;
  }
  uint64_t text_bytes() const override { return text_bytes_; }

 private:
  std::unique_ptr<ParquetTextReader> reader_;
  std::unique_ptr<ParquetTextReader> ids_;
  std::atomic<uint64_t>* raw_bytes_read_;
  std::string bad_;
  std::string id_bad_;
  int group_ = 0;
  int end_ = 0;
  uint64_t group_end_row_ = 0;
  uint64_t text_bytes_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<RecordSource>> OpenParquetRecords(const InputRecord& in,
                                                           const SourceContext& context) {
  TOKPACK_ASSIGN_OR_RETURN(auto reader,
                           OpenParquetInput(in.path, context.settings->text_key, *context.storage,
                                            context.max_document_bytes));
  // The id column, when the file has one (as a JSONL record may have no id
  // field); only a missing or unusable column means none.
  std::unique_ptr<ParquetTextReader> ids;
  if (context.settings->doc_sources && context.settings->id_key != context.settings->text_key) {
    StatusOr<std::unique_ptr<ParquetTextReader>> opened = OpenParquetInput(
        in.path, context.settings->id_key, *context.storage, context.max_document_bytes,
        /*integers=*/true);
    if (opened.ok()) {
      ids = std::move(*opened);
    } else if (opened.status().code() != StatusCode::kInvalidArgument) {
      return opened.status();
    }
  }
  auto source =
      std::make_unique<ParquetSource>(std::move(reader), std::move(ids), context.raw_bytes_read);
  const int groups = source->num_row_groups();
  int begin = 0, end = groups;
  if (!in.whole_file()) {
    begin = static_cast<int>(in.row_group_begin);
    end = static_cast<int>(in.row_group_end);
    if (begin >= end || end > groups) {
      return InvalidArgumentError(in.path + ": row groups [" + std::to_string(begin) + ", " +
                                  std::to_string(end) + ") asked for, but the file has " +
                                  std::to_string(groups) + "; it changed since it was listed");
    }
  }
  TOKPACK_RETURN_IF_ERROR(source->Select(begin, end));
  return std::unique_ptr<RecordSource>(std::move(source));
}

StatusOr<std::vector<uint64_t>> ParquetRowGroupBytes(const std::string& path,
                                                     const std::string& text_key,
                                                     const StorageOptions& storage) {
  // Only the footer is read here, never a page: the largest cap will do.
  TOKPACK_ASSIGN_OR_RETURN(auto reader,
                           OpenParquetInput(path, text_key, storage, kMaxMaxDocumentBytes));
  std::vector<uint64_t> bytes;
  for (int g = 0; g < reader->num_row_groups(); ++g) bytes.push_back(reader->row_group_bytes(g));
  return bytes;
}

}  // namespace tokpack
