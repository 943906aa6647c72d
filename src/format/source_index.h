// Document sources: <shard>.src, the sidecar that says where each document of
// a shard came from (docs/format.md 3.2): its input (an index into the
// manifest's inputs), its record there (line, Parquet row or item number)
// and, when the input gave one, its id. SourceIndexWriter makes the file;
// SourceHeader and the decoders below read it. Every byte is untrusted on
// read: ParseSourceHeader, ParseRuns and DecodeIdBlock check what they read
// and their errors name the file.
//
// Layout: a 72-byte header; runs of documents whose records follow each other
// (first document, input, first record), binary-searched by document; one
// zstd frame per block of kIdBlockDocs documents' ids with an offsets table;
// and the ids' hashes sorted, each with its document, for finding an id in
// O(log n). SourceIndexWriter is not thread-safe; the functions are pure.
#ifndef TOKPACK_SRC_FORMAT_SOURCE_INDEX_H_
#define TOKPACK_SRC_FORMAT_SOURCE_INDEX_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokpack/status.h"

namespace tokpack {

inline constexpr char kSourceMagic[8] = {'T', 'P', 'K', 'S', 'R', 'C', '\0', '\0'};
inline constexpr uint32_t kSourceVersion = 1;
inline constexpr uint64_t kSourceHeaderBytes = 72;
inline constexpr uint64_t kSourceRunBytes = 24;  // u64 first_doc, input, first_record.
inline constexpr uint64_t kSourceHashBytes = 8;  // u32 id hash, u32 document.
inline constexpr uint32_t kIdBlockDocs = 256;
// Longer ids are not recorded (the document has none): an id is a key, not
// a payload, and the cap bounds what one block decompresses to.
inline constexpr size_t kMaxIdBytes = 4096;

// The header's counts and where each section starts.
struct SourceHeader {
  uint64_t documents = 0;  // N: the shard's documents.
  uint64_t runs = 0;       // R.
  uint64_t inputs = 0;     // Every run's input is below this.
  uint64_t blocks = 0;     // B: 0 (no ids) or ceil(N / kIdBlockDocs).
  uint64_t hashes = 0;     // H: documents with an id.
  uint64_t blob_bytes = 0;
  uint64_t runs_offset() const { return kSourceHeaderBytes; }
  uint64_t block_offsets_offset() const { return runs_offset() + runs * kSourceRunBytes; }
  uint64_t blob_offset() const { return block_offsets_offset() + (blocks + 1) * 8; }
  uint64_t hashes_offset() const { return blob_offset() + blob_bytes; }
  uint64_t file_bytes() const { return hashes_offset() + hashes * kSourceHashBytes; }
};

struct SourceRun {
  uint64_t first_doc;
  uint64_t input;
  uint64_t first_record;  // Records count from 1; 0 is a whole-file document.
};

// The hash of an id in the index: the high 32 bits of xxh3_64 (seed 0).
uint32_t IdHash(std::string_view id);

// Parses and checks the 72-byte header of a file of `file_bytes` bytes for a
// shard of `documents` documents. Errors (DataLoss) name `name`.
StatusOr<SourceHeader> ParseSourceHeader(std::string_view header, uint64_t file_bytes,
                                         uint64_t documents, const std::string& name);

// Parses the runs section (header.runs * 24 bytes) and checks it: the first
// run starts at document 0, runs start in increasing order below N, inputs
// are below header.inputs, and (input, record) increases from each document
// to the next, as a build reads them.
StatusOr<std::vector<SourceRun>> ParseRuns(std::string_view bytes, const SourceHeader& header,
                                           const std::string& name);

// The run holding document `doc` (runs parsed, doc < N).
const SourceRun& RunOf(const std::vector<SourceRun>& runs, uint64_t doc);

// Decompresses one id block (a zstd frame) of `docs` documents and returns
// each document's id, nullopt where it has none. Errors name `name`.
StatusOr<std::vector<std::optional<std::string>>> DecodeIdBlock(std::string_view frame,
                                                                uint64_t docs,
                                                                const std::string& name);

// Checks a whole .src (what verify does): the header, runs, every id block,
// and that the sorted hash entries are exactly those of the ids. Errors
// (DataLoss) name `name` and the first fault.
Status CheckSourceFile(std::string_view file, uint64_t documents, const std::string& name);

// Builds a shard's .src in memory: Add() each document in order, Finish()
// the file. Memory: 8 bytes per document with an id plus its compressed ids.
class SourceIndexWriter {
 public:
  // `inputs`: the length of the input list the indices refer to.
  explicit SourceIndexWriter(uint64_t inputs);
  ~SourceIndexWriter();
  SourceIndexWriter(const SourceIndexWriter&) = delete;
  SourceIndexWriter& operator=(const SourceIndexWriter&) = delete;
  // The next document came from record `record` of input `input`, with `id`
  // (nullopt: none). Fails past 2^32 - 1 documents (the index's u32).
  [[nodiscard]] Status Add(uint64_t input, uint64_t record, std::optional<std::string_view> id);
  // The whole file.
  StatusOr<std::string> Finish();
  uint64_t documents() const { return documents_; }

 private:
  [[nodiscard]] Status FlushBlock();

  uint64_t inputs_;
  uint64_t documents_ = 0;
  std::vector<SourceRun> runs_;
  uint64_t next_record_ = 0;  // The record that continues the last run.
  std::string block_;         // The open block's ids, varint-prefixed.
  bool any_id_ = false;       // Whether any document so far has an id.
  std::string blob_;          // Compressed blocks.
  std::vector<uint64_t> block_ends_;
  std::vector<uint64_t> hashes_;  // (hash << 32) | document, sorted at Finish.
  // One compression context for all blocks: making one per block of 256
  // documents cost more than the rest of the file.
  struct Compressor;
  std::unique_ptr<Compressor> zstd_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_FORMAT_SOURCE_INDEX_H_
