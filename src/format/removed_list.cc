#include "format/removed_list.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "base/json_reader.h"
#include "tokpack/file_digest.h"
#include "tokpack/files.h"
#include "tokpack/json_writer.h"

namespace tokpack {

StatusOr<RemovedList> ParseRemovedList(std::string_view text, std::string_view source) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(text.data(), text.size()).get(root); err != simdjson::SUCCESS) {
    return InvalidArgumentError(std::string(source) + ": not valid JSON (" +
                                simdjson::error_message(err) + ")");
  }
  JsonReader r;
  TOKPACK_RETURN_IF_ERROR(JsonReader::Of(root, "", source, JsonReader::Style::kQuoted, &r));
  TOKPACK_RETURN_IF_ERROR(r.OnlyKeys({"format", "version", "fingerprint", "documents"},
                                     "is not a field of removed.json"));
  std::string format;
  TOKPACK_RETURN_IF_ERROR(r.Get("format", &format));
  if (format != "tokpack-removed") {
    return r.Error("format", "is not 'tokpack-removed' (is this a removal list?)");
  }
  int version = 0;
  TOKPACK_RETURN_IF_ERROR(r.Get("version", &version));
  if (version != kRemovedListVersion) {
    return r.Error("version", "is " + std::to_string(version) + "; this tokpack reads version " +
                                  std::to_string(kRemovedListVersion));
  }
  RemovedList list;
  std::string hex;
  TOKPACK_RETURN_IF_ERROR(r.Get("fingerprint", &hex));
  if (hex.size() != 16 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return r.Error("fingerprint", "is not 16 lowercase hex digits");
  }
  list.fingerprint = std::strtoull(hex.c_str(), nullptr, 16);
  simdjson::dom::array documents;
  TOKPACK_RETURN_IF_ERROR(r.Array("documents", &documents));
  for (simdjson::dom::element e : documents) {
    const std::string key = "documents[" + std::to_string(list.documents.size()) + "]";
    uint64_t d = 0;
    if (e.get_uint64().get(d) != simdjson::SUCCESS) {
      return r.Error(key, "is not an unsigned integer");
    }
    if (!list.documents.empty() && d <= list.documents.back()) {
      return r.Error(key, "is " + std::to_string(d) + ", not above the one before it (" +
                              std::to_string(list.documents.back()) +
                              "): the list must be increasing, each document once");
    }
    list.documents.push_back(d);
  }
  return list;
}

StatusOr<std::vector<uint64_t>> ParseRemovedListFor(std::string_view text, std::string_view source,
                                                    uint64_t fingerprint, uint64_t num_documents) {
  TOKPACK_ASSIGN_OR_RETURN(RemovedList list, ParseRemovedList(text, source));
  if (list.fingerprint != fingerprint) {
    return FailedPreconditionError(
        std::string(source) + " was made for another version of the dataset (fingerprint " +
        HashToHex(list.fingerprint) + ", the dataset's is " + HashToHex(fingerprint) +
        "; rebuilt or re-merged since?): its document indices name other documents here. Delete "
        "it, and remove the documents again by id (tokpack remove)");
  }
  if (!list.documents.empty() && list.documents.back() >= num_documents) {
    return InvalidArgumentError(
        std::string(source) + ": field 'documents[" + std::to_string(list.documents.size() - 1) +
        "]' is " + std::to_string(list.documents.back()) + ", past the last of the dataset's " +
        std::to_string(num_documents) + " documents");
  }
  return std::move(list.documents);
}

std::string RemovedListJson(const RemovedList& list) {
  JsonWriter w;
  w.BeginObject();
  w.String("format", "tokpack-removed");
  w.Int("version", kRemovedListVersion);
  w.String("fingerprint", HashToHex(list.fingerprint));
  w.BeginArray("documents");
  for (uint64_t d : list.documents) w.UInt(d);
  w.EndArray();
  w.EndObject();
  return w.str();
}

StatusOr<std::string> RemovedListText(const RemovedList& list, std::string_view target) {
  std::string text = RemovedListJson(list);
  if (text.size() > kMaxRemovedListBytes) {
    return Status(StatusCode::kResourceExhausted,
                  std::string(target) + ": a list of " + std::to_string(list.documents.size()) +
                      " documents takes " + std::to_string(text.size()) +
                      " bytes, past the limit of " + std::to_string(kMaxRemovedListBytes) +
                      " readers accept; rebuild without them instead");
  }
  return text;
}

StatusOr<std::string> CarriedRemovedList(std::string_view own,
                                         const StatusOr<std::string>& replaced,
                                         uint64_t fingerprint, std::string_view target) {
  RemovedList list{fingerprint, {}};
  if (!own.empty()) {
    TOKPACK_ASSIGN_OR_RETURN(RemovedList mine, ParseRemovedList(own, target));
    list.documents = std::move(mine.documents);
  }
  StatusOr<RemovedList> old = replaced.ok() ? ParseRemovedList(*replaced, target)
                                            : StatusOr<RemovedList>(replaced.status());
  if (old.ok() && old->fingerprint == fingerprint && !old->documents.empty()) {
    std::vector<uint64_t> both;
    std::set_union(list.documents.begin(), list.documents.end(), old->documents.begin(),
                   old->documents.end(), std::back_inserter(both));
    list.documents = std::move(both);
  }
  if (list.documents.empty()) return std::string(own);
  return RemovedListText(list, target);
}

}  // namespace tokpack
