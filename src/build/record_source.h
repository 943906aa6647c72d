// RecordSource: the records of one packer input, in order, whatever the
// input is: JSONL or text lines of a (compressed, local or remote) stream, a
// whole text file, a Parquet column, or texts from the caller (TextSource).
// Each source is used by one thread (the DocumentReader's).
#ifndef TOKPACK_SRC_BUILD_RECORD_SOURCE_H_
#define TOKPACK_SRC_BUILD_RECORD_SOURCE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "build/batch.h"
#include "inputs/input_files.h"
#include "tokpack/builder.h"
#include "tokpack/cancel.h"
#include "tokpack/manifest.h"
#include "tokpack/status.h"

namespace tokpack {

class RecordSource {
 public:
  struct Record {
    uint64_t number = 0;  // 1-based line or row number (0 for a whole-file document).
    RecordKind kind = RecordKind::kText;
    uint64_t bytes = 0;  // Its length.
  };
  virtual ~RecordSource() = default;
  // Reads the next record and appends its bytes to *out; false at the end.
  // A text or JSONL record of more than `max_bytes` is not appended (*out is
  // left as it was) and record->bytes is more than max_bytes: the source
  // reads past it without holding it whole (a line or file) or without
  // copying it (a Parquet value or a caller's text). A bad record's reason
  // is always appended.
  virtual StatusOr<bool> Next(uint64_t max_bytes, std::string* out, Record* record) = 0;
  // Decompressed bytes read so far.
  virtual uint64_t text_bytes() const = 0;
};

struct SourceContext {
  const BuildSettings* settings;
  const StorageOptions* storage;          // For object-store inputs.
  std::atomic<uint64_t>* raw_bytes_read;  // May be null.
  CancelFlag cancel;                      // May be null.
  uint64_t max_document_bytes;            // BuildOptions::max_document_bytes.
};

// Opens input `in` read as `format`.
StatusOr<std::unique_ptr<RecordSource>> OpenRecordSource(const InputRecord& in, InputFormat format,
                                                         const SourceContext& context);

// Reads the caller's texts; raw_bytes_read counts their bytes.
std::unique_ptr<RecordSource> TextRecordSource(std::shared_ptr<TextSource> texts,
                                               const SourceContext& context);

}  // namespace tokpack

#endif  // TOKPACK_SRC_BUILD_RECORD_SOURCE_H_
