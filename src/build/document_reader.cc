#include "build/document_reader.h"

#include <limits>
#include <string_view>

#include "format/source_index.h"

namespace tokpack {
namespace {

// Why a record over the limit holds no text. A whole-file document (number
// 0) is read only until it is known to be too large, so its size is unknown.
std::string TooLarge(const RecordSource::Record& r, uint64_t limit) {
  const std::string what = r.number == 0
                               ? "a document of more than " + std::to_string(limit) + " bytes"
                               : "a record of " + std::to_string(r.bytes) + " bytes";
  return what + ", over --max-document-bytes (" + std::to_string(limit) + ")";
}

}  // namespace

DocumentReader::DocumentReader(std::vector<InputRecord> inputs, std::shared_ptr<TextSource> texts,
                               const BuildSettings& settings, const StorageOptions& storage,
                               std::atomic<uint64_t>* raw_bytes_read, const CancelFlag& cancel,
                               uint64_t max_document_bytes, size_t batch_bytes,
                               size_t batch_records)
    : inputs_(std::move(inputs)),
      texts_(std::move(texts)),
      settings_(settings),
      storage_(storage),
      context_{&settings_, &storage_, raw_bytes_read, cancel, max_document_bytes},
      max_document_bytes_(max_document_bytes),
      batch_bytes_(batch_bytes),
      batch_records_(batch_records) {}

Status DocumentReader::Init() {
  if (texts_) return Status::Ok();
  for (const InputRecord& in : inputs_) {
    TOKPACK_ASSIGN_OR_RETURN(const InputFormat* f, InputFormatFor(in.path, settings_.input_format));
    // Parquet rows reach the encoder as bare texts, so a spans column would
    // be ignored and every token would carry loss: refused, not guessed.
    if (settings_.loss_masks && std::string_view(f->name) == "parquet") {
      return InvalidArgumentError(
          "'" + in.path +
          "': --loss-masks reads loss spans from JSONL records (and Python dicts), not yet from "
          "Parquet columns; convert the file to JSONL or build it without --loss-masks");
    }
    formats_.push_back(f);
  }
  return Status::Ok();
}

StatusOr<bool> DocumentReader::Next(RawBatch* batch) {
  batch->data.clear();
  batch->records.clear();
  batch->ids.clear();
  while (batch->data.size() < batch_bytes_ && batch->records.size() < batch_records_) {
    if (!source_) {
      if (next_file_ == inputs_.size()) break;
      current_ = static_cast<uint32_t>(next_file_++);
      if (texts_) {
        source_ = TextRecordSource(texts_, context_);
      } else {
        TOKPACK_ASSIGN_OR_RETURN(source_, formats_[current_]->open(inputs_[current_], context_));
      }
    }
    const size_t start = batch->data.size();
    RecordSource::Record r;
    TOKPACK_ASSIGN_OR_RETURN(bool more, source_->Next(max_document_bytes_, &batch->data, &r));
    if (!more) {
      text_bytes_ += source_->text_bytes();
      source_.reset();
      continue;
    }
    if (r.kind != RecordKind::kBad && r.bytes > max_document_bytes_) {
      batch->data.resize(start);
      batch->data += TooLarge(r, max_document_bytes_);
      r.kind = RecordKind::kBad;
    }
    if (batch->data.size() + RawBatch::kPadding > std::numeric_limits<uint32_t>::max()) {
      return InternalError(inputs_[current_].path + ":" + std::to_string(r.number) +
                           ": a batch of over 4 GiB");
    }
    // An id past the sidecar's cap is none (src/format/source_index.h), so
    // a batch's ids stay small whatever the id column holds.
    const bool has_id = r.has_id && r.kind == RecordKind::kText && r.id.size() <= kMaxIdBytes;
    if (has_id) batch->ids.append(r.id);
    batch->records.push_back({static_cast<uint32_t>(batch->data.size()), current_, r.number, r.kind,
                              static_cast<uint32_t>(batch->ids.size()), has_id});
  }
  if (!batch->records.empty()) batch->Seal();
  return !batch->records.empty();
}

}  // namespace tokpack
