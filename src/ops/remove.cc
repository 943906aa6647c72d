// remove: edits a dataset's removal list (removed.json, docs/format.md 17),
// the documents its readers serve as pad tokens with no loss. The list is a
// file beside the manifest, never part of the dataset's identity, so a
// removal moves no cursor; it is bound to the fingerprint instead, and the
// edit is refused when the dataset changed while it was being made.
#include <algorithm>
#include <functional>
#include <iterator>
#include <set>
#include <utility>

#include "base/file_system.h"
#include "format/removed_list.h"
#include "format/staging_dir.h"
#include "storage/http_store.h"
#include "storage/object_url.h"
#include "tokpack/dataset_ops.h"

namespace tokpack {
namespace {

// The list's file where it lies: read whole, of at most kMaxRemovedListBytes
// (NotFound when there is none yet), and written whole.
struct ListFile {
  std::string source;  // For messages.
  std::function<StatusOr<std::string>()> read;
  std::function<Status(const std::string& data)> write;
};

// The documents `request` names in `ds`, sorted and unique: its indices
// (checked against the end) and every document of each id.
StatusOr<std::vector<uint64_t>> RequestedDocuments(const Dataset& ds,
                                                   const RemovalRequest& request) {
  std::set<uint64_t> docs;
  for (const uint64_t d : request.documents) {
    if (d >= ds.num_documents()) {
      return InvalidArgumentError("document " + std::to_string(d) + " is past the last of the " +
                                  std::to_string(ds.num_documents()) + " documents of " +
                                  ds.path() + "; nothing was changed");
    }
    docs.insert(d);
  }
  for (const std::string& id : request.ids) {
    TOKPACK_ASSIGN_OR_RETURN(const std::vector<uint64_t> found, ds.FindById(id));
    if (found.empty()) {
      return NotFoundError("no document of " + ds.path() + " has the id '" + id +
                           "'; nothing was changed");
    }
    docs.insert(found.begin(), found.end());
  }
  return std::vector<uint64_t>(docs.begin(), docs.end());
}

// The list as `file` holds it for the dataset of `m` (empty when there is
// none), `docs` applied, written back unless nothing changed.
StatusOr<RemovalResult> Edit(const ListFile& file, const Manifest& m,
                             const std::vector<uint64_t>& docs, bool restore) {
  StatusOr<std::string> text = file.read();
  if (!text.ok() && text.status().code() != StatusCode::kNotFound) return text.status();
  const bool existed = text.ok();
  RemovedList list{m.Fingerprint(), {}};
  if (existed) {
    TOKPACK_ASSIGN_OR_RETURN(
        list.documents,
        ParseRemovedListFor(*text, file.source, list.fingerprint, m.TotalDocuments()));
  }
  std::vector<uint64_t> next;
  if (restore) {
    std::set_difference(list.documents.begin(), list.documents.end(), docs.begin(), docs.end(),
                        std::back_inserter(next));
  } else {
    std::set_union(list.documents.begin(), list.documents.end(), docs.begin(), docs.end(),
                   std::back_inserter(next));
  }
  RemovalResult result;
  const uint64_t moved =
      restore ? list.documents.size() - next.size() : next.size() - list.documents.size();
  result.changed = moved;
  result.unchanged = docs.size() - moved;
  result.total = next.size();
  if (moved == 0) return result;  // The list stays as it was, file and all.
  list.documents = std::move(next);
  TOKPACK_ASSIGN_OR_RETURN(const std::string data, RemovedListText(list, file.source));
  TOKPACK_RETURN_IF_ERROR(file.write(data).WithContext("writing " + file.source));
  return result;
}

// Refuses the edit when the dataset whose ids were looked up is not the one
// whose list is written (it was rebuilt or re-merged meanwhile).
Status SameDataset(const Manifest& m, const Dataset& ds) {
  if (m.Fingerprint() == ds.fingerprint()) return Status::Ok();
  return FailedPreconditionError(ds.path() + " was replaced while its documents were looked up " +
                                 "(fingerprint " + HashToHex(ds.fingerprint()) + ", now " +
                                 HashToHex(m.Fingerprint()) + "); nothing was changed, run again");
}

}  // namespace

StatusOr<RemovalResult> RemoveDocuments(const std::string& path, const StorageOptions& storage,
                                        const RemovalRequest& request) {
  if (request.documents.empty() && request.ids.empty()) {
    return InvalidArgumentError("no document to " +
                                std::string(request.restore ? "restore" : "remove") + " given");
  }
  // Opened whole: its current list is checked, and ids are looked up in it.
  TOKPACK_ASSIGN_OR_RETURN(std::shared_ptr<Dataset> ds, Dataset::Open(path, storage));
  if (!ds->has_manifest()) {
    return FailedPreconditionError(path +
                                   " is a bare Megatron prefix: a removal list lies beside a "
                                   "manifest (tokpack import writes one)");
  }
  TOKPACK_ASSIGN_OR_RETURN(const std::vector<uint64_t> docs, RequestedDocuments(*ds, request));
  if (!IsRemoteUrl(path)) {
    // Held while the list is read and replaced, so that two local removals
    // do not lose one another's documents.
    TOKPACK_ASSIGN_OR_RETURN(DatasetDirLock lock, DatasetDirLock::Take(path));
    TOKPACK_ASSIGN_OR_RETURN(const Manifest m, Manifest::Load(path));
    TOKPACK_RETURN_IF_ERROR(SameDataset(m, *ds));
    const ListFile file{
        JoinPath(path, kRemovedFileName),
        [&] {
          return ReadDatasetFile(path, kRemovedFileName, kMaxRemovedListBytes, Links::kRefuse);
        },
        [&](const std::string& data) {
          return WriteFileAtomically(PosixFileSystem(), path, kRemovedFileName, data);
        }};
    return Edit(file, m, docs, request.restore);
  }
  TOKPACK_ASSIGN_OR_RETURN(ObjectLocation location, ResolveObjectUrl(path, storage));
  if (location.kind == ObjectLocation::Kind::kHttp) {
    return InvalidArgumentError("remove writes " + path + "/" + kRemovedFileName +
                                " with a PUT, which needs an object store (s3:// or gs://)");
  }
  const HttpStore store(std::move(location), HttpOptions::From(storage));
  TOKPACK_ASSIGN_OR_RETURN(const std::string text,
                           store.Get(Manifest::kFileName, Manifest::kMaxJsonBytes));
  TOKPACK_ASSIGN_OR_RETURN(const Manifest m,
                           Manifest::Parse(text, store.location().UrlOf(Manifest::kFileName)));
  TOKPACK_RETURN_IF_ERROR(SameDataset(m, *ds));
  const ListFile file{store.location().UrlOf(kRemovedFileName),
                      [&] { return store.Get(kRemovedFileName, kMaxRemovedListBytes); },
                      [&](const std::string& data) { return store.Put(kRemovedFileName, data); }};
  return Edit(file, m, docs, request.restore);
}

}  // namespace tokpack
