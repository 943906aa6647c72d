// Input byte streams for the packer: plain files or stdin, with zstd and gzip
// decompression chosen by the stream's magic bytes (not its name), and a line
// splitter. Streams never hold more than a bounded buffer of the input.
// Each stream is used by one thread at a time.
#ifndef TOKPACK_SRC_IO_INPUT_STREAM_H_
#define TOKPACK_SRC_IO_INPUT_STREAM_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads up to `n` bytes into `buf`; 0 means end of stream. Errors name the
  // input (e.g. "corpus/a.jsonl.zst: corrupt zstd frame").
  virtual StatusOr<size_t> Read(char* buf, size_t n) = 0;
};

enum class Compression { kNone, kZstd, kGzip };

// Opens `path` ("-" is stdin), detects compression from the first bytes and
// returns a stream of decompressed bytes. Raw (compressed) bytes consumed are
// added to `*raw_bytes_read` if not null, for progress reporting. While a pipe
// or terminal has no data, Read() fails with Cancelled within ~100 ms of
// `*cancel` (if not null) turning true, so Ctrl-C works on a stalled stdin.
// Object-store URLs are read with `storage`.
StatusOr<std::unique_ptr<ByteStream>> OpenInputStream(const std::string& path,
                                                      const StorageOptions& storage,
                                                      std::atomic<uint64_t>* raw_bytes_read,
                                                      const std::atomic<bool>* cancel = nullptr);

// Splits a stream into lines. A line excludes its "\n" and a "\r" before it;
// the last line need not end in "\n".
class LineReader {
 public:
  explicit LineReader(std::unique_ptr<ByteStream> in);
  // Sets *line to the next line and returns true, or returns false at end.
  StatusOr<bool> Next(std::string* line);
  // 1-based number of the line last returned.
  uint64_t line_number() const { return line_number_; }

 private:
  StatusOr<bool> Fill();

  std::unique_ptr<ByteStream> in_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  uint64_t line_number_ = 0;
};

// Reads the whole remaining stream (a one-document text file).
Status ReadAll(ByteStream* in, std::string* out);

}  // namespace tokpack

#endif  // TOKPACK_SRC_IO_INPUT_STREAM_H_
