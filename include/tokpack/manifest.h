// Manifest: the metadata of a tokpack dataset (manifest.json), as a value.
//
// A dataset is a directory holding manifest.json and one or more Megatron
// .bin/.idx shard pairs (docs/format.md specifies both). The manifest names the
// shards, their token and document counts, the size and per-chunk xxh3-64
// checksums of every file, the tokenizer, and how the data was built. Its
// presence marks a dataset as complete: it is always written last, by rename.
//
// Manifest is a plain value type: not synchronized, safe to copy across threads.
#ifndef TOKPACK_MANIFEST_H_
#define TOKPACK_MANIFEST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokpack/file_digest.h"
#include "tokpack/status.h"

namespace tokpack {

// Token element type of the .bin files. Values are Megatron's dtype codes.
enum class TokenDtype : uint8_t { kInt32 = 4, kUInt16 = 8 };

// "uint16" or "int32".
std::string_view TokenDtypeName(TokenDtype dtype);
// Bytes per token: 2 or 4.
int TokenDtypeSize(TokenDtype dtype);
// The dtype for a vocabulary: uint16 when every id fits (vocab <= 65535).
TokenDtype DtypeForVocab(int64_t vocab_size);

struct ShardInfo {
  // File prefix relative to the manifest's directory, without extension:
  // the shard's files are <dir>/<path>.bin and <dir>/<path>.idx.
  std::string path;
  uint64_t tokens = 0;
  uint64_t documents = 0;  // Sequences in the .idx (one per document).
  FileDigest bin;
  FileDigest idx;
  // The loss mask, <path>.mask (docs/format.md, "Loss masks"): one bit per
  // token, set where the token carries loss. A dataset has masks on every
  // shard or on none (pretraining data has none).
  bool has_mask = false;
  FileDigest mask;
  uint64_t trainable_tokens = 0;  // Tokens whose bit is set (with a mask).
  // Document sources, <path>.src (docs/format.md 3.2): each document's input,
  // record and id. On every shard or on none. Its input indices are offset
  // by `sources_input_offset` in this manifest's inputs (a merge's part
  // keeps its own file and numbers).
  bool has_sources = false;
  FileDigest sources;
  uint64_t sources_input_offset = 0;
};

struct TokenizerInfo {
  // The kind's name: "sentencepiece", "huggingface" (a tokenizer.json),
  // "tiktoken", ... (the rows of src/tokenizer/tokenizer_kinds.cc); empty
  // when unknown.
  std::string type;
  std::string file;         // Copy of the model inside the dataset, or empty.
  uint64_t model_xxh3 = 0;  // XXH3_64bits of the model file; 0 when unknown.
  int64_t vocab_size = -1;  // -1 when unknown.
  int64_t bos_id = -1;      // -1 when the tokenizer has none.
  int64_t eos_id = -1;
  int64_t pad_id = -1;
  int64_t unk_id = -1;
  // tiktoken only (the ranks file does not carry them): the split regex and
  // the special tokens as (text, id).
  std::string pattern;
  std::vector<std::pair<std::string, int64_t>> special_tokens;
};

// The packer settings that shaped the token stream.
struct BuildSettings {
  std::string text_key = "text";
  std::string input_format = "auto";  // "auto" or a format's name (--input-format)
  bool text_per_line = false;
  bool add_bos = false;
  bool add_eos = true;
  std::string invalid_utf8 = "replace";  // replace | skip | error
  bool skip_bad_lines = false;
  uint64_t shard_tokens = 0;
  // Loss masks (docs/format.md 3.1): written when on; records' spans are
  // read from these JSONL fields (or JSON pointers), and a record with spans
  // in a build without masks is an error.
  bool loss_masks = false;
  std::string loss_spans_key = "loss_spans";
  std::string no_loss_spans_key = "no_loss_spans";
  // Document sources (docs/format.md 3.2): written when on; a JSONL record's
  // (or a Python dict's) `id_key` field, a string or an integer, is its id.
  bool doc_sources = true;
  std::string id_key = "id";
};

struct InputRecord {
  std::string path;    // As expanded from the command line ("-" for stdin).
  uint64_t bytes = 0;  // Of the row groups below for a Parquet slice.
  // A Parquet file split by --part: row groups [row_group_begin,
  // row_group_end) only. Both 0: the whole file.
  uint32_t row_group_begin = 0;
  uint32_t row_group_end = 0;

  bool whole_file() const { return row_group_end == 0; }
};

// Counts of what the packer read and dropped (all deterministic).
struct BuildCounts {
  uint64_t documents = 0;      // Written.
  uint64_t tokens = 0;         // Written, including BOS/EOS.
  uint64_t skipped_empty = 0;  // Documents with no tokens.
  uint64_t bad_lines = 0;      // Skipped with --skip-bad-lines.
  uint64_t utf8_repaired = 0;  // Documents whose invalid UTF-8 was replaced.
  uint64_t skipped_invalid_utf8 = 0;
  uint64_t unknown_tokens = 0;        // The tokenizer's unknown token: text lost.
  uint64_t byte_fallback_tokens = 0;  // Byte tokens (<0xXX>): text kept as bytes.
};

// What became of one input's records (docs/format.md 5.5, `input_counts`).
struct InputCounts {
  uint64_t documents = 0;
  uint64_t skipped_empty = 0;
  uint64_t bad_lines = 0;
  uint64_t skipped_invalid_utf8 = 0;
};

struct Provenance {
  std::string tool = "tokpack";
  std::string version;
  std::string kind;    // "build", "merge" or "import".
  int part_index = 0;  // --part i/N of a build; 0/1 otherwise.
  int part_count = 1;
  BuildSettings settings;
  // The inputs read, in order. Up to kMaxListedInputs are listed in
  // manifest.json; more go to a side file (one JSON object per line), which
  // ReadInputList() loads: then a parsed manifest has `inputs` empty and
  // `inputs_file` naming that file in the dataset (kInputsFileName where
  // tokpack writes one; under a generation directory once pushed).
  std::vector<InputRecord> inputs;
  std::string inputs_file;
  // Always recorded: the number of inputs and InputListHash() of them.
  uint64_t input_count = 0;
  uint64_t inputs_xxh3 = 0;
  std::vector<std::string> sources;  // Part directories or imported prefixes.
  BuildCounts counts;
  // Per input, in the order of `inputs`: recorded by builds with document
  // sources (empty otherwise, and then the manifest has none).
  std::vector<InputCounts> input_counts;

  // The number of inputs: listed, or counted beside their side file.
  uint64_t InputTotal() const { return inputs_file.empty() ? inputs.size() : input_count; }

  static constexpr size_t kMaxListedInputs = 1000;
  static constexpr const char* kInputsFileName = "inputs.jsonl";
};

// xxh3-64 of the inputs' side-file lines (docs/format.md 5.5) sorted bytewise
// and concatenated: the same set of inputs gives the same hash whatever their
// order.
uint64_t InputListHash(const std::vector<InputRecord>& inputs);
// The side file's text for `inputs`.
std::string InputListFile(const std::vector<InputRecord>& inputs);
// Parses a side file; checks it against `p`'s count and hash and fills
// p->inputs. Errors name `source`.
Status ReadInputList(std::string_view text, std::string_view source, Provenance* p);

class Manifest {
 public:
  static constexpr int kFormatVersion = 1;
  static constexpr const char* kFileName = "manifest.json";
  static constexpr uint64_t kDefaultChunkBytes = 4ull << 20;
  // The checksum chunk sizes a manifest may declare (a remote reader holds
  // one chunk in memory at a time).
  static constexpr uint64_t kMinChunkBytes = 1;
  static constexpr uint64_t kMaxChunkBytes = 1ull << 30;
  // The most bytes all shard files of one dataset may add up to (an .idx
  // pointer is an int64), so that no sum of its sizes, tokens or documents
  // overflows.
  static constexpr uint64_t kMaxTotalBytes = (1ull << 63) - 1;
  // The largest manifest.json read into memory: its checksum lists grow
  // with the data (about 20 bytes a chunk, so 1 GiB lists ~200 TB in 4 MiB
  // chunks).
  static constexpr uint64_t kMaxJsonBytes = 1ull << 30;

  int format_version = kFormatVersion;
  TokenDtype dtype = TokenDtype::kUInt16;
  uint64_t chunk_bytes = kDefaultChunkBytes;
  TokenizerInfo tokenizer;
  std::vector<ShardInfo> shards;
  Provenance provenance;

  uint64_t TotalTokens() const;
  uint64_t TotalDocuments() const;
  // Whether the shards carry loss masks (all of them do, or none).
  bool HasLossMasks() const;
  // Whether the shards carry document sources (all of them do, or none).
  bool HasSources() const;
  // Tokens that carry loss: TotalTokens() without masks.
  uint64_t TrainableTokens() const;

  // xxh3-64 over the content-defining fields (dtype, chunk size, and every
  // shard's counts and digests), independent of paths and provenance. Two
  // datasets with equal fingerprints hold the same token stream.
  uint64_t Fingerprint() const;

  // Serializes to the JSON text of manifest.json (deterministic).
  std::string ToJson() const;

  // Parses and validates manifest.json text (docs/format.md 5.6), an
  // untrusted input: every path it names passes CheckDatasetPath
  // (src/format/dataset_path.h), chunk_bytes is within its range, and its
  // counts and sizes are consistent without overflow. `source` names the
  // file in errors, with the field's path. Fails with InvalidArgument on a
  // malformed or inconsistent manifest, DataLoss when the stored fingerprint
  // does not match.
  static StatusOr<Manifest> Parse(std::string_view json, std::string_view source);

  // Reads <dir>/manifest.json (a regular file of at most 1 GiB). NotFound
  // when the directory has none; the message says whether nothing is at
  // `dir` or it is a bare Megatron prefix.
  static StatusOr<Manifest> Load(const std::string& dir);

  // Writes <dir>/<name> atomically (temporary file, fsync, rename, fsync dir).
  Status Save(const std::string& dir, const std::string& name = kFileName) const;
};

// OK when `chunk_bytes` is within [Manifest::kMinChunkBytes,
// Manifest::kMaxChunkBytes]; InvalidArgument saying the range otherwise.
// Writers check it too, so that they never write a manifest readers refuse.
Status CheckChunkBytes(uint64_t chunk_bytes);

}  // namespace tokpack

#endif  // TOKPACK_MANIFEST_H_
