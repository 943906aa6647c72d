// The units of work that flow through the packer: RawBatch (records read, in
// input order) and EncodedBatch (their tokens). Plain data.
#ifndef TOKPACK_SRC_BUILD_BATCH_H_
#define TOKPACK_SRC_BUILD_BATCH_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/record_source.h"
#include "tokpack/status.h"
#include "tokpack/tokenizer.h"

namespace tokpack {

// A run of consecutive input records: JSONL lines, texts or bad records.
struct RawBatch {
  // Bytes after the last record, so that the JSON parser reads any record in
  // place (it reads up to 64 bytes past the end) instead of copying it.
  static constexpr size_t kPadding = 64;

  uint64_t seq = 0;  // Position in the input order; the writer restores it.
  std::string data;  // Records back to back, then kPadding bytes once sealed.
  struct Record {
    uint32_t end;   // Offset one past the record in `data`.
    uint32_t file;  // Index into the input list.
    uint64_t line;  // 1-based line or row number (0 for a whole-file document).
    RecordKind kind;
    // A Parquet row's id: ids[previous id_end, id_end) when has_id.
    uint32_t id_end = 0;
    bool has_id = false;
  };
  std::vector<Record> records;
  std::string ids;  // Ids given beside records' texts, back to back.

  std::string_view id(size_t i) const {
    const uint32_t begin = i == 0 ? 0 : records[i - 1].id_end;
    return std::string_view(ids).substr(begin, records[i].id_end - begin);
  }

  std::string_view text(size_t i) const {
    uint32_t begin = i == 0 ? 0 : records[i - 1].end;
    return std::string_view(data).substr(begin, records[i].end - begin);
  }
  // Appends the padding; call once the last record is in.
  void Seal() { data.append(kPadding, ' '); }
  bool sealed() const {
    return records.empty() || data.size() >= size_t{records.back().end} + kPadding;
  }
};

// Why a record produced no document.
enum class Drop : uint8_t {
  kEmpty,        // No tokens.
  kBadLine,      // Malformed JSON, missing, null or non-string text, or
                 // invalid UTF-8 under --invalid-utf8=error.
  kInvalidUtf8,  // Skipped under --invalid-utf8=skip.
  kFailed,       // The tokenizer failed on it (e.g. out of memory): the build
                 // fails naming the record, whatever the bad-line policy.
};

struct EncodedBatch {
  uint64_t seq = 0;
  uint64_t input_bytes = 0;          // Of the RawBatch it was made from.
  std::string tokens;                // All documents' tokens in the shard dtype.
  std::vector<uint32_t> doc_tokens;  // Token count of each document, in order.
  // With loss masks: one byte per token of `tokens`, 1 where it carries loss.
  std::string loss;
  // With document sources: where each document came from, in order; its id
  // is ids[id_begin, id_end) when has_id.
  struct Origin {
    uint32_t file;
    uint64_t line;
    uint32_t id_begin;
    uint32_t id_end;
    bool has_id;
  };
  std::vector<Origin> origins;
  std::string ids;
  uint64_t utf8_repaired = 0;  // Documents written whose invalid UTF-8 was replaced.
  EncodeCounts counts;         // Unknown and byte-fallback tokens written, cache use.
  struct Dropped {
    uint32_t record;  // Index of the record in its RawBatch.
    Drop why;
    std::string message;  // For kBadLine and kFailed: what is wrong.
    StatusCode code;      // For kFailed: the tokenizer's error code.
    uint32_t file;
    uint64_t line;
  };
  std::vector<Dropped> dropped;  // In record order.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_BUILD_BATCH_H_
