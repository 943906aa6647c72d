// DocumentReader: reads the inputs in order, each through its RecordSource,
// and cuts them into RawBatches of bounded size. One instance, driven by one
// thread.
#ifndef TOKPACK_SRC_BUILD_DOCUMENT_READER_H_
#define TOKPACK_SRC_BUILD_DOCUMENT_READER_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "build/batch.h"
#include "inputs/input_formats.h"
#include "inputs/record_source.h"
#include "tokpack/builder.h"
#include "tokpack/cancel.h"
#include "tokpack/manifest.h"
#include "tokpack/status.h"

namespace tokpack {

class DocumentReader {
 public:
  // Reads `inputs`, or `texts` when not null (then `inputs` names it). A
  // batch is closed once it holds `batch_bytes` of data or `batch_records`
  // records. A record of more than `max_document_bytes` is never held: it
  // becomes a bad record saying so (the one place that limit is applied).
  // `raw_bytes_read` (may be null) counts raw input bytes consumed. `cancel`
  // (may be null) interrupts reads from a stalled pipe. Object-store inputs
  // are read with `storage`.
  DocumentReader(std::vector<InputRecord> inputs, std::shared_ptr<TextSource> texts,
                 const BuildSettings& settings, const StorageOptions& storage,
                 std::atomic<uint64_t>* raw_bytes_read, const CancelFlag& cancel,
                 uint64_t max_document_bytes, size_t batch_bytes = 1 << 20,
                 size_t batch_records = 4096);

  // Resolves each input's format; fails naming an input whose format cannot
  // be told. Call before Next().
  Status Init();

  // Fills *batch with the next records (seq is set by the caller) and seals
  // it (RawBatch::Seal). Holds at most batch_bytes + max_document_bytes of
  // data. Returns false once the inputs are exhausted.
  StatusOr<bool> Next(RawBatch* batch);

  // Decompressed bytes read so far.
  uint64_t text_bytes() const { return text_bytes_ + (source_ ? source_->text_bytes() : 0); }
  const std::vector<InputRecord>& inputs() const { return inputs_; }

 private:
  std::vector<InputRecord> inputs_;
  std::shared_ptr<TextSource> texts_;
  BuildSettings settings_;
  StorageOptions storage_;
  SourceContext context_;
  uint64_t max_document_bytes_;
  size_t batch_bytes_;
  size_t batch_records_;
  std::vector<const InputFormat*> formats_;
  uint64_t text_bytes_ = 0;  // Of the sources already finished.
  size_t next_file_ = 0;
  uint32_t current_ = 0;
  std::unique_ptr<RecordSource> source_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_BUILD_DOCUMENT_READER_H_
