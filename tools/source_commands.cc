// Document sources on the command line (docs/cli.md, "Where a document came
// from"): `show --source` prints a document's origin, `find` the documents of
// an id or of an input's line, `sample --explain` the documents of a step.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokpack/dataset.h"
#include "tokpack/json_writer.h"
#include "tools/commands.h"
#include "tools/option_flags.h"

namespace tokpack::cli {
namespace {

using ull = unsigned long long;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// What a record number counts in this input: Parquet rows, the items of a
// Python iterable or an Arrow stream, or lines.
std::string_view RecordNoun(const std::string& path) {
  if (EndsWith(path, ".parquet") || EndsWith(path, ".pq")) return "row";
  if (!path.empty() && path.front() == '<') return "item";
  return "line";
}

}  // namespace

std::string DescribeSource(const Dataset::DocumentSource& s) {
  std::string out =
      s.input_path.empty() ? "input " + std::to_string(s.input) : "'" + s.input_path + "'";
  if (s.record == 0) {
    out += " (the whole file)";
  } else {
    out += " ";
    out += RecordNoun(s.input_path);
    out += " " + std::to_string(s.record);
  }
  if (s.has_id) out += ", id '" + s.id + "'";
  return out;
}

int PrintExplained(const Loader& loader, const std::vector<std::string>& names,
                   const std::vector<std::shared_ptr<Dataset>>& datasets, int64_t first,
                   int64_t steps, bool json) {
  StatusOr<std::vector<RowOrigin>> rows =
      loader.Explain(first, steps, UnownedCancelFlag(&g_interrupted));
  if (!rows.ok()) return ReportError("sample", rows.status());
  for (const RowOrigin& r : *rows) {
    const Dataset& ds = *datasets[r.source];
    JsonWriter w(JsonWriter::Layout::kOneLine);
    if (json) {
      w.BeginObject();
      w.Int("step", r.step);
      w.Int("rank", r.rank);
      w.Int("row", r.row);
      w.String("source", names[r.source]);
      w.UInt("sample", r.sample);
      w.BeginArray("spans");
    } else {
      std::printf("step %lld rank %d row %lld: '%s' sample %llu\n", static_cast<long long>(r.step),
                  r.rank, static_cast<long long>(r.row), names[r.source].c_str(),
                  static_cast<ull>(r.sample));
    }
    for (const RowOrigin::Span& span : r.spans) {
      std::optional<Dataset::DocumentSource> origin;
      if (ds.has_sources()) {
        StatusOr<Dataset::DocumentSource> found = ds.Source(span.document);
        if (!found.ok()) return ReportError("sample", found.status());
        origin = std::move(*found);
      }
      if (json) {
        w.BeginObject();
        w.UInt("column", span.column);
        w.UInt("document", span.document);
        w.UInt("offset", span.offset);
        w.UInt("length", span.length);
        if (ds.is_removed(span.document)) w.Bool("removed", true);
        if (origin) {
          w.UInt("input", origin->input);
          w.String("path", origin->input_path);
          w.UInt("record", origin->record);
          if (origin->has_id) w.String("id", origin->id);
        }
        w.EndObject();
        continue;
      }
      std::printf("  columns [%llu, %llu): document %llu%s tokens [%llu, %llu)%s%s\n",
                  static_cast<ull>(span.column), static_cast<ull>(span.column + span.length),
                  static_cast<ull>(span.document),
                  ds.is_removed(span.document) ? " (removed: served as padding)" : "",
                  static_cast<ull>(span.offset), static_cast<ull>(span.offset + span.length),
                  origin ? ", " : "", origin ? DescribeSource(*origin).c_str() : "");
    }
    if (json) {
      w.EndArray();
      w.EndObject();
      std::fputs(w.str().c_str(), stdout);  // A closed top-level value ends its line.
    }
  }
  return 0;
}

StatusOr<std::vector<uint64_t>> FindByLine(const Dataset& ds, const std::string& input,
                                           uint64_t line) {
  // Every input of that path (a file named twice was read twice), or the
  // one of that index.
  TOKPACK_ASSIGN_OR_RETURN(const std::vector<InputRecord> inputs, ds.Inputs());
  std::vector<uint64_t> which;
  for (uint64_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].path == input) which.push_back(k);
  }
  if (which.empty() && !input.empty() &&
      input.find_first_not_of("0123456789") == std::string::npos && input.size() < 19) {
    which.push_back(std::stoull(input));
  }
  if (which.empty()) {
    return NotFoundError("'" + input + "' is not an input of " + ds.path() +
                         " (see `tokpack info`)");
  }
  std::vector<uint64_t> found;
  for (uint64_t k : which) {
    TOKPACK_ASSIGN_OR_RETURN(const std::optional<uint64_t> doc, ds.FindByRecord(k, line));
    if (doc) found.push_back(*doc);
  }
  return found;
}

Runner AddFindCommand(CLI::App* app) {
  struct Args {
    std::string dir;
    std::string id;
    std::string input;
    uint64_t line = 0;
  };
  auto a = std::make_shared<Args>();
  app->add_option("dataset", a->dir, "Dataset: a directory or an s3://, gs://, http(s):// URL")
      ->required();
  auto* id = app->add_option("--id", a->id, "The documents whose id is this");
  auto* input = app->add_option("--input", a->input,
                                "The document made from this input (its path as the manifest "
                                "lists it, or its index in the inputs)");
  auto* line = app->add_option("--line", a->line,
                               "... from this line (JSONL, text), row (Parquet) or item (Python "
                               "iterable) of the input, counted from 1")
                   ->check(IntInRange(1));
  id->excludes(input)->excludes(line);
  input->needs(line);
  line->needs(input);
  return [a, id](const StorageOptions& storage) -> int {
    if (a->input.empty() && id->count() == 0) {
      return ReportError("find", InvalidArgumentError("give --id ID, or --input FILE --line N"));
    }
    StatusOr<std::shared_ptr<Dataset>> ds = Dataset::Open(a->dir, storage);
    if (!ds.ok()) return ReportError("find", ds.status());
    std::vector<uint64_t> found;
    if (id->count() > 0) {
      StatusOr<std::vector<uint64_t>> docs = (*ds)->FindById(a->id);
      if (!docs.ok()) return ReportError("find", docs.status());
      found = std::move(*docs);
    } else {
      StatusOr<std::vector<uint64_t>> docs = FindByLine(**ds, a->input, a->line);
      if (!docs.ok()) return ReportError("find", docs.status());
      found = std::move(*docs);
    }
    if (found.empty()) {
      std::fprintf(stderr, "tokpack find: no document of %s\n",
                   id->count() > 0 ? ("id '" + a->id + "'").c_str()
                                   : ("'" + a->input + "' line " + std::to_string(a->line) +
                                      " (skipped, blank, empty, or not read)")
                                         .c_str());
      return 1;
    }
    for (uint64_t doc : found) std::printf("%llu\n", static_cast<ull>(doc));
    return 0;
  };
}

}  // namespace tokpack::cli
