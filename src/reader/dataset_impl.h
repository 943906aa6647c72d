// Dataset::Impl: an opened dataset's shards (or a split's segments of them)
// and the reads over its stream, shared by dataset.cc (opening, documents)
// and dataset_masks.cc (loss masks). Internal to the reader.
#ifndef TOKPACK_SRC_READER_DATASET_IMPL_H_
#define TOKPACK_SRC_READER_DATASET_IMPL_H_

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "format/idx_file.h"
#include "storage/byte_source.h"
#include "tokpack/dataset.h"

namespace tokpack {

// A shard's document-source file, parsed on first use (dataset_sources.cc).
struct SourceFile;
std::shared_ptr<SourceFile> NewSourceFile(std::unique_ptr<ByteSource> src, std::string name,
                                          uint64_t documents, uint64_t input_offset,
                                          uint64_t input_total);

struct Dataset::Impl {
  // A shard, or on a split one of its part's ranges of documents (a segment
  // of the stream; the segments of one shard share its files).
  struct Shard {
    std::shared_ptr<ByteSource> bin;
    std::shared_ptr<ByteSource> idx;
    std::shared_ptr<ByteSource> mask;  // The loss mask (<path>.mask), or null.
    // Document sources (<path>.src), parsed on first use; or null.
    std::shared_ptr<SourceFile> sources;
    IdxView view;          // Points into idx's mapping.
    uint64_t first_token;  // Stream offset of the shard's first token.
    uint64_t first_document;
    // Where the stream's part of the shard begins: a split holds documents
    // [first_entry, ..) of the .idx, tokens [token_base, ..) of the .bin.
    uint64_t first_entry = 0;
    uint64_t token_base = 0;
  };
  std::string path;
  Manifest manifest;
  std::vector<Shard> shards;
  std::vector<uint64_t> token_ends;  // token_ends[k] = first_token of shard k+1.
  std::vector<uint64_t> doc_ends;
  uint64_t fingerprint = 0;
  bool remote = false;
  // The inputs listed in provenance.inputs_file (more than 1000 of them),
  // read on the first lookup that names one (dataset_sources.cc);
  // read_inputs_file reads that file where the dataset lies.
  struct InputList {
    std::once_flag once;
    Status status;
    std::vector<InputRecord> inputs;
  };
  std::shared_ptr<InputList> input_list = std::make_shared<InputList>();
  std::function<StatusOr<std::string>(const std::string& name)> read_inputs_file;
  uint64_t cache_bytes = 0;  // Remote: the chunk cache's limit.
  std::string cache_dir;     // StorageOptions::cache_dir as opened.
  bool has_manifest = true;
  bool has_masks = false;  // Every shard has a loss mask (the manifest's rule).

  // Narrows the dataset to part options.split_index of options.split: its
  // runs of documents (split_ranges.h), each maximal range of them a segment
  // in `shards` and `manifest.shards`; the stream, the manifest's counts and
  // the fingerprint become the part's.
  Status ApplySplit(const DatasetOptions& options);

  // Loss masks (dataset_masks.cc). Dataset::ReadLossMask:
  Status ReadMask(uint64_t begin, uint64_t count, uint8_t* out, ReadStats* stats) const;
  // Segment k's trainable tokens, for a split's manifest: counted in a local
  // mask; a remote one is not read at open, so its shard's count is scaled
  // to the segment's tokens.
  uint64_t SegmentTrainable(size_t k, const ShardInfo& whole) const;

  // OutOfRange unless [begin, begin + count) lies in the stream.
  Status CheckRange(uint64_t begin, uint64_t count) const {
    const uint64_t total = token_ends.empty() ? 0 : token_ends.back();
    if (begin > total || count > total - begin) {
      return OutOfRangeError(path + ": tokens [" + std::to_string(begin) + ", " +
                             std::to_string(begin + count) + ") past the end of " +
                             std::to_string(total) + " tokens");
    }
    return Status::Ok();
  }

  // Index of the shard holding stream token `t` (t < total).
  size_t ShardOfToken(uint64_t t) const {
    return std::upper_bound(token_ends.begin(), token_ends.end(), t) - token_ends.begin();
  }

  // Calls part(shard, local, n) for each shard's part of stream tokens
  // [begin, begin + count), in order: n tokens from token `local` of the
  // shard's files. Stops at the first error `part` returns.
  template <typename Part>
  Status ForEachShardPart(uint64_t begin, uint64_t count, Part&& part) const {
    TOKPACK_RETURN_IF_ERROR(CheckRange(begin, count));
    size_t k = count ? ShardOfToken(begin) : 0;
    while (count > 0) {
      const Shard& s = shards[k];
      const uint64_t n = std::min(count, token_ends[k] - begin);
      TOKPACK_RETURN_IF_ERROR(part(s, begin - s.first_token + s.token_base, n));
      begin += n;
      count -= n;
      ++k;
    }
    return Status::Ok();
  }

  // Calls sink(src, n) for each run of n stored tokens of [begin, begin +
  // count), in order; src points into the mapping of a local file or of a
  // cached remote chunk (no copy), or, for a token split between two
  // chunks, into a per-call buffer.
  template <typename Sink>
  Status ForEachRun(uint64_t begin, uint64_t count, ReadStats* stats, Sink&& sink) const {
    const int item = TokenDtypeSize(manifest.dtype);
    return ForEachShardPart(begin, count, [&](const Shard& s, uint64_t local, uint64_t n) {
      if (const char* mapped = s.bin->data()) {
        sink(mapped + local * item, n);
        return Status::Ok();
      }
      return ForEachView(*s.bin, local * item, n * item, item, stats, sink);
    });
  }

  // ForEachRun over bytes [offset, offset + bytes) of a source that is not
  // memory-resident: one run per view (per chunk of a remote file).
  template <typename Sink>
  static Status ForEachView(const ByteSource& bin, uint64_t offset, uint64_t bytes, int item,
                            ReadStats* stats, Sink& sink) {
    while (bytes > 0) {
      TOKPACK_ASSIGN_OR_RETURN(ByteView v, bin.View(offset, bytes, stats));
      uint64_t take = v.size / item * item;
      if (take > 0) {
        sink(v.data.get(), take / item);
      } else {
        // A token split between chunks (chunk_bytes not a multiple of it).
        char token[8];
        TOKPACK_RETURN_IF_ERROR(bin.ReadCounted(offset, item, token, stats));
        sink(token, 1);
        take = item;
      }
      offset += take;
      bytes -= take;
    }
    return Status::Ok();
  }

  // Widens the n tokens of type D at src into out: in unrolled blocks of a
  // fixed size, then the rest one by one. A plain loop ran 40% slower per
  // window when the layout of the code put it across a 32-byte boundary;
  // unrolled, its speed no longer hangs on that.
  template <TokenDtype D, typename T>
  static void Widen(const char* src, uint64_t n, T* out) {
    constexpr uint64_t kItem = D == TokenDtype::kUInt16 ? 2 : 4, kBlock = 16;
    uint64_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {
#pragma GCC unroll 16
      for (uint64_t j = 0; j < kBlock; ++j) {
        out[i + j] = static_cast<T>(LoadToken(src + kItem * (i + j), D));
      }
    }
    for (; i < n; ++i) out[i] = static_cast<T>(LoadToken(src + kItem * i, D));
  }

  template <typename T>
  Status Read(uint64_t begin, uint64_t count, T* out, ReadStats* stats) const {
    // The dtype is fixed per loop so each loop inlines to a widening copy.
    if (manifest.dtype == TokenDtype::kUInt16) {
      return ForEachRun(begin, count, stats, [&out](const char* src, uint64_t n) {
        Widen<TokenDtype::kUInt16>(src, n, out);
        out += n;
      });
    }
    return ForEachRun(begin, count, stats, [&out](const char* src, uint64_t n) {
      Widen<TokenDtype::kInt32>(src, n, out);
      out += n;
    });
  }

  Status ReadStored(uint64_t begin, uint64_t count, void* out, ReadStats* stats) const {
    char* dst = static_cast<char*>(out);
    const int item = TokenDtypeSize(manifest.dtype);
    return ForEachRun(begin, count, stats, [&dst, item](const char* src, uint64_t n) {
      std::memcpy(dst, src, n * item);
      dst += n * item;
    });
  }
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_DATASET_IMPL_H_
