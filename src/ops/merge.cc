#include <algorithm>
#include <cstdio>
#include <functional>

#include "base/chunk_hasher.h"
#include "base/file_system.h"
#include "format/dataset_path.h"
#include "format/removed_list.h"
#include "format/staging_dir.h"
#include "format/token_identity.h"
#include "reader/dataset_internal.h"
#include "storage/http_store.h"
#include "storage/object_url.h"
#include "storage/remote_source.h"
#include "tokpack/builder.h"
#include "tokpack/dataset_ops.h"
#include "tokpack/version.h"

namespace tokpack {
namespace {

// The link in a local merge's output to its part i.
std::string PartLink(size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "part-%05zu", i);
  return buf;
}

// The parts' files must have one layout; their token identity is checked
// for all parts at once (CheckTokenIdentity).
Status CheckCompatible(const Manifest& a, const std::string& a_name, const Manifest& b,
                       const std::string& b_name) {
  std::string what;
  if (a.dtype != b.dtype)
    what = "token dtypes";
  else if (a.chunk_bytes != b.chunk_bytes)
    what = "checksum chunk sizes";
  if (!what.empty()) {
    return InvalidArgumentError("cannot merge '" + a_name + "' and '" + b_name + "': different " +
                                what);
  }
  // Every shard of a dataset has a mask or none does (docs/format.md 3.1);
  // a part without shards has neither and goes with any.
  if (!a.shards.empty() && !b.shards.empty() && a.HasLossMasks() != b.HasLossMasks()) {
    const bool a_masks = a.HasLossMasks();
    return InvalidArgumentError("cannot merge '" + a_name + "' and '" + b_name + "': '" +
                                (a_masks ? a_name : b_name) + "' has loss masks and '" +
                                (a_masks ? b_name : a_name) +
                                "' has none (rebuild it with --loss-masks, where every token of "
                                "a record without spans carries loss)");
  }
  return Status::Ok();
}

// The merged manifest's shards, provenance and counts, from parts in order;
// `shard_dir` gives the path of part i's shard `path` relative to the output.
StatusOr<Manifest> Combine(const std::vector<std::pair<std::string, Manifest>>& parts,
                           const std::function<std::string(size_t, const std::string&)>& shard_at) {
  std::vector<NamedManifest> named;
  for (const auto& [dir, m] : parts) named.push_back({dir, &m});
  TOKPACK_RETURN_IF_ERROR(CheckTokenIdentity(named, Unknown::kDiffers).WithContext("cannot merge"));
  Manifest out;
  const Manifest& first = parts[0].second;
  out.dtype = first.dtype;
  out.chunk_bytes = first.chunk_bytes;
  out.tokenizer = first.tokenizer;
  out.tokenizer.file.clear();
  out.provenance.version = Version();
  out.provenance.kind = "merge";
  out.provenance.settings = first.provenance.settings;
  // Masks are compared with the first part that has shards.
  size_t with_shards = 0;
  while (with_shards + 1 < parts.size() && parts[with_shards].second.shards.empty()) ++with_shards;
  // Document sources are kept only when every part with documents has them
  // (each part's .src numbers its own inputs, which follow the inputs of the
  // parts before it), and per-input counts only when every part has them: a
  // merged dataset has origins for all its documents or for none, never
  // wrong ones.
  bool sources = true, input_counts = true;
  for (const auto& [dir, m] : parts) {
    if (!m.shards.empty() && !m.HasSources()) sources = false;
    if (m.provenance.input_counts.size() != m.provenance.inputs.size()) input_counts = false;
  }
  uint64_t input_base = 0;  // Inputs of the parts before this one.
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& [dir, m] = parts[i];
    TOKPACK_RETURN_IF_ERROR(
        CheckCompatible(parts[with_shards].second, parts[with_shards].first, m, dir));
    for (const ShardInfo& shard : m.shards) {
      ShardInfo moved = shard;
      moved.path = shard_at(i, shard.path);
      moved.sources_input_offset += input_base;
      out.shards.push_back(std::move(moved));
    }
    const Provenance& p = m.provenance;
    input_base += p.inputs.size();
    if (input_counts) {
      out.provenance.input_counts.insert(out.provenance.input_counts.end(), p.input_counts.begin(),
                                         p.input_counts.end());
    }
    out.provenance.inputs.insert(out.provenance.inputs.end(), p.inputs.begin(), p.inputs.end());
    out.provenance.sources.push_back(dir);
    BuildCounts& c = out.provenance.counts;
    c.documents += p.counts.documents;
    c.tokens += p.counts.tokens;
    c.skipped_empty += p.counts.skipped_empty;
    c.bad_lines += p.counts.bad_lines;
    c.utf8_repaired += p.counts.utf8_repaired;
    c.skipped_invalid_utf8 += p.counts.skipped_invalid_utf8;
    c.unknown_tokens += p.counts.unknown_tokens;
    c.byte_fallback_tokens += p.counts.byte_fallback_tokens;
  }
  out.provenance.settings.doc_sources = sources && !out.shards.empty();
  if (!out.provenance.settings.doc_sources) {
    for (ShardInfo& shard : out.shards) {
      shard.has_sources = false;
      shard.sources = FileDigest();
      shard.sources_input_offset = 0;
    }
  }
  return out;
}

// Checks that parts of a --part build are all there, once each, and sorts
// them by part index.
Status OrderParts(std::vector<std::pair<std::string, Manifest>>* parts) {
  const int count = (*parts)[0].second.provenance.part_count;
  const bool split = std::any_of(parts->begin(), parts->end(),
                                 [](const auto& s) { return s.second.provenance.part_count > 1; });
  if (!split) return Status::Ok();
  std::vector<int> seen(count, 0);
  for (const auto& [dir, m] : *parts) {
    if (m.provenance.part_count != count) {
      return InvalidArgumentError(
          "'" + dir + "' is part " + std::to_string(m.provenance.part_index) + "/" +
          std::to_string(m.provenance.part_count) + " but '" + (*parts)[0].first + "' is one of " +
          std::to_string(count) + " parts");
    }
    if (++seen[m.provenance.part_index] > 1) {
      return InvalidArgumentError("part " + std::to_string(m.provenance.part_index) + "/" +
                                  std::to_string(count) + " is given twice");
    }
  }
  for (int i = 0; i < count; ++i) {
    if (seen[i] == 0) {
      return InvalidArgumentError("part " + std::to_string(i) + "/" + std::to_string(count) +
                                  " is missing from the merge");
    }
  }
  std::stable_sort(parts->begin(), parts->end(), [](const auto& a, const auto& b) {
    return a.second.provenance.part_index < b.second.provenance.part_index;
  });
  return Status::Ok();
}

// Where a merge puts its copy of the tokenizer `file` of part `part` whose
// bytes are `model`: checked against the hash the parts agree on, and named
// by its last component, at the output's root. An untrusted name must not
// reach a file the merge writes itself or, through a part's link (local) or
// prefix (remote), a part's own files.
StatusOr<std::string> TokenizerCopy(const std::string& part, const std::string& file,
                                    const std::string& model, uint64_t model_xxh3) {
  const std::string where = "tokenizer '" + file + "' of part '" + part + "'";
  if (Xxh3(model) != model_xxh3) {
    return DataLossError(where + " does not match the hash its manifest records (" +
                         HashToHex(model_xxh3) + ")");
  }
  const std::string name = file.substr(file.rfind('/') + 1);
  if (name == Manifest::kFileName || name == Provenance::kInputsFileName ||
      name == kRemovedFileName || name[0] == '.' || name.rfind("part-", 0) == 0) {
    return InvalidArgumentError(where + ": a merge cannot name its tokenizer copy '" + name +
                                "' (a name of the merge's own files)");
  }
  return name;
}

// The merged removal list (docs/format.md 17): each part's, read by
// read(i) (NotFound: it has none) and checked against the part (one made
// for another version of it fails the merge: its indices would remove other
// documents), moved past the documents of the parts before it. Empty when
// no part has one.
StatusOr<std::vector<uint64_t>> MergedRemovals(
    const std::vector<std::pair<std::string, Manifest>>& parts,
    const std::function<StatusOr<std::string>(size_t i)>& read,
    const std::function<std::string(size_t i)>& where) {
  std::vector<uint64_t> merged;
  uint64_t offset = 0;  // Documents of the parts before this one.
  for (size_t i = 0; i < parts.size(); ++i) {
    const Manifest& m = parts[i].second;
    StatusOr<std::string> text = read(i);
    if (text.ok()) {
      TOKPACK_ASSIGN_OR_RETURN(
          const std::vector<uint64_t> docs,
          ParseRemovedListFor(*text, where(i), m.Fingerprint(), m.TotalDocuments()));
      for (const uint64_t d : docs) merged.push_back(offset + d);
    } else if (text.status().code() != StatusCode::kNotFound) {
      return text.status();
    }
    offset += m.TotalDocuments();
  }
  return merged;
}

// How a merge reaches the files of one part: local paths, or objects.
struct PartFiles {
  std::function<std::string(const std::string& name)> where;  // For errors.
  std::function<StatusOr<uint64_t>(const std::string& name)> size;
  std::function<StatusOr<std::string>(const std::string& name)> read;
};

// Checks that the part's shard files have the sizes its manifest says (a part
// being rebuilt may have new shards beside its old manifest) and loads its
// input side file.
Status CheckPart(const PartFiles& files, Manifest* m) {
  for (const ShardInfo& shard : m->shards) {
    for (const auto& [ext, bytes] : {std::pair<const char*, uint64_t>{".bin", shard.bin.bytes},
                                     {".idx", shard.idx.bytes},
                                     {".mask", shard.has_mask ? shard.mask.bytes : 0},
                                     {".src", shard.has_sources ? shard.sources.bytes : 0}}) {
      if (!shard.has_mask && std::string_view(ext) == ".mask") continue;
      if (!shard.has_sources && std::string_view(ext) == ".src") continue;
      const std::string name = shard.path + ext;
      TOKPACK_ASSIGN_OR_RETURN(uint64_t size, files.size(name));
      if (size != bytes) {
        return DataLossError(files.where(name) + ": " + std::to_string(size) +
                             " bytes, its manifest says " + std::to_string(bytes));
      }
    }
  }
  const std::string name = m->provenance.inputs_file;
  if (name.empty()) return Status::Ok();
  TOKPACK_ASSIGN_OR_RETURN(std::string list, files.read(name));
  return ReadInputList(list, files.where(name), &m->provenance);
}

// A merge in object storage: the parts lie under the output prefix (as
// scripts/slurm_build.sbatch pushes them), so the merged manifest points
// into them by relative keys; manifest.json is written last.
StatusOr<Manifest> MergeRemote(const std::string& output, const std::vector<std::string>& sources,
                               bool force, const StorageOptions& storage) {
  const std::string root = output.back() == '/' ? output : output + "/";
  TOKPACK_ASSIGN_OR_RETURN(ObjectLocation loc, ResolveObjectUrl(output, storage));
  HttpStore store(std::move(loc), HttpOptions::From(storage));
  std::vector<std::pair<std::string, Manifest>> parts;
  for (const std::string& dir : sources) {
    std::string rel = dir.compare(0, root.size(), root) == 0 ? dir.substr(root.size()) : "";
    while (!rel.empty() && rel.back() == '/') rel.pop_back();
    // The merged manifest names the part's files by this prefix.
    if (!CheckDatasetPath(rel).ok()) {
      return InvalidArgumentError("part '" + dir + "' must lie under the merge output '" + output +
                                  "' (push parts to " + root + "part-<i>)");
    }
    TOKPACK_ASSIGN_OR_RETURN(auto opener, RemoteOpener::ForUrl(dir, storage));
    TOKPACK_ASSIGN_OR_RETURN(Manifest m, LoadRemoteManifest(*opener));
    const std::string under = rel + "/";
    PartFiles files{
        [&](const std::string& name) { return store.location().UrlOf(under + name); },
        [&](const std::string& name) { return store.Size(under + name); },
        [&](const std::string& name) { return store.Get(under + name, kMaxInputListBytes); }};
    TOKPACK_RETURN_IF_ERROR(CheckPart(files, &m));
    parts.push_back({rel, std::move(m)});
  }
  TOKPACK_RETURN_IF_ERROR(OrderParts(&parts));
  TOKPACK_ASSIGN_OR_RETURN(Manifest out, Combine(parts, [&](size_t i, const std::string& shard) {
                             return parts[i].first + "/" + shard;
                           }));
  const auto part_list = [&](size_t i) { return parts[i].first + "/" + kRemovedFileName; };
  TOKPACK_ASSIGN_OR_RETURN(
      const std::vector<uint64_t> removed,
      MergedRemovals(
          parts, [&](size_t i) { return store.Get(part_list(i), kMaxRemovedListBytes); },
          [&](size_t i) { return store.location().UrlOf(part_list(i)); }));
  if (!force) {
    StatusOr<uint64_t> existing = store.Size(Manifest::kFileName);
    if (existing.ok()) {
      return AlreadyExistsError(output + " already holds a dataset; use --force to replace it");
    }
    if (existing.status().code() != StatusCode::kNotFound) return existing.status();
  }
  const Manifest& first = parts[0].second;
  if (!first.tokenizer.file.empty()) {
    TOKPACK_ASSIGN_OR_RETURN(
        std::string model,
        store.Get(parts[0].first + "/" + first.tokenizer.file, kMaxTokenizerBytes));
    TOKPACK_ASSIGN_OR_RETURN(out.tokenizer.file, TokenizerCopy(parts[0].first, first.tokenizer.file,
                                                               model, first.tokenizer.model_xxh3));
    TOKPACK_RETURN_IF_ERROR(store.Put(out.tokenizer.file, model));
  }
  if (out.provenance.inputs.size() > Provenance::kMaxListedInputs) {
    TOKPACK_RETURN_IF_ERROR(
        store.Put(Provenance::kInputsFileName, InputListFile(out.provenance.inputs)));
  }
  // The list goes up before the manifest, so that no reader sees the merged
  // dataset without it; a list of a dataset this merge replaces goes after
  // it, so that a reader meanwhile refuses (another fingerprint) rather
  // than serve documents removed there.
  // The list of a merge it replaces with the same tokens is kept too.
  std::string own;
  if (!removed.empty()) {
    TOKPACK_ASSIGN_OR_RETURN(own, RemovedListText({out.Fingerprint(), removed},
                                                  store.location().UrlOf(kRemovedFileName)));
  }
  TOKPACK_ASSIGN_OR_RETURN(
      const std::string list,
      CarriedRemovedList(own, store.Get(kRemovedFileName, kMaxRemovedListBytes), out.Fingerprint(),
                         store.location().UrlOf(kRemovedFileName)));
  if (!list.empty()) TOKPACK_RETURN_IF_ERROR(store.Put(kRemovedFileName, list));
  TOKPACK_RETURN_IF_ERROR(store.Put(Manifest::kFileName, out.ToJson()));
  if (list.empty()) TOKPACK_RETURN_IF_ERROR(store.Delete(kRemovedFileName));
  return out;
}

}  // namespace

StatusOr<Manifest> MergeDatasets(const std::string& output, const std::vector<std::string>& sources,
                                 bool force, const StorageOptions& storage) {
  if (sources.empty()) return InvalidArgumentError("merge needs at least one part directory");
  if (IsRemoteUrl(output)) return MergeRemote(output, sources, force, storage);
  std::vector<std::pair<std::string, Manifest>> parts;
  for (const std::string& dir : sources) {
    if (IsRemoteUrl(dir)) {
      return InvalidArgumentError("part '" + dir + "' is remote, and a local merge output '" +
                                  output +
                                  "' can only refer to local shards; merge into a URL the parts "
                                  "lie under instead");
    }
    TOKPACK_ASSIGN_OR_RETURN(Manifest m, Manifest::Load(dir));
    PartFiles files{[&](const std::string& name) { return JoinPath(dir, name); },
                    [&](const std::string& name) { return FileSize(JoinPath(dir, name)); },
                    [&](const std::string& name) {
                      return ReadDatasetFile(dir, name, kMaxInputListBytes, Links::kRefuse);
                    }};
    TOKPACK_RETURN_IF_ERROR(CheckPart(files, &m));
    parts.push_back({dir, std::move(m)});
  }
  TOKPACK_RETURN_IF_ERROR(OrderParts(&parts));
  TOKPACK_ASSIGN_OR_RETURN(Manifest out, Combine(parts, [&](size_t i, const std::string& shard) {
                             return PartLink(i) + "/" + shard;
                           }));
  TOKPACK_ASSIGN_OR_RETURN(
      const std::vector<uint64_t> removed,
      MergedRemovals(
          parts,
          [&](size_t i) {
            return ReadDatasetFile(parts[i].first, kRemovedFileName, kMaxRemovedListBytes,
                                   Links::kRefuse);
          },
          [&](size_t i) { return JoinPath(parts[i].first, kRemovedFileName); }));
  const Manifest& first = parts[0].second;
  // The merged manifest refers to the parts' files: the output must not
  // replace them.
  std::vector<std::string> inputs;
  for (const auto& [dir, m] : parts) {
    inputs.push_back(dir);
    if (!m.tokenizer.file.empty()) inputs.push_back(JoinPath(dir, m.tokenizer.file));
    for (const ShardInfo& shard : m.shards) {
      inputs.push_back(JoinPath(dir, shard.path + ".bin"));
      inputs.push_back(JoinPath(dir, shard.path + ".idx"));
    }
  }
  TOKPACK_ASSIGN_OR_RETURN(auto staging, StagingDir::Create(output, force, std::move(inputs)));
  // Written before the part links exist, so that nothing is written through one.
  if (!first.tokenizer.file.empty()) {
    TOKPACK_ASSIGN_OR_RETURN(
        std::string model,
        ReadDatasetFile(parts[0].first, first.tokenizer.file, kMaxTokenizerBytes, Links::kRefuse));
    TOKPACK_ASSIGN_OR_RETURN(out.tokenizer.file, TokenizerCopy(parts[0].first, first.tokenizer.file,
                                                               model, first.tokenizer.model_xxh3));
    TOKPACK_RETURN_IF_ERROR(
        WriteFileAtomically(PosixFileSystem(), staging->path(), out.tokenizer.file, model));
  }
  if (!removed.empty()) {
    TOKPACK_ASSIGN_OR_RETURN(const std::string list,
                             RemovedListText({out.Fingerprint(), removed},
                                             JoinPath(staging->output(), kRemovedFileName)));
    TOKPACK_RETURN_IF_ERROR(
        WriteFileAtomically(PosixFileSystem(), staging->path(), kRemovedFileName, list));
  }
  // A manifest names only files beneath its directory, so each part is
  // reached through a link in it.
  for (size_t i = 0; i < parts.size(); ++i) {
    TOKPACK_RETURN_IF_ERROR(staging->Link(parts[i].first, PartLink(i)));
  }
  if (out.provenance.inputs.size() > Provenance::kMaxListedInputs) {
    TOKPACK_RETURN_IF_ERROR(WriteFileAtomically(PosixFileSystem(), staging->path(),
                                                Provenance::kInputsFileName,
                                                InputListFile(out.provenance.inputs)));
  }
  TOKPACK_RETURN_IF_ERROR(staging->Commit(PosixFileSystem(), out.ToJson()));
  return out;
}

}  // namespace tokpack
