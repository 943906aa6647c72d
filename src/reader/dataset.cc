#include "tokpack/dataset.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "base/file_system.h"
#include "format/idx_file.h"
#include "format/removed_list.h"
#include "reader/dataset_impl.h"
#include "reader/dataset_internal.h"
#include "reader/split_ranges.h"
#include "reader/verify_chunks.h"
#include "storage/byte_source.h"
#include "storage/object_url.h"
#include "storage/remote_source.h"
#include "tokpack/files.h"

namespace tokpack {

Dataset::Dataset(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dataset::~Dataset() = default;

namespace {

bool IsFile(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool Exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

// The pad token, as packing pads and removed documents read (Dataset::pad_token).
int64_t PadToken(const TokenizerInfo& t) {
  return t.pad_id >= 0 ? t.pad_id : t.eos_id >= 0 ? t.eos_id : 0;
}

// Applies `text`, the dataset's removed.json read from `source`, unless the
// read found none (NotFound): the common case, which costs one failed open.
// Remote, an access denied (HTTP 403) is none too: stores that deny reading
// the manifest's own directory do not get here, and those that grant reads
// without listing answer 403 for a missing key (S3 without s3:ListBucket,
// CloudFront).
Status ApplyRemovalsIfAny(Dataset::Impl& d, const StatusOr<std::string>& text,
                          const std::string& source) {
  if (!text.ok()) {
    const StatusCode code = text.status().code();
    const bool none =
        code == StatusCode::kNotFound || (d.remote && code == StatusCode::kFailedPrecondition);
    return none ? Status::Ok() : text.status();
  }
  return d.ApplyRemovals(*text, source);
}

}  // namespace

Status Dataset::Impl::ApplySplit(const DatasetOptions& options) {
  if (options.split.empty() && options.split_index == 0) return Status::Ok();
  TOKPACK_ASSIGN_OR_RETURN(const SplitSpec spec,
                           ParseSplitPart(options.split, options.split_index));
  const size_t part = static_cast<size_t>(options.split_index);
  const uint64_t item = TokenDtypeSize(manifest.dtype);
  std::vector<uint64_t> shard_documents;
  for (const Shard& s : shards) shard_documents.push_back(s.view.sequence_count());
  const SplitRuns runs(spec, shard_documents);
  std::vector<Shard> segments;
  std::vector<ShardInfo> infos, whole;  // Per segment: its entry, its shard's.
  token_ends.clear();
  doc_ends.clear();
  uint64_t tokens = 0, documents = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    const Shard& s = shards[k];
    const uint64_t entries = s.view.sequence_count();
    // Documents are contiguous in the .bin (the index rules), so a range of
    // them is a range of tokens.
    const auto token_at = [&](uint64_t e) {
      return e < entries ? static_cast<uint64_t>(s.view.pointer(e)) / item : s.view.tokens();
    };
    for (const DocumentRange& r : runs.Ranges(part, k)) {
      Shard segment = s;
      segment.first_entry = r.begin;
      segment.token_base = token_at(r.begin);
      segment.first_token = tokens;
      segment.first_document = documents;
      ShardInfo info = manifest.shards[k];
      whole.push_back(info);
      info.tokens = token_at(r.end) - segment.token_base;
      info.documents = r.end - r.begin;
      tokens += info.tokens;
      documents += info.documents;
      token_ends.push_back(tokens);
      doc_ends.push_back(documents);
      segments.push_back(std::move(segment));
      infos.push_back(std::move(info));
    }
  }
  if (documents == 0) return EmptyPartError(path, options.split, part, runs.runs());
  shards = std::move(segments);
  manifest.shards = std::move(infos);
  if (has_masks) {
    for (size_t k = 0; k < shards.size(); ++k) {
      manifest.shards[k].trainable_tokens = SegmentTrainable(k, whole[k]);
    }
  }
  CountRemovals();
  fingerprint = SplitFingerprint(fingerprint, spec, part);
  return Status::Ok();
}

StatusOr<std::shared_ptr<Dataset>> Dataset::Open(const std::string& path,
                                                 const StorageOptions& storage,
                                                 const DatasetOptions& options) {
  if (IsRemoteUrl(path)) {
    // Remote chunks are verified on every fetch: verify_on_open adds nothing.
    TOKPACK_ASSIGN_OR_RETURN(auto remote, RemoteOpener::ForUrl(path, storage));
    TOKPACK_ASSIGN_OR_RETURN(std::shared_ptr<Dataset> ds, OpenRemoteDataset(path, *remote));
    ds->impl_->read_inputs_file = [path, storage](const std::string& name) {
      return ReadRemoteDatasetFile(path, storage, name, kMaxInputListBytes);
    };
    ds->impl_->cache_bytes = storage.cache_bytes;
    ds->impl_->cache_dir = storage.cache_dir;
    TOKPACK_RETURN_IF_ERROR(ds->impl_->ApplySplit(options));
    return ds;
  }
  TOKPACK_ASSIGN_OR_RETURN(std::shared_ptr<Dataset> ds, OpenDatasetWith(path, OpenMappedFile));
  ds->impl_->read_inputs_file = [path](const std::string& name) {
    return ReadDatasetFile(path, name, kMaxInputListBytes, Links::kRefuse);
  };
  if (options.verify_on_open) {
    const Impl& d = *ds->impl_;
    if (!d.has_manifest) {
      return FailedPreconditionError(
          "verify_on_open: " + path +
          " is a bare Megatron prefix, which has no checksums to verify (tokpack import "
          "records them)");
    }
    for (size_t k = 0; k < d.shards.size(); ++k) {
      const ShardInfo& info = d.manifest.shards[k];
      const CancelFlag& cancel = storage.cancel;
      TOKPACK_RETURN_IF_ERROR(
          VerifyChunks(*d.shards[k].idx, info.idx, d.manifest.chunk_bytes, cancel));
      TOKPACK_RETURN_IF_ERROR(
          VerifyChunks(*d.shards[k].bin, info.bin, d.manifest.chunk_bytes, cancel));
      if (d.has_masks) {
        TOKPACK_RETURN_IF_ERROR(
            VerifyChunks(*d.shards[k].mask, info.mask, d.manifest.chunk_bytes, cancel));
      }
    }
  }
  ds->impl_->cache_dir = storage.cache_dir;
  TOKPACK_RETURN_IF_ERROR(ds->impl_->ApplySplit(options));
  return ds;
}

StatusOr<std::shared_ptr<Dataset>> Dataset::Open(const std::string& path,
                                                 const StorageOptions& storage) {
  return Open(path, storage, DatasetOptions());
}

StatusOr<std::shared_ptr<Dataset>> Dataset::Open(const std::string& path) {
  return Open(path, StorageOptions());
}

// Validates one shard (every entry of the .idx, which then lies inside the
// .bin, and with a manifest the shard's entry) and appends it to the dataset.
// `mask`: the shard's loss mask where the manifest lists one, else null.
Status AddShard(Dataset::Impl& d, const std::string& prefix, std::unique_ptr<ByteSource> idx,
                std::unique_ptr<ByteSource> bin, const ShardInfo* info,
                std::unique_ptr<ByteSource> mask, std::unique_ptr<ByteSource> sources) {
  Dataset::Impl::Shard s;
  if (sources) {
    if (sources->size() != info->sources.bytes) {
      return DataLossError(prefix + ".src: " + std::to_string(sources->size()) +
                           " bytes, but manifest.json says " + std::to_string(info->sources.bytes) +
                           " (truncated or mismatched)");
    }
    s.sources = NewSourceFile(std::move(sources), prefix + ".src", info->documents,
                              info->sources_input_offset, d.manifest.provenance.InputTotal());
  }
  s.idx = std::move(idx);
  s.bin = std::move(bin);
  s.mask = std::move(mask);
  if (s.mask && s.mask->size() != info->mask.bytes) {
    return DataLossError(prefix + ".mask: " + std::to_string(s.mask->size()) +
                         " bytes, but manifest.json says " + std::to_string(info->mask.bytes) +
                         " (truncated or mismatched)");
  }
  const std::string idx_name = prefix + ".idx";
  TOKPACK_ASSIGN_OR_RETURN(s.view,
                           ParseIdx(std::string_view(s.idx->data(), s.idx->size()), idx_name));
  if (s.view.bin_bytes() != s.bin->size()) {
    return DataLossError(prefix + ".bin: " + std::to_string(s.bin->size()) + " bytes, but " +
                         idx_name + " describes " + std::to_string(s.view.bin_bytes()) +
                         " (truncated or mismatched)");
  }
  if (info) {
    if (s.view.dtype() != d.manifest.dtype || s.view.sequence_count() != info->documents ||
        s.view.tokens() != info->tokens || s.idx->size() != info->idx.bytes) {
      return DataLossError(
          idx_name + " does not match manifest.json (" + std::to_string(s.view.sequence_count()) +
          " documents, " + std::to_string(s.view.tokens()) + " tokens; manifest says " +
          std::to_string(info->documents) + " and " + std::to_string(info->tokens) + ")");
    }
  } else {
    d.manifest.dtype = s.view.dtype();
    ShardInfo made;
    made.path = prefix;
    made.tokens = s.view.tokens();
    made.documents = s.view.sequence_count();
    made.bin.bytes = s.bin->size();
    made.idx.bytes = s.idx->size();
    d.manifest.shards.push_back(made);
  }
  s.first_token = d.token_ends.empty() ? 0 : d.token_ends.back();
  s.first_document = d.doc_ends.empty() ? 0 : d.doc_ends.back();
  // Stream offsets must fit in 63 bits (sample and step arithmetic is int64).
  if (s.view.tokens() > static_cast<uint64_t>(INT64_MAX) - s.first_token ||
      s.view.sequence_count() > static_cast<uint64_t>(INT64_MAX) - s.first_document) {
    return DataLossError(idx_name +
                         ": the dataset's shards add up to more than 2^63 tokens or "
                         "documents");
  }
  d.token_ends.push_back(s.first_token + s.view.tokens());
  d.doc_ends.push_back(s.first_document + s.view.sequence_count());
  d.shards.push_back(std::move(s));
  return Status::Ok();
}

StatusOr<std::shared_ptr<Dataset>> OpenDatasetWith(const std::string& path,
                                                   const ByteSourceOpener& open) {
  auto impl = std::make_unique<Dataset::Impl>();
  Dataset::Impl& d = *impl;
  d.path = path;
  const bool has_manifest = IsFile(JoinPath(path, Manifest::kFileName));
  std::vector<std::string> prefixes;
  // The removal list is read before the manifest: should a --force writer
  // swap the directory in between, the list names the old fingerprint and
  // the open fails loudly instead of serving the new data without it (or
  // the old data without its list).
  StatusOr<std::string> removals = NotFoundError("");
  if (has_manifest) {
    removals = ReadDatasetFile(path, kRemovedFileName, kMaxRemovedListBytes, Links::kRefuse);
    TOKPACK_ASSIGN_OR_RETURN(d.manifest, Manifest::Load(path));
    d.has_masks = d.manifest.HasLossMasks();
    for (const ShardInfo& s : d.manifest.shards) prefixes.push_back(JoinPath(path, s.path));
  } else {
    const std::string prefix = StripShardExtension(path);
    if (!IsFile(prefix + ".idx") || !IsFile(prefix + ".bin")) {
      if (!Exists(path) && !IsFile(prefix + ".idx") && !IsFile(prefix + ".bin")) {
        return NotFoundError(path + " does not exist");
      }
      return NotFoundError("'" + path +
                           "' is neither a tokpack dataset (no manifest.json) nor a Megatron "
                           "prefix (no " +
                           prefix + ".bin/.idx)");
    }
    prefixes.push_back(prefix);
    d.has_manifest = false;
    d.manifest.provenance.kind = "import";
  }
  for (size_t k = 0; k < prefixes.size(); ++k) {
    // Indexes are always mapped: opening and boundary lookups read them in place.
    TOKPACK_ASSIGN_OR_RETURN(auto idx, OpenMappedFile(prefixes[k] + ".idx"));
    TOKPACK_ASSIGN_OR_RETURN(auto bin, open(prefixes[k] + ".bin"));
    std::unique_ptr<ByteSource> mask, sources;
    if (d.has_masks) {
      TOKPACK_ASSIGN_OR_RETURN(mask, open(prefixes[k] + ".mask"));
    }
    if (has_manifest && d.manifest.HasSources()) {
      TOKPACK_ASSIGN_OR_RETURN(sources, open(prefixes[k] + ".src"));
    }
    TOKPACK_RETURN_IF_ERROR(AddShard(d, prefixes[k], std::move(idx), std::move(bin),
                                     has_manifest ? &d.manifest.shards[k] : nullptr,
                                     std::move(mask), std::move(sources)));
  }
  d.fingerprint = d.manifest.Fingerprint();
  d.pad = PadToken(d.manifest.tokenizer);
  if (has_manifest) {
    // Beside the manifest, never through a link (as the manifest's own members).
    TOKPACK_RETURN_IF_ERROR(ApplyRemovalsIfAny(d, removals, JoinPath(path, kRemovedFileName)));
  }
  return std::make_shared<Dataset>(std::move(impl));
}

StatusOr<std::string> ReadRemoteDatasetFile(const std::string& url, const StorageOptions& storage,
                                            const std::string& name, uint64_t max_bytes) {
  TOKPACK_ASSIGN_OR_RETURN(auto remote, RemoteOpener::ForUrl(url, storage));
  return remote->store().Get(name, max_bytes);
}

StatusOr<Manifest> LoadRemoteManifest(const RemoteOpener& remote) {
  const HttpStore& store = remote.store();
  StatusOr<std::string> text = store.Get(Manifest::kFileName, Manifest::kMaxJsonBytes);
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) {
    return NotFoundError(store.location().url +
                         " is not a tokpack dataset: " + text.status().message());
  }
  TOKPACK_RETURN_IF_ERROR(text.status());
  return Manifest::Parse(*text, store.location().UrlOf(Manifest::kFileName));
}

StatusOr<std::shared_ptr<Dataset>> OpenRemoteDataset(const std::string& url,
                                                     const RemoteOpener& remote) {
  auto impl = std::make_unique<Dataset::Impl>();
  Dataset::Impl& d = *impl;
  d.path = url;
  d.remote = true;
  TOKPACK_ASSIGN_OR_RETURN(d.manifest, LoadRemoteManifest(remote));
  d.has_masks = d.manifest.HasLossMasks();
  for (const ShardInfo& info : d.manifest.shards) {
    TOKPACK_ASSIGN_OR_RETURN(
        auto idx, remote.Open(info.path + ".idx", info.idx, d.manifest.chunk_bytes, true));
    TOKPACK_ASSIGN_OR_RETURN(
        auto bin, remote.Open(info.path + ".bin", info.bin, d.manifest.chunk_bytes, false));
    // Masks go through the chunk cache like the tokens (1/16 of a uint16
    // shard's bytes), each chunk checked against the manifest's digest.
    std::unique_ptr<ByteSource> mask;
    if (d.has_masks) {
      TOKPACK_ASSIGN_OR_RETURN(
          mask, remote.Open(info.path + ".mask", info.mask, d.manifest.chunk_bytes, false));
    }
    // Sources likewise; a lookup reads only the chunks it needs.
    std::unique_ptr<ByteSource> sources;
    if (d.manifest.HasSources()) {
      TOKPACK_ASSIGN_OR_RETURN(
          sources, remote.Open(info.path + ".src", info.sources, d.manifest.chunk_bytes, false));
    }
    TOKPACK_RETURN_IF_ERROR(AddShard(d, url + "/" + info.path, std::move(idx), std::move(bin),
                                     &info, std::move(mask), std::move(sources)));
  }
  d.fingerprint = d.manifest.Fingerprint();
  d.pad = PadToken(d.manifest.tokenizer);
  // Not cached: a list added since the last open applies at this one.
  const HttpStore& store = remote.store();
  TOKPACK_RETURN_IF_ERROR(ApplyRemovalsIfAny(d, store.Get(kRemovedFileName, kMaxRemovedListBytes),
                                             store.location().UrlOf(kRemovedFileName)));
  return std::make_shared<Dataset>(std::move(impl));
}

const std::string& Dataset::path() const { return impl_->path; }
const Manifest& Dataset::manifest() const { return impl_->manifest; }
TokenDtype Dataset::dtype() const { return impl_->manifest.dtype; }
uint64_t Dataset::num_tokens() const {
  return impl_->token_ends.empty() ? 0 : impl_->token_ends.back();
}
uint64_t Dataset::num_documents() const {
  return impl_->doc_ends.empty() ? 0 : impl_->doc_ends.back();
}
size_t Dataset::num_shards() const { return impl_->shards.size(); }
uint64_t Dataset::fingerprint() const { return impl_->fingerprint; }
uint64_t Dataset::shard_token_offset(size_t k) const { return impl_->shards[k].token_base; }

Status Dataset::ReadTokens(uint64_t begin, uint64_t count, int32_t* out, ReadStats* stats) const {
  return impl_->Read(begin, count, out, stats);
}
Status Dataset::ReadTokens(uint64_t begin, uint64_t count, int64_t* out, ReadStats* stats) const {
  return impl_->Read(begin, count, out, stats);
}
void Dataset::Prefetch(uint64_t begin, uint64_t count, int64_t step,
                       const std::shared_ptr<ReadStats>& stats) const {
  const Impl& d = *impl_;
  if (!d.remote || count == 0 || begin >= num_tokens()) return;
  const uint64_t end = std::min(begin + count, num_tokens());
  const uint64_t item = static_cast<uint64_t>(TokenDtypeSize(d.manifest.dtype));
  for (size_t k = d.ShardOfToken(begin); k < d.shards.size() && d.shards[k].first_token < end;
       ++k) {
    const Impl::Shard& s = d.shards[k];
    const uint64_t a = std::max(begin, s.first_token) - s.first_token + s.token_base;
    const uint64_t b = std::min(end, d.token_ends[k]) - s.first_token + s.token_base;
    s.bin->Prefetch(a * item, (b - a) * item, step, stats);
    if (s.mask) s.mask->Prefetch(a / 8, (b + 7) / 8 - a / 8, step, stats);
  }
}

void Dataset::PrefetchToCache(uint64_t begin, uint64_t count) const {
  // The hardware prefetcher follows a run once its first lines were read;
  // these are the lines it cannot guess.
  constexpr uint64_t kLines = 4, kLine = 64;
  const Impl& d = *impl_;
  if (count == 0 || begin >= num_tokens()) return;
  const Impl::Shard& s = d.shards[d.ShardOfToken(begin)];
  const char* mapped = s.bin->data();
  if (mapped == nullptr) return;
  const uint64_t item = static_cast<uint64_t>(TokenDtypeSize(d.manifest.dtype));
  const char* at = mapped + (begin - s.first_token + s.token_base) * item;
  const uint64_t bytes = std::min(count * item, kLines * kLine);
  for (uint64_t k = 0; k < bytes; k += kLine) __builtin_prefetch(at + k);
}

bool Dataset::remote() const { return impl_->remote; }
uint64_t Dataset::cache_bytes() const { return impl_->cache_bytes; }
const std::string& Dataset::cache_dir() const { return impl_->cache_dir; }
bool Dataset::has_manifest() const { return impl_->has_manifest; }

Status Dataset::ReadStoredTokens(uint64_t begin, uint64_t count, void* out,
                                 ReadStats* stats) const {
  return impl_->ReadStored(begin, count, out, stats);
}

void Dataset::DocumentStarts(uint64_t begin, uint64_t end, std::vector<uint64_t>* starts) const {
  const Impl& d = *impl_;
  if (begin >= end || begin >= num_tokens()) return;
  for (size_t k = d.ShardOfToken(begin); k < d.shards.size(); ++k) {
    const Impl::Shard& s = d.shards[k];
    if (s.first_token >= end) break;
    const uint64_t item = TokenDtypeSize(d.manifest.dtype);
    const uint64_t lo = s.token_base + (begin > s.first_token ? begin - s.first_token : 0);
    const uint64_t entries = s.first_entry + (d.doc_ends[k] - s.first_document);
    // Binary search over the unaligned pointer array for the first start >= lo.
    uint64_t a = s.first_entry, b = entries;
    while (a < b) {
      uint64_t mid = (a + b) / 2;
      if (static_cast<uint64_t>(s.view.pointer(mid)) / item < lo)
        a = mid + 1;
      else
        b = mid;
    }
    for (uint64_t i = a; i < entries; ++i) {
      const uint64_t t = s.first_token + s.view.pointer(i) / item - s.token_base;
      if (t >= end) return;
      // Empty sequences share their start with the next one; report it once.
      if (starts->empty() || starts->back() != t) starts->push_back(t);
    }
  }
}

Status Dataset::DocumentExtent(uint64_t i, uint64_t* offset, uint64_t* length) const {
  const Impl& d = *impl_;
  if (i >= num_documents()) {
    return OutOfRangeError("document " + std::to_string(i) + " is past the last of " +
                           std::to_string(num_documents()) + " documents in " + d.path);
  }
  size_t k = d.ShardOfDocument(i);
  const Impl::Shard& s = d.shards[k];
  const uint64_t local = i - s.first_document + s.first_entry;
  *offset = s.first_token + s.view.pointer(local) / TokenDtypeSize(d.manifest.dtype) - s.token_base;
  *length = static_cast<uint64_t>(s.view.length(local));
  return Status::Ok();
}

StatusOr<Dataset::TokenView> Dataset::DocumentView(uint64_t i) const {
  uint64_t offset = 0, length = 0;
  TOKPACK_RETURN_IF_ERROR(DocumentExtent(i, &offset, &length));
  const Impl& d = *impl_;
  // The document's own shard (an empty one may sit at a shard's end).
  const size_t k = d.ShardOfDocument(i);
  const Impl::Shard& s = d.shards[k];
  const char* base = s.bin->data();
  if (length == 0) return TokenView{base, 0};  // An empty .bin maps to null.
  if (d.IsRemoved(k, i - s.first_document + s.first_entry)) {
    // The mapping still holds its tokens; a removed document reads as pad.
    return FailedPreconditionError("document " + std::to_string(i) + " of " + d.path +
                                   " is removed (removed.json); use ReadTokens, which reads it "
                                   "as pad tokens");
  }
  if (base == nullptr) {
    return FailedPreconditionError(s.bin->name() + " is not memory-resident; use ReadTokens");
  }
  TokenView view;
  view.data = base + (offset - s.first_token + s.token_base) * TokenDtypeSize(d.manifest.dtype);
  view.length = length;
  return view;
}

}  // namespace tokpack
