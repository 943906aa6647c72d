// RecordSource: the records of one packer input, in order, whatever the
// input is: what an input format's open (input_formats.h) returns, and what
// the build's DocumentReader reads. Also the stock sources a format is made
// of: the lines of a (compressed, local or remote) stream, a whole stream as
// one document, and texts from the caller (TextSource). Each source is used
// by one thread (the DocumentReader's).
#ifndef TOKPACK_SRC_INPUTS_RECORD_SOURCE_H_
#define TOKPACK_SRC_INPUTS_RECORD_SOURCE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "inputs/input_stream.h"
#include "tokpack/cancel.h"
#include "tokpack/manifest.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"
#include "tokpack/text_source.h"

namespace tokpack {

// What a record's bytes are.
enum class RecordKind : uint8_t {
  kJsonLine,  // A JSONL line; the text is a field of it.
  kText,      // The document text itself.
  kBad,       // Why the record holds no text (a null Parquet value, a
              // Python None); a bad line, like malformed JSON.
};

class RecordSource {
 public:
  struct Record {
    uint64_t number = 0;  // 1-based line or row number (0 for a whole-file document).
    RecordKind kind = RecordKind::kText;
    uint64_t bytes = 0;  // Its length.
    // A text record's id from a column beside its text (Parquet's
    // --id-key), valid until the next Next(); JSONL ids are read from the
    // record by the encoder instead.
    bool has_id = false;
    std::string_view id;
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

// What opening an input may use.
struct SourceContext {
  const BuildSettings* settings;
  const StorageOptions* storage;          // For object-store inputs.
  std::atomic<uint64_t>* raw_bytes_read;  // May be null.
  CancelFlag cancel;                      // May be null.
  uint64_t max_document_bytes;            // BuildOptions::max_document_bytes.
};

// The decompressed stream of input `in` (a local file, an object URL or "-"),
// counting its raw bytes and honoring the cancel flag of `context`.
StatusOr<std::unique_ptr<ByteStream>> OpenInputStream(const InputRecord& in,
                                                      const SourceContext& context);

// Each line of `stream` a record: a JSONL line (`json`; blank lines carry no
// record) or a text.
std::unique_ptr<RecordSource> LineRecords(std::unique_ptr<ByteStream> stream, bool json);

// All of `stream` one text record (number 0).
std::unique_ptr<RecordSource> WholeStreamRecord(std::unique_ptr<ByteStream> stream);

// Reads the caller's texts; raw_bytes_read counts their bytes.
std::unique_ptr<RecordSource> TextRecordSource(std::shared_ptr<TextSource> texts,
                                               const SourceContext& context);

}  // namespace tokpack

#endif  // TOKPACK_SRC_INPUTS_RECORD_SOURCE_H_
