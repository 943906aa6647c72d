// Dataset maintenance operations behind `tokpack info`, `verify`, `merge`,
// `import`, `push` and `remove`. Each is safe to call concurrently on
// different datasets; none modifies an existing local dataset's data (remove
// writes its removal list beside the manifest). Datasets are named as
// Dataset::Open takes them (a directory, a bare Megatron prefix, or an
// s3://, gs://, http(s):// URL) except where a function says otherwise.
#ifndef TOKPACK_DATASET_OPS_H_
#define TOKPACK_DATASET_OPS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokpack/cancel.h"
#include "tokpack/dataset.h"
#include "tokpack/manifest.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"
#include "tokpack/tokenizer.h"

namespace tokpack {

// A dataset's best-fit packing plan (docs/reader.md, "The packed view"):
// what `tokpack pack` and `tokpack info --packing best_fit` show.
struct PackingInfo {
  int64_t seq_len = 0;
  int64_t max_docs_per_sequence = 0;  // 0: no cap.
  uint64_t bins = 0;                  // Samples of the packed view.
  uint64_t documents = 0;             // All, empty ones included.
  uint64_t empty_documents = 0;       // No tokens: in no bin.
  uint64_t truncated_documents = 0;   // Longer than seq_len: split into pieces.
  uint64_t pieces = 0;                // Documents' pieces (one per document up to seq_len).
  uint64_t tokens = 0;
  uint64_t padding_tokens = 0;  // bins * seq_len - tokens.
  double padding_fraction = 0;  // padding_tokens / (bins * seq_len).
  double mean_pieces_per_bin = 0;
  uint64_t max_pieces_per_bin = 0;
  std::vector<std::string> plan_files;  // One per shard.
  uint64_t shards_built = 0;            // By this call (the rest were loaded).
};

struct DatasetInfo {
  std::string path;          // As the dataset was opened.
  bool has_manifest = true;  // False for a bare Megatron prefix (no tokenizer, no checksums).
  Manifest manifest;
  uint64_t data_bytes = 0;         // .bin, .idx and .mask bytes of all shards.
  uint64_t removed_documents = 0;  // On its removal list (Dataset::num_removed()).
  // Document lengths in tokens: histogram[k] counts documents whose length
  // lies in [2^k, 2^(k+1)) (k = 0 also holds empty sequences).
  std::vector<uint64_t> length_histogram;
  uint64_t min_length = 0;
  uint64_t max_length = 0;
  // With InspectSplit: the split as given, and each of its parts.
  struct SplitPart {
    uint64_t weight = 0;  // Of the normalized split.
    uint64_t runs = 0;    // Runs of documents dealt to the part.
    uint64_t documents = 0;
    uint64_t tokens = 0;
    uint64_t fingerprint = 0;  // Dataset::fingerprint() of the part, opened.
  };
  std::string split;
  std::string normalized_split;
  // How the parts are drawn: runs of this many consecutive documents (a
  // shard's last may be shorter), dealt to the parts by a keyed permutation.
  uint64_t split_run_documents = 0;
  uint64_t split_runs = 0;
  std::vector<SplitPart> split_parts;
  // With PackDataset's result (`info --packing best_fit`).
  std::optional<PackingInfo> packing;
};

// Summarizes an opened dataset: its manifest and document length statistics.
// Cost: O(documents) reads of the (memory-resident) indexes; no token data.
DatasetInfo InspectDataset(const Dataset& dataset);

// Fills info->split* with the parts of `split` (DatasetOptions::split) over
// `dataset`, a whole dataset: documents and tokens of each, as Dataset::Open
// with split_index would give them (an empty part here is refused there).
// O(shards). InvalidArgument naming split when it does not parse.
Status InspectSplit(const Dataset& dataset, const std::string& split, DatasetInfo* info);

// `info` as one JSON object (what `tokpack info --json` prints).
std::string DatasetInfoToJson(const DatasetInfo& info);

// Loads the packing plan of `dataset` for seq_len and max_docs_per_sequence,
// or builds and stores it (beside the shards when the dataset directory is
// writable, else in storage.cache_dir; one process per node builds, others
// wait), on `threads` threads (0: one per core), and returns its numbers.
// `progress` (optional) gets one line per event (a shard built, a wait for
// another process, a stored plan rebuilt and why), one call at a time.
// InvalidArgument for a setting out of range; FailedPrecondition when a plan
// must be built and nowhere is writable.
StatusOr<PackingInfo> PackDataset(const Dataset& dataset, int64_t seq_len,
                                  int64_t max_docs_per_sequence, const StorageOptions& storage,
                                  int threads = 0,
                                  const std::function<void(const std::string&)>& progress = {});

// The tokenizer recorded in the dataset's manifest, loaded from the copy
// inside the dataset (downloaded first for a remote one, with `storage`).
// InvalidArgument when the dataset holds none (e.g. a bare Megatron prefix).
StatusOr<std::unique_ptr<Tokenizer>> LoadDatasetTokenizer(const Dataset& dataset,
                                                          const StorageOptions& storage);

struct VerifyReport {
  uint64_t files_checked = 0;
  uint64_t bytes_checked = 0;
  std::vector<std::string> problems;   // One line each, naming file and place.
  std::vector<std::string> unchecked;  // What could not be checked here, and why.
  bool ok() const { return problems.empty(); }
};

// Checks the dataset at `path` (anything Dataset::Open takes). It takes a
// path, not an opened Dataset, because its job is to describe damage that
// makes Dataset::Open fail (truncated or missing files, bad indexes).
// With a manifest: recomputes every chunk checksum of every shard file,
// checks each .idx against the manifest and its .bin, and (when the
// vocabulary is known) that every token id lies inside it. Remote files are
// read from the store by ranged GETs, not from the chunk cache, so what is
// checked is what the store holds. A bare Megatron prefix has no checksums:
// its .idx is checked against its .bin and `unchecked` says what was not.
// Damage is reported in the VerifyReport; a non-OK status means the dataset
// could not be checked at all (e.g. nothing at `path`). `on_bytes`
// (optional) is called with bytes read as it goes. `storage` reaches a
// remote dataset.
StatusOr<VerifyReport> VerifyDataset(const std::string& path, const StorageOptions& storage,
                                     const std::function<void(uint64_t)>& on_bytes = {});

// Writes a manifest at `output` over the shards of `sources` without copying
// token data (shard paths are relative to `output`). Sources that are parts of
// one build (`build --part i/N`) are ordered by part index and must all be
// present; whole datasets are taken in the order given. All must share dtype,
// tokenizer and chunk size. An object-store `output` (s3://, gs://) merges
// parts that lie under it (e.g. s3://b/ds/part-0 for s3://b/ds), reached
// with `storage`: only manifest.json and the tokenizer are written,
// manifest.json last. Sources are datasets with a manifest: the merged
// manifest copies their checksums (a bare Megatron prefix needs `import`
// first), and a local output cannot refer to remote shards. The parts'
// removal lists (removed.json) are carried over, each renumbered by the
// documents of the parts before it and bound to the merged fingerprint; a
// part's list made for another version of it fails the merge.
StatusOr<Manifest> MergeDatasets(const std::string& output, const std::vector<std::string>& sources,
                                 bool force, const StorageOptions& storage);

struct ImportOptions {
  std::vector<std::string> prefixes;  // Megatron prefixes (".bin"/".idx" optional).
  std::string output;
  std::string tokenizer_model;  // Optional tokenizer file to record (any kind).
  TokenizerOptions tokenizer_options;
  uint64_t chunk_bytes = Manifest::kDefaultChunkBytes;
  bool force = false;
};

// Writes a manifest over existing Megatron .bin/.idx pairs without copying
// them, after checking each index against its data file and hashing both.
StatusOr<Manifest> ImportMegatron(const ImportOptions& options);

// What to change on a dataset's removal list (removed.json, docs/format.md
// 17): the documents whose tokens read as pad and carry no loss.
struct RemovalRequest {
  std::vector<uint64_t> documents;  // Indices of the whole dataset's documents.
  // Ids (docs/format.md 3.2): every document that has one of them. An id
  // that no document has is an error, since a takedown must not pass
  // silently on a misspelled id.
  std::vector<std::string> ids;
  bool restore = false;  // Take them off the list instead of putting them on.
};

// What RemoveDocuments did.
struct RemovalResult {
  uint64_t changed = 0;    // Put on the list (restored: taken off) by this call.
  uint64_t unchanged = 0;  // Asked for, but on the list already (restored: not on it).
  uint64_t total = 0;      // On the list now.
};

// Applies `request` to the removal list of the dataset at `path` (a
// directory with a manifest, or an s3:// or gs:// URL): reads the list
// (none yet: empty), adds or takes off the documents, and writes it bound to
// the dataset's fingerprint, locally to a temporary file that is fsynced and
// renamed (under an flock on the directory, so that two local removals do
// not lose one another's documents), remotely in one PUT (concurrent remote
// removals: the last PUT wins). Nothing is written when nothing changes or
// anything fails: InvalidArgument for a document past the end or a request
// with no document at all; NotFound naming
// an id that no document has; FailedPrecondition when the dataset has no
// document sources but ids are given, when its list was made for another
// version of it, or when it was replaced while this ran. Readers see the
// change when they open the dataset next.
StatusOr<RemovalResult> RemoveDocuments(const std::string& path, const StorageOptions& storage,
                                        const RemovalRequest& request);

struct PushOptions {
  // A local dataset directory. A bare Megatron prefix (no checksums, which
  // remote reads need) or a remote dataset (copy it with the store's tools)
  // is refused with a message saying so.
  std::string dir;
  std::string url;                           // s3://bucket/prefix or gs://bucket/prefix.
  StorageOptions storage;                    // Credentials, endpoint and retries for `url`.
  bool force = false;                        // Replace a dataset already at `url`.
  uint64_t part_bytes = uint64_t{64} << 20;  // Multipart part size for larger files.
  CancelFlag cancel;                         // Once set, the push stops and fails as Cancelled.
  // Called after each file, from the calling thread.
  std::function<void(const std::string& name, uint64_t bytes)> on_file;
};

// Uploads a dataset to an object store: the shard files and the tokenizer,
// its removal list (removed.json, checked against the manifest first) just
// before manifest.json, and manifest.json last, so readers never see an
// incomplete dataset, nor the new one without its removals; a list at `url`
// that the pushed dataset does not have is deleted after the manifest.
// Larger files go up in multipart uploads. Refuses a URL that already holds
// a manifest unless `force`, and one whose shards lie outside its directory.
// Every byte is checked against the manifest (chunk checksums, the
// tokenizer's and the input list's hashes) as it is read for the upload: a
// file that disagrees is refused with DataLoss naming it (and the chunk)
// before manifest.json is written, and the dataset at `url`, if any, stays.
// Returns the bytes uploaded.
StatusOr<uint64_t> PushDataset(const PushOptions& options);

}  // namespace tokpack

#endif  // TOKPACK_DATASET_OPS_H_
