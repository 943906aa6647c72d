#include "inputs/input_stream.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "inputs/remote_input.h"
#include "storage/object_url.h"

namespace tokpack {
namespace {

constexpr size_t kReadChunk = 1 << 18;

class FdStream : public ByteStream {
 public:
  FdStream(int fd, bool owned, std::string name, std::atomic<uint64_t>* counter,
           const CancelFlag& cancel)
      : fd_(fd), owned_(owned), name_(std::move(name)), counter_(counter) {
    struct stat st;
    // Regular files never block for long; only pipes, sockets and ttys are polled.
    if (cancel && ::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) cancel_ = cancel;
  }
  ~FdStream() override {
    if (owned_) ::close(fd_);
  }

  StatusOr<size_t> Read(char* buf, size_t n) override {
    while (true) {
      if (cancel_) TOKPACK_RETURN_IF_ERROR(WaitReadable());
      ssize_t r = ::read(fd_, buf, n);
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, "read", name_);
      }
      if (counter_) counter_->fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
      return static_cast<size_t>(r);
    }
  }

 private:
  Status WaitReadable() {
    pollfd p{fd_, POLLIN, 0};
    while (true) {
      if (cancel_->load(std::memory_order_relaxed)) return CancelledError("build interrupted");
      int r = ::poll(&p, 1, 100);
      if (r > 0) return Status::Ok();
      if (r < 0 && errno != EINTR) return ErrnoToStatus(errno, "poll", name_);
    }
  }

  int fd_;
  bool owned_;
  std::string name_;
  std::atomic<uint64_t>* counter_;
  CancelFlag cancel_;
};

// Serves bytes peeked for format detection again, then the rest of `source`.
class PeekedStream : public ByteStream {
 public:
  PeekedStream(std::string head, std::unique_ptr<ByteStream> source)
      : head_(std::move(head)), source_(std::move(source)) {}

  StatusOr<size_t> Read(char* buf, size_t n) override {
    if (pos_ < head_.size()) {
      const size_t take = std::min(n, head_.size() - pos_);
      std::memcpy(buf, head_.data() + pos_, take);
      pos_ += take;
      return take;
    }
    return source_->Read(buf, n);
  }

 private:
  std::string head_;
  size_t pos_ = 0;
  std::unique_ptr<ByteStream> source_;
};

class ZstdStream : public ByteStream {
 public:
  ZstdStream(std::unique_ptr<ByteStream> source, std::string name)
      : source_(std::move(source)),
        name_(std::move(name)),
        dctx_(ZSTD_createDCtx()),
        inbuf_(ZSTD_DStreamInSize()) {}
  ~ZstdStream() override { ZSTD_freeDCtx(dctx_); }

  StatusOr<size_t> Read(char* buf, size_t n) override {
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos == 0) {
      if (in_.pos == in_.size) {
        if (source_eof_) {
          if (frame_open_) return DataLossError(name_ + ": truncated zstd stream");
          return size_t{0};
        }
        TOKPACK_ASSIGN_OR_RETURN(size_t r, source_->Read(inbuf_.data(), inbuf_.size()));
        if (r == 0) {
          source_eof_ = true;
          continue;
        }
        in_ = ZSTD_inBuffer{inbuf_.data(), r, 0};
      }
      size_t ret = ZSTD_decompressStream(dctx_, &out, &in_);
      if (ZSTD_isError(ret)) {
        return DataLossError(name_ + ": corrupt zstd data (" + ZSTD_getErrorName(ret) + ")");
      }
      frame_open_ = ret != 0;
    }
    return out.pos;
  }

 private:
  std::unique_ptr<ByteStream> source_;
  std::string name_;
  ZSTD_DCtx* dctx_;
  std::vector<char> inbuf_;
  ZSTD_inBuffer in_{nullptr, 0, 0};
  bool source_eof_ = false;
  bool frame_open_ = false;
};

// Gzip, including files of several concatenated members (as `cat a.gz b.gz`).
class GzipStream : public ByteStream {
 public:
  GzipStream(std::unique_ptr<ByteStream> source, std::string name)
      : source_(std::move(source)), name_(std::move(name)), inbuf_(kReadChunk) {
    std::memset(&z_, 0, sizeof(z_));
    init_ok_ = inflateInit2(&z_, 16 + MAX_WBITS) == Z_OK;
  }
  ~GzipStream() override { inflateEnd(&z_); }

  StatusOr<size_t> Read(char* buf, size_t n) override {
    if (!init_ok_) return InternalError(name_ + ": zlib initialization failed");
    z_.next_out = reinterpret_cast<Bytef*>(buf);
    z_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    while (z_.next_out == reinterpret_cast<Bytef*>(buf)) {
      if (z_.avail_in == 0) {
        if (source_eof_) {
          if (member_open_) return DataLossError(name_ + ": truncated gzip stream");
          return size_t{0};
        }
        TOKPACK_ASSIGN_OR_RETURN(size_t r, source_->Read(inbuf_.data(), inbuf_.size()));
        if (r == 0) {
          source_eof_ = true;
          continue;
        }
        z_.next_in = reinterpret_cast<Bytef*>(inbuf_.data());
        z_.avail_in = static_cast<uInt>(r);
      }
      member_open_ = true;
      int ret = inflate(&z_, Z_NO_FLUSH);
      if (ret == Z_STREAM_END) {
        member_open_ = false;
        inflateReset(&z_);
      } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
        return DataLossError(name_ + ": corrupt gzip data (" +
                             (z_.msg ? z_.msg : "zlib error " + std::to_string(ret)) + ")");
      }
    }
    return static_cast<size_t>(z_.next_out - reinterpret_cast<Bytef*>(buf));
  }

 private:
  std::unique_ptr<ByteStream> source_;
  std::string name_;
  std::vector<char> inbuf_;
  z_stream z_;
  bool init_ok_ = false;
  bool source_eof_ = false;
  bool member_open_ = false;
};

Compression Detect(const std::string& head) {
  const auto u = [&](size_t i) { return static_cast<unsigned char>(head[i]); };
  if (head.size() >= 4 && u(0) == 0x28 && u(1) == 0xB5 && u(2) == 0x2F && u(3) == 0xFD) {
    return Compression::kZstd;
  }
  if (head.size() >= 2 && u(0) == 0x1F && u(1) == 0x8B) return Compression::kGzip;
  return Compression::kNone;
}

}  // namespace

StatusOr<std::unique_ptr<ByteStream>> OpenInputStream(const std::string& path,
                                                      const StorageOptions& storage,
                                                      std::atomic<uint64_t>* raw_bytes_read,
                                                      const CancelFlag& cancel) {
  const bool is_stdin = path == "-";
  const std::string name = is_stdin ? "<stdin>" : path;
  std::unique_ptr<ByteStream> raw;
  if (IsRemoteUrl(path)) {
    TOKPACK_ASSIGN_OR_RETURN(raw, OpenRemoteStream(path, storage, raw_bytes_read, cancel));
  } else {
    int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoToStatus(errno, "open", path);
    raw = std::make_unique<FdStream>(fd, !is_stdin, name, raw_bytes_read, cancel);
  }

  // Peek up to 4 bytes; a short read before EOF is retried.
  std::string head(4, '\0');
  size_t got = 0;
  while (got < head.size()) {
    TOKPACK_ASSIGN_OR_RETURN(size_t r, raw->Read(head.data() + got, head.size() - got));
    if (r == 0) break;
    got += r;
  }
  head.resize(got);
  Compression c = Detect(head);
  raw = std::make_unique<PeekedStream>(std::move(head), std::move(raw));
  switch (c) {
    case Compression::kZstd:
      return std::unique_ptr<ByteStream>(new ZstdStream(std::move(raw), name));
    case Compression::kGzip:
      return std::unique_ptr<ByteStream>(new GzipStream(std::move(raw), name));
    case Compression::kNone:
      break;
  }
  return std::unique_ptr<ByteStream>(std::move(raw));
}

LineReader::LineReader(std::unique_ptr<ByteStream> in) : in_(std::move(in)), buf_(kReadChunk) {}

Status LineReader::Fill() {
  TOKPACK_ASSIGN_OR_RETURN(size_t r, in_->Read(buf_.data(), buf_.size()));
  pos_ = 0;
  end_ = r;
  eof_ = r == 0;
  return Status::Ok();
}

StatusOr<bool> LineReader::Next(std::string* out, uint64_t max_bytes, uint64_t* line_bytes) {
  const size_t start = out->size();
  // Kept while at most max_bytes + 1 long: the last byte may be a "\r" that
  // the line does not include.
  const uint64_t keep = max_bytes == UINT64_MAX ? max_bytes : max_bytes + 1;
  uint64_t n = 0;
  bool seen = false;  // Any byte (or the "\n") of this line.
  char last = 0;
  while (true) {
    if (pos_ == end_) {
      if (!eof_) TOKPACK_RETURN_IF_ERROR(Fill());
      if (eof_) {
        if (!seen) return false;
        break;
      }
    }
    seen = true;
    const char* p = buf_.data() + pos_;
    const size_t avail = end_ - pos_;
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', avail));
    const size_t take = nl ? static_cast<size_t>(nl - p) : avail;
    if (take > 0) {
      if (n + take <= keep) {
        out->append(p, take);
      } else if (n <= keep) {
        out->resize(start);  // Over the limit: stop holding it.
      }
      n += take;
      last = p[take - 1];
    }
    pos_ += take + (nl ? 1 : 0);
    if (nl) break;
  }
  if (last == '\r') {
    --n;
    if (n + 1 <= keep) out->pop_back();
  }
  if (n > max_bytes) out->resize(start);
  *line_bytes = n;
  ++line_number_;
  return true;
}

StatusOr<uint64_t> ReadAll(ByteStream* in, std::string* out, uint64_t max_bytes) {
  const size_t start = out->size();
  uint64_t n = 0;
  while (true) {
    // Never past max_bytes + 1: enough to tell that the stream is longer.
    const uint64_t room = max_bytes - n;
    const size_t chunk = room >= kReadChunk ? kReadChunk : static_cast<size_t>(room + 1);
    out->resize(start + n + chunk);
    StatusOr<size_t> r = in->Read(out->data() + start + n, chunk);
    if (!r.ok()) {
      out->resize(start);
      return r.status();
    }
    n += *r;
    out->resize(start + n);
    if (n > max_bytes) {
      out->resize(start);
      return n;
    }
    if (*r == 0) return n;
  }
}

}  // namespace tokpack
