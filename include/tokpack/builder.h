// Build: the offline packer. Turns corpora (JSONL or text, plain, .gz or .zst;
// files, directories, globs or stdin) into a tokpack dataset directory of
// Megatron-compatible shard pairs plus manifest.json (docs/format.md).
//
// The output is byte-identical for any thread count. The dataset is written
// under a temporary name and moved into place only when complete, so a failed
// or interrupted build never leaves a directory that looks complete.
//
// Build() is thread-safe in the sense that independent builds may run
// concurrently; the progress callback is invoked from a helper thread.
#ifndef TOKPACK_BUILDER_H_
#define TOKPACK_BUILDER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokpack/cancel.h"
#include "tokpack/manifest.h"
#include "tokpack/options.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"
#include "tokpack/text_source.h"
#include "tokpack/tokenizer.h"

namespace tokpack {

struct BuildProgress {
  uint64_t bytes_read = 0;   // Raw (compressed) input bytes consumed so far.
  uint64_t bytes_total = 0;  // Raw bytes of all inputs; 0 when unknown (stdin).
  uint64_t documents = 0;    // Documents written so far.
  uint64_t tokens = 0;       // Tokens written so far.
  double elapsed_seconds = 0;
};

// The default per-shard token budget: 2^29 tokens (1 GiB of uint16).
inline constexpr uint64_t kDefaultShardTokens = 1ull << 29;
// A build's inputs, output and settings. The settings (text_key through
// force below) are declared once, with their names, defaults, validation and
// documentation, in the table behind Describe(); the CLI flags of `tokpack
// build` and the keyword arguments of tokpack.build are made from it.
struct BuildOptions : OptionSet<BuildOptions> {
  BuildOptions() { settings.shard_tokens = kDefaultShardTokens; }

  // Files, directories, globs ("corpus/**/*.jsonl.zst"), object-store URLs
  // and globs ("s3://bucket/fineweb/**/*.parquet") or "-" for stdin.
  std::vector<std::string> inputs;
  // Credentials, endpoints and retries for object-store inputs.
  StorageOptions storage;
  // Texts from the caller instead of `inputs` (which must then be empty).
  std::shared_ptr<TextSource> texts;
  // Inputs of a type the packer does not read are skipped (and listed in the
  // summary) instead of failing the build.
  bool skip_unknown_files = false;
  // The dataset directory to create, or an s3:// or gs:// URL: the dataset
  // is then built in a temporary local directory (in $TMPDIR) and pushed as
  // PushDataset (tokpack/dataset_ops.h) does, manifest.json last.
  std::string output;
  // A tokenizer file (sentencepiece .model, tokenizer.json or tiktoken
  // ranks), copied into the dataset as tokenizer.model/.json/.tiktoken.
  std::string tokenizer_model;
  // What the tokenizer file does not say itself (tiktoken pattern, EOS name).
  TokenizerOptions tokenizer_options;
  // text_key, input format, BOS/EOS, UTF-8 policy, bad-line policy, shard size.
  BuildSettings settings;
  // Checksum chunk size recorded in the manifest.
  uint64_t chunk_bytes = Manifest::kDefaultChunkBytes;
  // Tokenizer threads; 0 means one per hardware thread.
  int threads = 0;
  // A record longer than this is never held whole: it is a bad record
  // (skipped with skip_bad_lines, else the build fails naming it). With it,
  // a build's memory is bounded whatever its input (docs/cli.md).
  uint64_t max_document_bytes = kDefaultMaxDocumentBytes;
  // Build only part `part_index` of `part_count` of the inputs (see `merge`).
  int part_index = 0;
  int part_count = 1;
  // Replace an existing dataset at `output` (only once the new one is complete).
  bool force = false;
  // Once set, the build stops and fails with Cancelled (also its remote reads,
  // unless storage.cancel is a flag of their own).
  CancelFlag cancel;
  // Called about every `progress_interval_seconds`, from a helper thread.
  std::function<void(const BuildProgress&)> progress;
  double progress_interval_seconds = 0.5;

  // CheckFields(), then what one setting cannot check alone (an output and
  // a tokenizer given, the part, files or texts); Build() calls it.
  Status Validate() const;
};

struct BuildSummary {
  Manifest manifest;                       // As written to <output>/manifest.json.
  uint64_t input_bytes = 0;                // Raw bytes read (compressed where the input is).
  uint64_t text_bytes = 0;                 // Decompressed bytes read.
  std::vector<std::string> skipped_files;  // With skip_unknown_files.
  double seconds = 0;
  uint64_t uploaded_bytes = 0;  // Bytes pushed, for an object-store output.
  // Pieces the encoders looked up in their piece caches, and found there
  // (0 and 0 for a tokenizer without one).
  uint64_t piece_cache_lookups = 0;
  uint64_t piece_cache_hits = 0;
};

// Runs a build. Errors name the offending file and line (malformed JSON,
// missing text key), input (missing, unreadable, corrupt compression), or
// output (exists without `force`, disk full). Missing inputs and an existing
// output are reported before any work starts. On failure nothing is left at
// `output` that was not there before.
StatusOr<BuildSummary> Build(const BuildOptions& options);

}  // namespace tokpack

#endif  // TOKPACK_BUILDER_H_
