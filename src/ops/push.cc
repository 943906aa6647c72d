// push: publishes a local dataset in an object store so that readers of the
// URL always find one whole dataset (docs/format.md, "Publishing"): the files
// go up as a new generation, objects under "<url>/g-<id>/" that no manifest
// names yet, each byte checked against the manifest as it is read for the
// upload; manifest.json, written last in one PUT once every file went up
// whole and verified, switches readers to it; only then are the objects of
// the manifest it replaced deleted. A push that fails or is refused before
// that PUT removes its generation and leaves the old dataset as it was. The
// removal list (removed.json) lies beside the manifest, outside generations:
// put just before the manifest, or, when the pushed dataset has none, the
// old one deleted just after it, so that a reader never sees the new
// generation without its removals (one that opens the old generation in
// between refuses the list, made for another fingerprint, rather than serve
// what it removes).
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <set>

#include "base/chunk_hasher.h"
#include "base/file_system.h"
#include "format/removed_list.h"
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
    if (s.has_mask) names.insert(s.path + ".mask");
    if (s.has_sources) names.insert(s.path + ".src");
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

// One file of the new generation and what the manifest records of it.
struct File {
  enum class Record {
    kChunks,     // A shard file: its size and chunk checksums (`digest`).
    kTokenizer,  // The tokenizer copy: the xxh3 of the whole file.
    kInputList,  // The inputs side file: the count and hash of its inputs.
  };
  std::string local;   // Relative to the dataset directory.
  std::string remote;  // Relative to the URL.
  Record record;
  const FileDigest* digest = nullptr;  // kChunks: in the manifest being pushed.
};

// Opens `f` under `dir` as push reads it: a plain file (a merged or imported
// dataset links to others' shards: push its parts instead; and a planted link
// must not upload a file from elsewhere), of the size the manifest records,
// and for whole-file records no larger than a reader would read.
StatusOr<ReadOnlyFile> OpenForPush(const std::string& dir, const File& f) {
  StatusOr<ReadOnlyFile> file = ReadOnlyFile::Open(dir, f.local, Links::kRefuse);
  if (!file.ok()) return file.status().WithContext("push uploads the files of one directory");
  if (f.record == File::Record::kChunks && file->size() != f.digest->bytes) {
    return DataLossError(file->path() + " has " + std::to_string(file->size()) +
                         " bytes but manifest.json says " + std::to_string(f.digest->bytes) +
                         "; run tokpack verify");
  }
  const uint64_t cap = f.record == File::Record::kTokenizer   ? kMaxTokenizerBytes
                       : f.record == File::Record::kInputList ? kMaxInputListBytes
                                                              : file->size();
  if (file->size() > cap) {
    return Status(StatusCode::kResourceExhausted,
                  file->path() + " has " + std::to_string(file->size()) +
                      " bytes, more than readers read (" + std::to_string(cap) + ")");
  }
  return file;
}

// Checks one file's bytes, as they are read for its upload (HttpStore::
// PutFile's check), against what the manifest records of it: a shard file
// chunk by chunk, each as soon as it is complete; the tokenizer copy and
// the inputs side file, recorded as wholes, once their last byte is read,
// before that last piece goes up. So the data is read once, and what is
// checked is exactly what is sent: a separate verification pass would leave
// a window in which the file could change before the upload reads it.
class UploadCheck {
 public:
  UploadCheck(const File& f, const ReadOnlyFile& file, const Manifest& m)
      : f_(f), file_(file), m_(m) {
    if (f.record == File::Record::kChunks) {
      chunks_.emplace(file.path(), *f.digest, m.chunk_bytes);
    } else if (f.record == File::Record::kTokenizer) {
      // One "chunk" of the whole file: its xxh3, streamed.
      whole_.emplace(std::max<uint64_t>(file.size(), 1));
    }
  }

  Status operator()(uint64_t offset, std::string_view piece) {
    failure_ = Piece(piece, offset + piece.size() == file_.size());
    return failure_;
  }
  // What the check refused, if it did (else the upload failed, if it did).
  const Status& failure() const { return failure_; }

 private:
  Status Piece(std::string_view piece, bool last) {
    switch (f_.record) {
      case File::Record::kChunks:
        TOKPACK_RETURN_IF_ERROR(chunks_->Update(piece));
        return last ? chunks_->Finish() : Status::Ok();
      case File::Record::kTokenizer: {
        whole_->Update(piece);
        if (!last) return Status::Ok();
        const FileDigest d = whole_->Finish();
        const uint64_t got = d.chunk_xxh3.empty() ? Xxh3("") : d.chunk_xxh3[0];
        if (got == m_.tokenizer.model_xxh3) return Status::Ok();
        return DataLossError(file_.path() + " has checksum " + HashToHex(got) +
                             ", manifest.json says " + HashToHex(m_.tokenizer.model_xxh3) +
                             " for the tokenizer: the file is damaged");
      }
      case File::Record::kInputList: {
        text_.append(piece);
        if (!last) return Status::Ok();
        Provenance p = m_.provenance;  // ReadInputList fills in its inputs.
        return ReadInputList(text_, file_.path(), &p);
      }
    }
    return InternalError("unknown record");
  }

  const File& f_;
  const ReadOnlyFile& file_;
  const Manifest& m_;
  std::optional<ChunkVerifier> chunks_;
  std::optional<ChunkHasher> whole_;
  std::string text_;
  Status failure_;
};

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
  // The removal list goes up as it is, once checked as readers check it.
  StatusOr<std::string> removed =
      ReadDatasetFile(options.dir, kRemovedFileName, kMaxRemovedListBytes, Links::kRefuse);
  if (!removed.ok() && removed.status().code() != StatusCode::kNotFound) return removed.status();
  if (removed.ok()) {
    TOKPACK_RETURN_IF_ERROR(ParseRemovedListFor(*removed, JoinPath(options.dir, kRemovedFileName),
                                                m.Fingerprint(), m.TotalDocuments())
                                .status()
                                .WithContext("push refused"));
  }
  TOKPACK_ASSIGN_OR_RETURN(ObjectLocation location, ResolveObjectUrl(options.url, options.storage));
  if (location.kind == ObjectLocation::Kind::kHttp) {
    return InvalidArgumentError("push needs an object store (s3:// or gs://), not " + options.url);
  }
  const std::string generation = NewGeneration();
  std::vector<File> files;
  // Paths are confined to the dataset (Manifest::Parse checked them).
  const auto add = [&](const std::string& path, const char* ext, File::Record record,
                       const FileDigest* digest = nullptr) {
    files.push_back({path + ext, generation + "/" + path + ext, record, digest});
  };
  // `m` keeps its shards from here on, so the digests stay where they are.
  for (ShardInfo& s : m.shards) {
    add(s.path, ".bin", File::Record::kChunks, &s.bin);
    add(s.path, ".idx", File::Record::kChunks, &s.idx);
    if (s.has_mask) add(s.path, ".mask", File::Record::kChunks, &s.mask);
    if (s.has_sources) add(s.path, ".src", File::Record::kChunks, &s.sources);
    s.path = generation + "/" + s.path;
  }
  if (!m.tokenizer.file.empty()) {
    add(m.tokenizer.file, "", File::Record::kTokenizer);
    m.tokenizer.file = generation + "/" + m.tokenizer.file;
  }
  if (!m.provenance.inputs_file.empty()) {
    add(m.provenance.inputs_file, "", File::Record::kInputList);
    m.provenance.inputs_file = generation + "/" + m.provenance.inputs_file;
  }
  // The prefix lengthens every path: the manifest readers will get must pass
  // their checks before anything goes up.
  const std::string json = m.ToJson();
  TOKPACK_RETURN_IF_ERROR(
      Manifest::Parse(json, JoinPath(options.dir, Manifest::kFileName) + " under " + generation)
          .status()
          .WithContext("push cannot publish this dataset"));
  // What can be refused without reading the files is, before anything goes up.
  for (const File& f : files) TOKPACK_RETURN_IF_ERROR(OpenForPush(options.dir, f).status());

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
    // Opened again, so checked again: the file may have changed since.
    StatusOr<ReadOnlyFile> file = OpenForPush(options.dir, f);
    s = file.status();
    if (s.ok()) {
      UploadCheck check(f, *file, m);
      s = store.PutFile(f.remote, *file, options.part_bytes, std::ref(check));
      if (!check.failure().ok()) {
        s = check.failure().WithContext("push refused, nothing published (" + options.url +
                                        " keeps what it held)");
      } else {
        s = s.WithContext("uploading " + file->path());
      }
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
  // The list the URL ends with: the dataset's own, plus that of the dataset
  // it replaces when both hold the same tokens (takedowns made with `remove
  // s3://...` survive a re-push of identical data).
  const StatusOr<std::string> old_list = store.Get(kRemovedFileName, kMaxRemovedListBytes);
  StatusOr<std::string> list =
      CarriedRemovedList(removed.ok() ? *removed : std::string(), old_list, m.Fingerprint(),
                         store.location().UrlOf(kRemovedFileName));
  if (list.ok() && !list->empty()) {
    s = store.Put(kRemovedFileName, *list).WithContext("uploading the removal list");
  }
  s = list.ok() ? s : list.status();
  if (!s.ok()) {
    for (size_t i = 0; i < tried; ++i) {
      if (files[i].remote != files[i].local) store.Delete(files[i].remote).IgnoreError();
    }
    return s;
  }
  if (!list->empty()) {
    total += list->size();
    if (options.on_file) options.on_file(kRemovedFileName, list->size());
  }
  // The switch. Should it fail, the generation stays: a PUT that timed out
  // may still have taken effect. The list goes back to what it was, so that
  // readers of the old generation are not refused for a list of the new.
  if (Status put = store.Put(Manifest::kFileName, json); !put.ok()) {
    if (!list->empty()) {
      (old_list.ok() ? store.Put(kRemovedFileName, *old_list) : store.Delete(kRemovedFileName))
          .IgnoreError();
    }
    return put.WithContext("publishing " + options.url);
  }
  total += json.size();
  if (options.on_file) options.on_file(Manifest::kFileName, json.size());
  if (list->empty()) {
    TOKPACK_RETURN_IF_ERROR(store.Delete(kRemovedFileName)
                                .WithContext("published " + options.url +
                                             ", but its old removal list is still there, and "
                                             "readers refuse it: delete " +
                                             store.location().UrlOf(kRemovedFileName)));
  }
  if (!replaced.empty()) DeleteReplaced(store, replaced, m);
  return total;
}

}  // namespace tokpack
