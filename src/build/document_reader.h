// DocumentReader: reads the inputs in order and cuts them into RawBatches of
// bounded size. One instance, driven by one thread.
#ifndef TOKPACK_SRC_BUILD_DOCUMENT_READER_H_
#define TOKPACK_SRC_BUILD_DOCUMENT_READER_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "build/batch.h"
#include "io/input_stream.h"
#include "tokpack/manifest.h"
#include "tokpack/status.h"

namespace tokpack {

enum class RecordFormat : uint8_t { kJsonLine, kTextDocument };

class DocumentReader {
 public:
  // A batch is closed once it holds `batch_bytes` of data or `batch_records`
  // records. `raw_bytes_read` (may be null) counts raw input bytes consumed.
  // `cancel` (may be null) interrupts reads from a stalled pipe.
  DocumentReader(std::vector<InputRecord> inputs, const BuildSettings& settings,
                 std::atomic<uint64_t>* raw_bytes_read, const std::atomic<bool>* cancel,
                 size_t batch_bytes = 1 << 20, size_t batch_records = 4096);

  // Resolves each input's record format; fails naming an input whose format
  // cannot be told. Call before Next().
  Status Init();

  // Fills *batch with the next records (seq is set by the caller). Returns
  // false once the inputs are exhausted.
  StatusOr<bool> Next(RawBatch* batch);

  RecordFormat format(uint32_t file) const { return formats_[file]; }
  // Decompressed bytes read so far (records plus their line breaks).
  uint64_t text_bytes() const { return text_bytes_; }
  const std::vector<InputRecord>& inputs() const { return inputs_; }

 private:
  Status Append(RawBatch* batch, std::string_view text, uint64_t line);

  std::vector<InputRecord> inputs_;
  BuildSettings settings_;
  std::atomic<uint64_t>* raw_bytes_read_;
  const std::atomic<bool>* cancel_;
  size_t batch_bytes_;
  size_t batch_records_;
  std::vector<RecordFormat> formats_;
  std::vector<bool> per_line_;
  uint64_t text_bytes_ = 0;
  size_t next_file_ = 0;
  uint32_t current_ = 0;
  std::unique_ptr<LineReader> lines_;
  std::string line_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_BUILD_DOCUMENT_READER_H_
