// RecordSource: the records of one packer input, in order, whatever the
// input is: JSONL or text lines of a (compressed, local or remote) stream, a
// whole text file, a Parquet column, or texts from the caller (TextSource).
// Each source is used by one thread (the DocumentReader's).
#ifndef TOKPACK_SRC_PACKER_RECORD_SOURCE_H_
#define TOKPACK_SRC_PACKER_RECORD_SOURCE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "io/input_files.h"
#include "packer/batch.h"
#include "tokpack/builder.h"
#include "tokpack/manifest.h"
#include "tokpack/status.h"

namespace tokpack {

class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // The next record: its bytes (valid until the next call), its 1-based line
  // or row number (0 for a whole-file document) and kind. False at the end.
  virtual StatusOr<bool> Next(std::string_view* bytes, uint64_t* number, RecordKind* kind) = 0;
  // Decompressed bytes read so far.
  virtual uint64_t text_bytes() const = 0;
};

struct SourceContext {
  const BuildSettings* settings;
  const StorageOptions* storage;          // For object-store inputs.
  std::atomic<uint64_t>* raw_bytes_read;  // May be null.
  const std::atomic<bool>* cancel;        // May be null.
};

// Opens input `in` read as `format`.
StatusOr<std::unique_ptr<RecordSource>> OpenRecordSource(const InputRecord& in, InputFormat format,
                                                         const SourceContext& context);

// Reads the caller's texts; raw_bytes_read counts their bytes.
std::unique_ptr<RecordSource> TextRecordSource(std::shared_ptr<TextSource> texts,
                                               const SourceContext& context);

}  // namespace tokpack

#endif  // TOKPACK_SRC_PACKER_RECORD_SOURCE_H_
