// removed.json (docs/format.md 17): the documents of a dataset to be read as
// removed (takedowns), beside manifest.json. It is named by no manifest and
// covered by no fingerprint, so adding to it leaves the dataset's identity,
// and every cursor saved on it, as they were; instead it names the
// fingerprint of the dataset it was made for, and a list made for another
// (say, before a rebuild) is refused rather than applied to other documents.
// An untrusted file: bounded (kMaxRemovedListBytes), its fields checked.
#ifndef TOKPACK_SRC_FORMAT_REMOVED_LIST_H_
#define TOKPACK_SRC_FORMAT_REMOVED_LIST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokpack/status.h"

namespace tokpack {

inline constexpr const char* kRemovedFileName = "removed.json";
inline constexpr int kRemovedListVersion = 1;

struct RemovedList {
  uint64_t fingerprint = 0;         // Manifest::Fingerprint() of the dataset it is for.
  std::vector<uint64_t> documents;  // Document indices of the whole dataset, increasing.
};

// Parses the text of a removed.json: "format" is "tokpack-removed",
// "version" 1, "fingerprint" 16 lowercase hex digits, "documents" unsigned
// integers in strictly increasing order; no other keys. InvalidArgument
// naming `source` and the field otherwise.
StatusOr<RemovedList> ParseRemovedList(std::string_view text, std::string_view source);

// ParseRemovedList, then checks the list against the dataset it lies in:
// FailedPrecondition when it was made for another fingerprint (another
// version of the dataset), InvalidArgument for an index not below
// `num_documents`. Returns the documents.
StatusOr<std::vector<uint64_t>> ParseRemovedListFor(std::string_view text, std::string_view source,
                                                    uint64_t fingerprint, uint64_t num_documents);

// The text of removed.json for `list` (documents increasing), one index a
// line, so that a list kept in version control diffs by document.
std::string RemovedListJson(const RemovedList& list);

// The text of RemovedListJson(list), or ResourceExhausted naming `target`
// when it passes kMaxRemovedListBytes, which every reader would refuse.
StatusOr<std::string> RemovedListText(const RemovedList& list, std::string_view target);

// The removal list a dataset of `fingerprint` publishes in place of the one
// it replaces: `own` (its own list's text; empty: none), plus the documents
// of `replaced` (the replaced dataset's list: NotFound, or any error, for
// none; an unreadable one is not carried, readers refused it) when that list
// names the same fingerprint, i.e. the same tokens in the same order: an
// identical rebuild, re-merge or re-push keeps the takedowns made on what it
// replaces. Empty: no list. Errors name `target`.
StatusOr<std::string> CarriedRemovedList(std::string_view own,
                                         const StatusOr<std::string>& replaced,
                                         uint64_t fingerprint, std::string_view target);

}  // namespace tokpack

#endif  // TOKPACK_SRC_FORMAT_REMOVED_LIST_H_
