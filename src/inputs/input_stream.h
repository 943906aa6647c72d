// Input byte streams for the packer: plain files or stdin, with zstd and gzip
// decompression chosen by the stream's magic bytes (not its name), and a line
// splitter. Streams never hold more than a bounded buffer of the input.
// Each stream is used by one thread at a time.
#ifndef TOKPACK_SRC_INPUTS_INPUT_STREAM_H_
#define TOKPACK_SRC_INPUTS_INPUT_STREAM_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokpack/cancel.h"
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
                                                      const CancelFlag& cancel = nullptr);

// Splits a stream into lines. A line excludes its "\n" and a "\r" before it;
// the last line need not end in "\n". The reader holds one read buffer
// (256 KiB) of the stream, never a whole line: each line goes straight into
// the caller's string, and a line over the caller's limit is read through
// without being kept, so one huge line costs no memory.
class LineReader {
 public:
  explicit LineReader(std::unique_ptr<ByteStream> in);
  // Reads the next line and sets *line_bytes to its length. Appends it to
  // *out if it is at most `max_bytes` long; a longer line is read to its end
  // and dropped, leaving *out as it was. Returns false at the end.
  StatusOr<bool> Next(std::string* out, uint64_t max_bytes, uint64_t* line_bytes);
  // 1-based number of the line last returned.
  uint64_t line_number() const { return line_number_; }

 private:
  Status Fill();

  std::unique_ptr<ByteStream> in_;
  std::vector<char> buf_;
  size_t pos_ = 0;  // Next unread byte of buf_.
  size_t end_ = 0;  // End of the bytes read into buf_.
  bool eof_ = false;
  uint64_t line_number_ = 0;
};

// Appends the rest of the stream (a one-document text file) to *out and
// returns its length, if it is at most `max_bytes` long. A longer stream is
// read only until it is known to be longer: then *out is left as it was and
// the result is max_bytes + 1.
StatusOr<uint64_t> ReadAll(ByteStream* in, std::string* out, uint64_t max_bytes = UINT64_MAX);

}  // namespace tokpack

#endif  // TOKPACK_SRC_INPUTS_INPUT_STREAM_H_
