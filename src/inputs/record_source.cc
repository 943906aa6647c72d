#include "inputs/record_source.h"

#include <utility>

namespace tokpack {
namespace {

// JSONL lines, or text lines under --text-per-line.
class LineSource : public RecordSource {
 public:
  LineSource(std::unique_ptr<ByteStream> stream, bool json)
      : lines_(std::move(stream)), json_(json) {}

  StatusOr<bool> Next(uint64_t max_bytes, std::string* out, Record* record) override {
    const size_t start = out->size();
    while (true) {
      TOKPACK_ASSIGN_OR_RETURN(bool more, lines_.Next(out, max_bytes, &record->bytes));
      if (!more) return false;
      text_bytes_ += record->bytes + 1;
      // Blank JSONL lines carry no record.
      if (json_ && record->bytes <= max_bytes &&
          out->find_first_not_of(" \t\r", start) == std::string::npos) {
        out->resize(start);
        continue;
      }
      record->number = lines_.line_number();
      record->kind = json_ ? RecordKind::kJsonLine : RecordKind::kText;
      return true;
    }
  }
  uint64_t text_bytes() const override { return text_bytes_; }

 private:
  LineReader lines_;
  bool json_;
  uint64_t text_bytes_ = 0;
};

// A text file that is one document.
class WholeFileSource : public RecordSource {
 public:
  explicit WholeFileSource(std::unique_ptr<ByteStream> stream) : stream_(std::move(stream)) {}

  StatusOr<bool> Next(uint64_t max_bytes, std::string* out, Record* record) override {
    if (!stream_) return false;
    TOKPACK_ASSIGN_OR_RETURN(record->bytes, ReadAll(stream_.get(), out, max_bytes));
    stream_.reset();
    text_bytes_ = record->bytes;
    record->number = 0;
    record->kind = RecordKind::kText;
    return true;
  }
  uint64_t text_bytes() const override { return text_bytes_; }

 private:
  std::unique_ptr<ByteStream> stream_;
  uint64_t text_bytes_ = 0;
};

class CallerTextSource : public RecordSource {
 public:
  CallerTextSource(std::shared_ptr<TextSource> texts, std::atomic<uint64_t>* raw_bytes_read)
      : texts_(std::move(texts)), raw_bytes_read_(raw_bytes_read) {}

  StatusOr<bool> Next(uint64_t max_bytes, std::string* out, Record* record) override {
    if (next_ == batch_.entries.size()) {
      if (done_) return false;
      batch_.Clear();
      next_ = 0;
      TOKPACK_ASSIGN_OR_RETURN(bool more, texts_->Next(kBatchBytes, &batch_));
      if (!more || batch_.entries.empty()) {
        done_ = true;
        return false;
      }
      if (raw_bytes_read_) raw_bytes_read_->fetch_add(batch_.data.size());
      text_bytes_ += batch_.data.size();
    }
    const uint32_t begin = next_ == 0 ? 0 : batch_.entries[next_ - 1].end;
    const TextBatch::Entry& e = batch_.entries[next_++];
    if (e.end < begin || e.end > batch_.data.size()) {
      return InternalError(texts_->name() + ": a text batch with inconsistent offsets");
    }
    record->number = ++count_;
    record->kind = e.bad ? RecordKind::kBad : e.json ? RecordKind::kJsonLine : RecordKind::kText;
    record->bytes = e.end - begin;
    if (e.bad || record->bytes <= max_bytes) out->append(batch_.data, begin, e.end - begin);
    return true;
  }
  uint64_t text_bytes() const override { return text_bytes_; }

 private:
  static constexpr size_t kBatchBytes = 1 << 20;
  std::shared_ptr<TextSource> texts_;
  std::atomic<uint64_t>* raw_bytes_read_;
  TextBatch batch_;
  size_t next_ = 0;
  uint64_t count_ = 0;
  uint64_t text_bytes_ = 0;
  bool done_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<ByteStream>> OpenInputStream(const InputRecord& in,
                                                      const SourceContext& context) {
  return OpenInputStream(in.path, *context.storage, context.raw_bytes_read, context.cancel);
}

std::unique_ptr<RecordSource> LineRecords(std::unique_ptr<ByteStream> stream, bool json) {
  return std::make_unique<LineSource>(std::move(stream), json);
}

std::unique_ptr<RecordSource> WholeStreamRecord(std::unique_ptr<ByteStream> stream) {
  return std::make_unique<WholeFileSource>(std::move(stream));
}

std::unique_ptr<RecordSource> TextRecordSource(std::shared_ptr<TextSource> texts,
                                               const SourceContext& context) {
  return std::make_unique<CallerTextSource>(std::move(texts), context.raw_bytes_read);
}

}  // namespace tokpack
