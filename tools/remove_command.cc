// `tokpack remove` (docs/cli.md, "Removing documents"): puts documents on a
// dataset's removal list (removed.json), or with --restore takes them off;
// readers then serve them as pad tokens with no loss, in the same order.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokpack/dataset.h"
#include "tokpack/dataset_ops.h"
#include "tokpack/files.h"
#include "tools/commands.h"
#include "tools/option_flags.h"

namespace tokpack::cli {
namespace {

using ull = unsigned long long;

// The lines of the file `path` (a list of ids or indices), without their
// line ends; blank lines are skipped. Calls line(number, text) for each.
Status ForEachLine(const std::string& path, std::string_view what,
                   const std::function<Status(uint64_t, std::string_view)>& line) {
  TOKPACK_ASSIGN_OR_RETURN(const std::string text, ReadSmallFile(path, kMaxIdListBytes, what));
  uint64_t number = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view l(text.data() + at, end - at);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    ++number;
    if (l.find_first_not_of(" \t") != std::string_view::npos) {
      TOKPACK_RETURN_IF_ERROR(line(number, l));
    }
    at = end + 1;
  }
  return Status::Ok();
}

// The document indices listed in `path`, one a line.
Status ReadIndices(const std::string& path, std::vector<uint64_t>* out) {
  return ForEachLine(path, "a list of document indices", [&](uint64_t n, std::string_view l) {
    const std::string s(l);
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || s[0] < '0' || s[0] > '9' || *end != '\0' || errno == ERANGE) {
      return InvalidArgumentError(path + ":" + std::to_string(n) + ": '" + s +
                                  "' is not a document index");
    }
    out->push_back(v);
    return Status::Ok();
  });
}

}  // namespace

Runner AddRemoveCommand(CLI::App* app) {
  struct Args {
    std::string dir;
    RemovalRequest request;
    std::string ids_file, docs_file;
    std::string input;
    uint64_t line = 0;
  };
  auto a = std::make_shared<Args>();
  app->add_option("dataset", a->dir,
                  "Dataset: a directory or an s3://, gs:// URL (its removal list is written "
                  "beside its manifest)")
      ->required();
  app->add_option("--id", a->request.ids,
                  "Every document with this id (its record's id, as `find --id`); repeatable");
  // IntInRange: CLI11 alone takes "-1" as 2^64 - 1.
  app->add_option("--doc", a->request.documents, "The document of this index (0-based); repeatable")
      ->check(IntInRange(0));
  app->add_option("--ids-file", a->ids_file, "A file of ids, one a line (blank lines skipped)");
  app->add_option("--docs-file", a->docs_file,
                  "A file of document indices, one a line (blank lines skipped)");
  auto* input = app->add_option("--input", a->input,
                                "The document made from this input (its path as the manifest "
                                "lists it, or its index in the inputs) ...");
  auto* line = app->add_option("--line", a->line,
                               "... and this line (JSONL, text), row (Parquet) or item, from 1")
                   ->check(IntInRange(1));
  input->needs(line);
  line->needs(input);
  app->add_flag("--restore", a->request.restore,
                "Take the documents off the removal list instead: they read as they are again");
  return [a](const StorageOptions& storage) -> int {
    RemovalRequest& r = a->request;
    if (!a->ids_file.empty()) {
      Status st = ForEachLine(a->ids_file, "a list of ids", [&](uint64_t, std::string_view id) {
        r.ids.emplace_back(id);
        return Status::Ok();
      });
      if (!st.ok()) return ReportError("remove", st);
    }
    if (!a->docs_file.empty()) {
      if (Status st = ReadIndices(a->docs_file, &r.documents); !st.ok()) {
        return ReportError("remove", st);
      }
    }
    if (!a->input.empty()) {
      StatusOr<std::shared_ptr<Dataset>> ds = Dataset::Open(a->dir, storage);
      if (!ds.ok()) return ReportError("remove", ds.status());
      StatusOr<std::vector<uint64_t>> found = FindByLine(**ds, a->input, a->line);
      if (found.ok() && found->empty()) {
        found = NotFoundError("no document of " + a->dir + " was made from '" + a->input +
                              "' line " + std::to_string(a->line) +
                              " (skipped, blank or empty); nothing was changed");
      }
      if (!found.ok()) return ReportError("remove", found.status());
      r.documents.insert(r.documents.end(), found->begin(), found->end());
    }
    StatusOr<RemovalResult> done = RemoveDocuments(a->dir, storage, r);
    if (!done.ok()) return ReportError("remove", done.status());
    if (r.restore) {
      std::printf("restored %llu document(s) (%llu not removed); %llu on the removal list of %s\n",
                  static_cast<ull>(done->changed), static_cast<ull>(done->unchanged),
                  static_cast<ull>(done->total), a->dir.c_str());
    } else {
      std::printf(
          "removed %llu document(s) (%llu already removed); %llu on the removal list of %s\n",
          static_cast<ull>(done->changed), static_cast<ull>(done->unchanged),
          static_cast<ull>(done->total), a->dir.c_str());
    }
    return 0;
  };
}

}  // namespace tokpack::cli
