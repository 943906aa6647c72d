// Dataset::Impl: an opened dataset's shards (or a split's segments of them)
// and the reads over its stream, shared by dataset.cc (opening, documents),
// dataset_masks.cc (loss masks) and dataset_removals.cc (removed documents).
// Internal to the reader.
#ifndef TOKPACK_SRC_READER_DATASET_IMPL_H_
#define TOKPACK_SRC_READER_DATASET_IMPL_H_

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
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
  // The removed documents of one shard (removed.json, docs/format.md 17), in
  // the shard's own numbering; the segments of a split share it.
  struct ShardRemovals {
    std::vector<uint64_t> entries;  // Their .idx entries, increasing.
    // Their tokens in the .bin: disjoint [first, second), increasing, with
    // adjacent documents' ranges joined.
    std::vector<std::pair<uint64_t, uint64_t>> tokens;
  };
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
    // Its removed documents; null when none of its (segment's) are.
    std::shared_ptr<const ShardRemovals> removed;
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
  // Removed documents of the stream (of a split: of its part); while 0,
  // reads take no step for them.
  uint64_t num_removed = 0;
  int64_t pad = 0;  // What a removed token reads as (Dataset::pad_token()).

  // Narrows the dataset to part options.split_index of options.split: its
  // runs of documents (split_ranges.h), each maximal range of them a segment
  // in `shards` and `manifest.shards`; the stream, the manifest's counts and
  // the fingerprint become the part's.
  Status ApplySplit(const DatasetOptions& options);

  // Removed documents (dataset_removals.cc). Applies the removed.json text
  // read from `source` (of the whole dataset, before ApplySplit) to the
  // shards; errors name `source`.
  Status ApplyRemovals(std::string_view text, const std::string& source);
  // Keeps on each shard (segment) only removals inside it, and counts them.
  void CountRemovals();
  // Whether document `entry` of shards[k]'s .idx is removed.
  bool IsRemoved(size_t k, uint64_t entry) const;

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
  // Index of the shard (or segment) holding document `i` (i < documents).
  size_t ShardOfDocument(uint64_t i) const {
    return std::upper_bound(doc_ends.begin(), doc_ends.end(), i) - doc_ends.begin();
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

  // Calls blank(at, n) for each run of n removed tokens among stream tokens
  // [begin, begin + count) (a range a read has checked), in order; `at`
  // counts from `begin`. O(log removed ranges) per shard part.
  template <typename Blank>
  void ForEachRemoved(uint64_t begin, uint64_t count, Blank&& blank) const {
    uint64_t at = 0;
    for (size_t k = count ? ShardOfToken(begin) : 0; at < count; ++k) {
      const Shard& s = shards[k];
      const uint64_t n = std::min(count - at, token_ends[k] - (begin + at));
      if (s.removed) {
        const uint64_t lo = begin + at - s.first_token + s.token_base, hi = lo + n;
        const auto& ranges = s.removed->tokens;
        auto it = std::upper_bound(ranges.begin(), ranges.end(), lo,
                                   [](uint64_t t, const auto& r) { return t < r.second; });
        for (; it != ranges.end() && it->first < hi; ++it) {
          const uint64_t a = std::max(it->first, lo), b = std::min(it->second, hi);
          blank(at + (a - lo), b - a);
        }
      }
      at += n;
    }
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
    T* at = out;
    Status read;
    // The dtype is fixed per loop so each loop inlines to a widening copy.
    if (manifest.dtype == TokenDtype::kUInt16) {
      read = ForEachRun(begin, count, stats, [&at](const char* src, uint64_t n) {
        Widen<TokenDtype::kUInt16>(src, n, at);
        at += n;
      });
    } else {
      read = ForEachRun(begin, count, stats, [&at](const char* src, uint64_t n) {
        Widen<TokenDtype::kInt32>(src, n, at);
        at += n;
      });
    }
    TOKPACK_RETURN_IF_ERROR(read);
    // One branch per read, none per run, while nothing is removed.
    if (num_removed != 0) {
      ForEachRemoved(begin, count, [out, this](uint64_t i, uint64_t n) {
        std::fill_n(out + i, n, static_cast<T>(pad));
      });
    }
    return Status::Ok();
  }

  Status ReadStored(uint64_t begin, uint64_t count, void* out, ReadStats* stats) const {
    char* dst = static_cast<char*>(out);
    const int item = TokenDtypeSize(manifest.dtype);
    TOKPACK_RETURN_IF_ERROR(
        ForEachRun(begin, count, stats, [&dst, item](const char* src, uint64_t n) {
          std::memcpy(dst, src, n * item);
          dst += n * item;
        }));
    if (num_removed != 0) {
      // The pad id as stored: little-endian, of the dataset's width.
      char padded[4];
      for (int b = 0; b < 4; ++b) {
        padded[b] = static_cast<char>(static_cast<uint64_t>(pad) >> 8 * b);
      }
      char* base = static_cast<char*>(out);
      ForEachRemoved(begin, count, [&](uint64_t i, uint64_t n) {
        for (uint64_t j = i; j < i + n; ++j) std::memcpy(base + j * item, padded, item);
      });
    }
    return Status::Ok();
  }
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_DATASET_IMPL_H_
