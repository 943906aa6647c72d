#include "build/document_reader.h"

#include <limits>

#include "io/input_files.h"

namespace tokpack {

DocumentReader::DocumentReader(std::vector<InputRecord> inputs, const BuildSettings& settings,
                               std::atomic<uint64_t>* raw_bytes_read,
                               const std::atomic<bool>* cancel, size_t batch_bytes,
                               size_t batch_records)
    : inputs_(std::move(inputs)),
      settings_(settings),
      raw_bytes_read_(raw_bytes_read),
      cancel_(cancel),
      batch_bytes_(batch_bytes),
      batch_records_(batch_records) {}

Status DocumentReader::Init() {
  for (const InputRecord& in : inputs_) {
    TOKPACK_ASSIGN_OR_RETURN(std::string f, InputFormatFor(in.path, settings_.input_format));
    bool json = f == "jsonl";
    formats_.push_back(json ? RecordFormat::kJsonLine : RecordFormat::kTextDocument);
    per_line_.push_back(json || settings_.text_per_line);
  }
  return Status::Ok();
}

Status DocumentReader::Append(RawBatch* batch, std::string_view text, uint64_t line) {
  if (batch->data.size() + text.size() > std::numeric_limits<uint32_t>::max()) {
    return InvalidArgumentError(inputs_[current_].path + ":" + std::to_string(line) +
                                ": a single record of over 4 GiB");
  }
  batch->data.append(text);
  batch->records.push_back({static_cast<uint32_t>(batch->data.size()), current_, line});
  return Status::Ok();
}

StatusOr<bool> DocumentReader::Next(RawBatch* batch) {
  batch->data.clear();
  batch->records.clear();
  while (batch->data.size() < batch_bytes_ && batch->records.size() < batch_records_) {
    if (!lines_) {
      if (next_file_ == inputs_.size()) break;
      current_ = static_cast<uint32_t>(next_file_++);
      TOKPACK_ASSIGN_OR_RETURN(auto stream,
                               OpenInputStream(inputs_[current_].path, raw_bytes_read_, cancel_));
      if (!per_line_[current_]) {
        // One document per file: the whole (decompressed) file is the record.
        std::string doc;
        TOKPACK_RETURN_IF_ERROR(ReadAll(stream.get(), &doc));
        text_bytes_ += doc.size();
        TOKPACK_RETURN_IF_ERROR(Append(batch, doc, 0));
        continue;
      }
      lines_ = std::make_unique<LineReader>(std::move(stream));
    }
    StatusOr<bool> more = lines_->Next(&line_);
    if (!more.ok()) return more.status();
    if (!*more) {
      lines_.reset();
      continue;
    }
    text_bytes_ += line_.size() + 1;
    if (formats_[current_] == RecordFormat::kJsonLine &&
        line_.find_first_not_of(" \t\r") == std::string::npos) {
      continue;  // Blank JSONL lines carry no record.
    }
    TOKPACK_RETURN_IF_ERROR(Append(batch, line_, lines_->line_number()));
  }
  return !batch->records.empty();
}

}  // namespace tokpack
