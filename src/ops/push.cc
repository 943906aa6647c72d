// push: publishes a local dataset in an object store so that readers of the
// URL always find one whole dataset (docs/format.md, "Publishing"): the files
// go up as a new generation, objects under "<url>/g-<id>/" that no manifest
// names yet; manifest.json, written last in one PUT, switches readers to it;
// then the objects of the manifest it replaced are deleted.
#include <time.h>

#include <cstdio>
#include <random>
#include <set>

#include "io/file_system.h"
#include "storage/http_store.h"
#include "storage/object_url.h"
#include "tokpack/dataset_ops.h"

namespace tokpack {
namespace {

// A fresh generation directory: time-ordered for whoever lists the bucket,
// random so that two pushes in one second differ.
std::string NewGeneration() {
  std::random_device random;
  char name[48];
  std::snprintf(name, sizeof(name), "g-%llx-%08x", static_cast<unsigned long long>(::time(nullptr)),
                static_cast<unsigned>(random()));
  return name;
}

// Whether `path` (from a replaced manifest, so CheckDatasetPath's rule
// holds) names an object of the dataset itself that a push may delete: a
// plain name (the flat layout of earlier versions) or one inside a
// generation directory. Anything else, such as the parts a remote merge
// refers to, is never deleted.
bool OwnedObject(const std::string& path) {
  return path.find('/') == std::string::npos || path.rfind("g-", 0) == 0;
}

// The names of the objects a manifest refers to.
std::set<std::string> ObjectsOf(const Manifest& m) {
  std::set<std::string> names;
  for (const ShardInfo& s : m.shards) {
    names.insert(s.path + ".bin");
    names.insert(s.path + ".idx");
  }
  if (!m.tokenizer.file.empty()) names.insert(m.tokenizer.file);
  if (!m.provenance.inputs_file.empty()) names.insert(m.provenance.inputs_file);
  return names;
}

// The manifest at the store now, or "" when there is none.
StatusOr<std::string> CurrentManifest(const HttpStore& store) {
  StatusOr<std::string> text = store.Get(Manifest::kFileName, Manifest::kMaxJsonBytes);
  if (text.ok() || text.status().code() != StatusCode::kNotFound) return text;
  return std::string();
}

// Deletes what the replaced manifest `old_text` referred to and `now` does
// not; best effort, after the switch, so readers of the old manifest that
// are still running may then fail (docs/format.md).
void DeleteReplaced(const HttpStore& store, const std::string& old_text, const Manifest& now) {
  StatusOr<Manifest> old = Manifest::Parse(old_text, store.location().UrlOf(Manifest::kFileName));
  if (!old.ok()) return;  // Nothing known to delete.
  // The old manifest is untrusted: whatever it names, the new one's objects
  // and the manifest just published stay.
  std::set<std::string> keep = ObjectsOf(now);
  keep.insert(Manifest::kFileName);
  for (const std::string& name : ObjectsOf(*old)) {
    if (OwnedObject(name) && keep.count(name) == 0) store.Delete(name).IgnoreError();
  }
}

}  // namespace

StatusOr<uint64_t> PushDataset(const PushOptions& options) {
  if (IsRemoteUrl(options.dir)) {
    return InvalidArgumentError("push uploads a local dataset, and " + options.dir +
                                " is remote already; copy it with the store's own tools");
  }
  StatusOr<Manifest> loaded = Manifest::Load(options.dir);
  if (!loaded.ok()) {
    // A bare prefix has no chunk checksums, which every remote read verifies.
    return loaded.status().WithContext(
        "push needs a tokpack dataset (its checksums guard remote reads)");
  }
  Manifest m = std::move(*loaded);
  TOKPACK_ASSIGN_OR_RETURN(ObjectLocation location, ResolveObjectUrl(options.url, options.storage));
  if (location.kind == ObjectLocation::Kind::kHttp) {
    return InvalidArgumentError("push needs an object store (s3:// or gs://), not " + options.url);
  }
  const std::string generation = NewGeneration();
  struct File {
    std::string local;   // Relative to options.dir.
    std::string remote;  // Relative to the URL.
    uint64_t bytes;      // What the manifest says; 0: not recorded.
  };
  std::vector<File> files;
  // Paths are confined to the dataset (Manifest::Parse checked them).
  const auto add = [&](std::string* path, std::vector<std::pair<std::string, uint64_t>> kinds) {
    for (const auto& [ext, bytes] : kinds) {
      files.push_back({*path + ext, generation + "/" + *path + ext, bytes});
    }
    *path = generation + "/" + *path;
  };
  for (ShardInfo& s : m.shards) add(&s.path, {{".bin", s.bin.bytes}, {".idx", s.idx.bytes}});
  if (!m.tokenizer.file.empty()) add(&m.tokenizer.file, {{"", 0}});
  if (!m.provenance.inputs_file.empty()) add(&m.provenance.inputs_file, {{"", 0}});
  // The prefix lengthens every path: the manifest readers will get must pass
  // their checks before anything goes up.
  const std::string json = m.ToJson();
  TOKPACK_RETURN_IF_ERROR(
      Manifest::Parse(json, JoinPath(options.dir, Manifest::kFileName) + " under " + generation)
          .status()
          .WithContext("push cannot publish this dataset"));
  for (const File& f : files) {
    // Plain files only: a merged or imported dataset links to others' shards
    // (push its parts instead), and a planted link must not upload a file
    // from elsewhere.
    StatusOr<ReadOnlyFile> file = ReadOnlyFile::Open(options.dir, f.local, Links::kRefuse);
    if (!file.ok()) return file.status().WithContext("push uploads the files of one directory");
    if (f.bytes != 0 && file->size() != f.bytes) {
      return DataLossError(file->path() + " has " + std::to_string(file->size()) +
                           " bytes but manifest.json says " + std::to_string(f.bytes) +
                           "; run tokpack verify");
    }
  }

  HttpStore store(location, HttpOptions::From(options.storage));
  TOKPACK_ASSIGN_OR_RETURN(std::string replaced, CurrentManifest(store));
  if (!replaced.empty() && !options.force) {
    return AlreadyExistsError(options.url + " already holds a dataset; use --force to replace it");
  }
  const auto cancelled = [&] { return options.cancel && options.cancel->load(); };
  uint64_t total = 0;
  size_t tried = 0;  // Files whose upload began.
  Status s;
  for (; tried < files.size() && s.ok(); ++tried) {
    if (cancelled()) {
      s = CancelledError("push interrupted");
      break;
    }
    const File& f = files[tried];
    StatusOr<ReadOnlyFile> file = ReadOnlyFile::Open(options.dir, f.local, Links::kRefuse);
    s = file.status();
    if (s.ok()) {
      s = store.PutFile(f.remote, *file, options.part_bytes)
              .WithContext("uploading " + file->path());
    }
    if (!s.ok()) continue;
    total += file->size();
    if (options.on_file) options.on_file(f.remote, file->size());
  }
  if (s.ok() && cancelled()) s = CancelledError("push interrupted");
  // Re-checked: another writer may have published since the start.
  if (s.ok()) {
    StatusOr<std::string> now = CurrentManifest(store);
    s = now.status();
    if (now.ok()) replaced = std::move(*now);
    if (s.ok() && !replaced.empty() && !options.force) {
      s = AlreadyExistsError(options.url +
                             " received a dataset while this push ran (another writer?); it was "
                             "left as it is; use --force to replace it");
    }
  }
  if (!s.ok()) {
    // Nothing refers to the new generation: remove what went up of it.
    for (size_t i = 0; i < tried; ++i) {
      if (files[i].remote != files[i].local) store.Delete(files[i].remote).IgnoreError();
    }
    return s;
  }
  // The switch. Should it fail, the generation stays: a PUT that timed out
  // may still have taken effect.
  TOKPACK_RETURN_IF_ERROR(
      store.Put(Manifest::kFileName, json).WithContext("publishing " + options.url));
  total += json.size();
  if (options.on_file) options.on_file(Manifest::kFileName, json.size());
  if (!replaced.empty()) DeleteReplaced(store, replaced, m);
  return total;
}

}  // namespace tokpack
