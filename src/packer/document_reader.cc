#include "packer/document_reader.h"

#include <limits>

namespace tokpack {

DocumentReader::DocumentReader(std::vector<InputRecord> inputs, std::shared_ptr<TextSource> texts,
                               const BuildSettings& settings, const StorageOptions& storage,
                               std::atomic<uint64_t>* raw_bytes_read,
                               const std::atomic<bool>* cancel, size_t batch_bytes,
                               size_t batch_records)
    : inputs_(std::move(inputs)),
      texts_(std::move(texts)),
      settings_(settings),
      storage_(storage),
      context_{&settings_, &storage_, raw_bytes_read, cancel},
      batch_bytes_(batch_bytes),
      batch_records_(batch_records) {}

Status DocumentReader::Init() {
  if (texts_) return Status::Ok();
  for (const InputRecord& in : inputs_) {
    TOKPACK_ASSIGN_OR_RETURN(InputFormat f, InputFormatFor(in.path, settings_.input_format));
    formats_.push_back(f);
  }
  return Status::Ok();
}

StatusOr<bool> DocumentReader::Next(RawBatch* batch) {
  batch->data.clear();
  batch->records.clear();
  while (batch->data.size() < batch_bytes_ && batch->records.size() < batch_records_) {
    if (!source_) {
      if (next_file_ == inputs_.size()) break;
      current_ = static_cast<uint32_t>(next_file_++);
      if (texts_) {
        source_ = TextRecordSource(texts_, context_);
      } else {
        TOKPACK_ASSIGN_OR_RETURN(source_,
                                 OpenRecordSource(inputs_[current_], formats_[current_], context_));
      }
    }
    std::string_view bytes;
    uint64_t number = 0;
    RecordKind kind = RecordKind::kText;
    TOKPACK_ASSIGN_OR_RETURN(bool more, source_->Next(&bytes, &number, &kind));
    if (!more) {
      text_bytes_ += source_->text_bytes();
      source_.reset();
      continue;
    }
    if (batch->data.size() + bytes.size() > std::numeric_limits<uint32_t>::max()) {
      return InvalidArgumentError(inputs_[current_].path + ":" + std::to_string(number) +
                                  ": a single record of over 4 GiB");
    }
    batch->data.append(bytes);
    batch->records.push_back({static_cast<uint32_t>(batch->data.size()), current_, number, kind});
  }
  return !batch->records.empty();
}

}  // namespace tokpack
