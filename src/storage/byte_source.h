// ByteSource: the one interface through which the reader gets bytes of a
// shard file, so local memory-mapped files and (later) cached remote objects
// look the same. Implementations are immutable once opened and must be safe
// for concurrent reads from many threads.
#ifndef TOKPACK_SRC_STORAGE_BYTE_SOURCE_H_
#define TOKPACK_SRC_STORAGE_BYTE_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack {

// Bytes [offset, offset + size) of a ByteSource; they stay valid while
// `data` (which pins what holds them: a mapping, a buffer) lives.
struct ByteView {
  std::shared_ptr<const char> data;
  uint64_t size = 0;
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // A pointer to all size() bytes when the source is memory-resident (a
  // mapping), else null; valid for the source's lifetime.
  virtual const char* data() const = 0;
  // Copies [offset, offset + n) into dst. OutOfRange past the end; errors
  // name the file.
  virtual Status Read(uint64_t offset, uint64_t n, char* dst) const = 0;
  // As Read; a remote source counts its cache hits and downloads in
  // `*stats` (may be null), others ignore it.
  virtual Status ReadCounted(uint64_t offset, uint64_t n, char* dst, ReadStats* /*stats*/) const {
    return Read(offset, n, dst);
  }
  // A view of [offset, offset + m) for some m in [1, n] (empty when n is
  // 0), counted as ReadCounted: a remote source gives the bytes up to the
  // end of the chunk that holds `offset`, straight from the cache's
  // mapping. This default copies the n bytes into a buffer that the view
  // owns (memory-resident sources are read in place, through data()).
  virtual StatusOr<ByteView> View(uint64_t offset, uint64_t n, ReadStats* stats) const {
    auto bytes = std::make_shared<std::string>(n, '\0');
    TOKPACK_RETURN_IF_ERROR(ReadCounted(offset, n, bytes->data(), stats));
    return ByteView{std::shared_ptr<const char>(bytes, bytes->data()), n};
  }
  virtual const std::string& name() const = 0;
  // A hint that [offset, offset + n) will be read at step `step`: remote
  // sources fetch it in the background, smallest step first, counting in
  // `*stats` (may be null; kept alive until the fetch is done). Never
  // blocks; errors surface in Read().
  virtual void Prefetch(uint64_t /*offset*/, uint64_t /*n*/, int64_t /*step*/,
                        const std::shared_ptr<ReadStats>& /*stats*/) const {}
};

// Maps a local file read-only (Boost.Interprocess). An empty file is a valid
// source of size 0. NotFound / IoError name the path.
StatusOr<std::unique_ptr<ByteSource>> OpenMappedFile(const std::string& path);

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_BYTE_SOURCE_H_
