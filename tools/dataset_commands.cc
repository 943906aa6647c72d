#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tokpack/dataset.h"
#include "tokpack/dataset_ops.h"
#include "tokpack/tokenizer.h"
#include "tools/commands.h"
#include "tools/option_flags.h"
#include "tools/progress_printer.h"

namespace tokpack::cli {
namespace {

using ull = unsigned long long;

constexpr const char* kDatasetHelp =
    "Dataset: a directory, a Megatron prefix, or an s3://, gs://, http(s):// URL";

void PrintInfoText(const DatasetInfo& info) {
  const Manifest& m = info.manifest;
  const TokenizerInfo& t = m.tokenizer;
  const Provenance& p = m.provenance;
  std::printf("dataset      %s\n", info.path.c_str());
  std::printf("fingerprint  %s\n", HashToHex(m.Fingerprint()).c_str());
  if (!info.has_manifest) {
    std::printf("made by      unknown (a bare Megatron prefix: no manifest.json)\n");
  } else {
    std::printf("made by      %s %s (%s", p.tool.c_str(), p.version.c_str(), p.kind.c_str());
    if (p.part_count > 1) std::printf(", part %d/%d", p.part_index, p.part_count);
    std::printf(")\n");
  }
  std::printf("tokens       %llu (%s)\n", static_cast<ull>(m.TotalTokens()),
              std::string(TokenDtypeName(m.dtype)).c_str());
  if (m.HasLossMasks()) {
    const uint64_t total = m.TotalTokens(), trainable = m.TrainableTokens();
    std::printf("trainable    %llu (%.1f%% of tokens carry loss; loss masks)\n",
                static_cast<ull>(trainable), total ? 100.0 * trainable / total : 0.0);
  }
  std::printf("documents    %llu\n", static_cast<ull>(m.TotalDocuments()));
  if (info.removed_documents > 0) {
    std::printf("removed      %llu documents (removed.json: read as pad tokens, no loss)\n",
                static_cast<ull>(info.removed_documents));
  }
  if (m.HasSources()) {
    uint64_t bytes = 0;
    for (const ShardInfo& s : m.shards) bytes += s.sources.bytes;
    std::printf("sources      %s in .src files (show --source, find)\n",
                ProgressPrinter::Bytes(bytes).c_str());
  }
  std::printf("shards       %zu\n", m.shards.size());
  std::printf(m.HasLossMasks() ? "size         %s (.bin + .idx + .mask), checksum chunks of %s\n"
                               : "size         %s (.bin + .idx), checksum chunks of %s\n",
              ProgressPrinter::Bytes(info.data_bytes).c_str(),
              ProgressPrinter::Bytes(m.chunk_bytes).c_str());
  if (t.type.empty()) {
    std::printf("tokenizer    unknown\n");
  } else {
    std::printf("tokenizer    %s, vocab %lld, bos %lld, eos %lld, pad %lld, unk %lld%s%s\n",
                t.type.c_str(), static_cast<long long>(t.vocab_size),
                static_cast<long long>(t.bos_id), static_cast<long long>(t.eos_id),
                static_cast<long long>(t.pad_id), static_cast<long long>(t.unk_id),
                t.file.empty() ? "" : ", file ", t.file.c_str());
  }
  if (p.kind == "build" || p.kind == "merge") {
    const BuildCounts& c = p.counts;
    std::printf(
        "inputs       %zu file(s); skipped %llu empty, %llu bad lines, %llu invalid "
        "UTF-8; %llu repaired\n"
        "lost text    %llu unknown tokens (<unk>: text the vocabulary has no piece for); "
        "%llu byte-fallback tokens (bytes kept)\n",
        p.inputs.size(), static_cast<ull>(c.skipped_empty), static_cast<ull>(c.bad_lines),
        static_cast<ull>(c.skipped_invalid_utf8), static_cast<ull>(c.utf8_repaired),
        static_cast<ull>(c.unknown_tokens), static_cast<ull>(c.byte_fallback_tokens));
    std::printf("settings     text_key=%s bos=%s eos=%s invalid_utf8=%s shard_tokens=%llu\n",
                p.settings.text_key.c_str(), p.settings.add_bos ? "yes" : "no",
                p.settings.add_eos ? "yes" : "no", p.settings.invalid_utf8.c_str(),
                static_cast<ull>(p.settings.shard_tokens));
  }
  if (!info.split.empty()) {
    uint64_t total = 0;
    for (const DatasetInfo::SplitPart& part : info.split_parts) total += part.weight;
    std::printf("split        %s (normalized %s; split_index selects a part)\n", info.split.c_str(),
                info.normalized_split.c_str());
    std::printf(
        "  drawn as    %llu runs of %llu consecutive documents (a shard's last run may be "
        "shorter), dealt to the parts by a permutation keyed by the split, so every part "
        "samples the whole dataset\n",
        static_cast<ull>(info.split_runs), static_cast<ull>(info.split_run_documents));
    for (size_t j = 0; j < info.split_parts.size(); ++j) {
      const DatasetInfo::SplitPart& part = info.split_parts[j];
      std::printf(
          "  part %-6zu %llu/%llu: %llu runs, %llu documents, %llu tokens, fingerprint %s%s\n", j,
          static_cast<ull>(part.weight), static_cast<ull>(total), static_cast<ull>(part.runs),
          static_cast<ull>(part.documents), static_cast<ull>(part.tokens),
          HashToHex(part.fingerprint).c_str(),
          part.documents == 0 ? " (empty: cannot be opened)" : "");
    }
  }
  const uint64_t docs = m.TotalDocuments();
  if (docs == 0) return;
  std::printf("doc length   min %llu, mean %.1f, max %llu tokens\n",
              static_cast<ull>(info.min_length), static_cast<double>(m.TotalTokens()) / docs,
              static_cast<ull>(info.max_length));
  uint64_t peak = 0;
  for (uint64_t n : info.length_histogram) peak = std::max(peak, n);
  size_t first = 0;
  while (info.length_histogram[first] == 0) ++first;
  for (size_t k = first; k < info.length_histogram.size(); ++k) {
    const uint64_t n = info.length_histogram[k];
    const int bar = peak ? static_cast<int>((40 * n + peak - 1) / peak) : 0;
    std::printf("  %9llu-%-9llu %10llu  %s\n", static_cast<ull>(k == 0 ? 0 : 1ull << k),
                static_cast<ull>((2ull << k) - 1), static_cast<ull>(n),
                std::string(bar, '#').c_str());
  }
}

}  // namespace

Runner AddInfoCommand(CLI::App* app) {
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  app->add_option("dataset", *dir, kDatasetHelp)->required();
  app->add_flag("--json", *json, "Print one JSON object");
  auto split = std::make_shared<std::string>();
  app->add_option("--split", *split,
                  "Also show the documents and tokens of each part of this held-out split "
                  "(weights such as 949,50,1; the split option of datasets)");
  auto apply_packing = AddPackingFlags(app, true);
  const CLI::Option* seq_len = app->get_option("--seq-len");
  return [dir, json, split, apply_packing, seq_len](const StorageOptions& storage) -> int {
    LoaderOptions o;
    if (Status st = apply_packing(&o); !st.ok()) return ReportError("info", st);
    if (o.packing == Packing::kBestFit && seq_len->count() == 0) {
      // Bins depend on L: a default L would print numbers for a model not trained.
      return ReportError("info", InvalidArgumentError("--packing best_fit needs --seq-len L"));
    }
    o.batch_size = 1;  // info reads no batches: only the packing settings are checked.
    if (Status st = o.Validate(); !st.ok()) return ReportError("info", st);
    StatusOr<std::shared_ptr<Dataset>> ds = Dataset::Open(*dir, storage);
    if (!ds.ok()) return ReportError("info", ds.status());
    DatasetInfo info = InspectDataset(**ds);
    if (!split->empty()) {
      if (Status st = InspectSplit(**ds, *split, &info); !st.ok()) return ReportError("info", st);
    }
    if (o.packing == Packing::kBestFit) {
      StatusOr<PackingInfo> packing = PackWithProgress(**ds, o, storage, 0, "info");
      if (!packing.ok()) return ReportError("info", packing.status());
      info.packing = std::move(*packing);
    }
    if (*json) {
      std::fputs(DatasetInfoToJson(info).c_str(), stdout);
    } else {
      PrintInfoText(info);
      if (info.packing) PrintPackingInfo(*info.packing);
    }
    return 0;
  };
}

Runner AddVerifyCommand(CLI::App* app) {
  auto dir = std::make_shared<std::string>();
  app->add_option("dataset", *dir, kDatasetHelp)->required();
  return [dir](const StorageOptions& storage) -> int {
    StatusOr<VerifyReport> report = VerifyDataset(*dir, storage);
    if (!report.ok()) return ReportError("verify", report.status());
    for (const std::string& p : report->problems) std::printf("BAD  %s\n", p.c_str());
    for (const std::string& u : report->unchecked) std::printf("NOT CHECKED  %s\n", u.c_str());
    if (!report->ok()) {
      std::printf("%s: FAILED, %zu problem(s) in %llu files checked\n", dir->c_str(),
                  report->problems.size(), static_cast<ull>(report->files_checked));
      return 1;
    }
    std::printf("%s: OK, %llu files, %s checked\n", dir->c_str(),
                static_cast<ull>(report->files_checked),
                ProgressPrinter::Bytes(report->bytes_checked).c_str());
    return 0;
  };
}

Runner AddMergeCommand(CLI::App* app) {
  auto out = std::make_shared<std::string>();
  auto parts = std::make_shared<std::vector<std::string>>();
  auto force = std::make_shared<bool>(false);
  app->add_option("output", *out, "Dataset directory to create")->required();
  app->add_option("parts", *parts,
                  "Datasets with manifest.json, or the parts of a --part build (any order)")
      ->required();
  app->add_flag("--force", *force, "Replace an existing dataset at OUTPUT");
  return [out, parts, force](const StorageOptions& storage) -> int {
    StatusOr<Manifest> m = MergeDatasets(*out, *parts, *force, storage);
    if (!m.ok()) return ReportError("merge", m.status());
    std::printf("merged %zu dataset(s) into %s: %llu documents, %llu tokens, %zu shards\n",
                parts->size(), out->c_str(), static_cast<ull>(m->TotalDocuments()),
                static_cast<ull>(m->TotalTokens()), m->shards.size());
    return 0;
  };
}

Runner AddImportCommand(CLI::App* app) {
  auto o = std::make_shared<ImportOptions>();
  app->add_option("prefixes", o->prefixes, "Megatron prefixes (path without .bin/.idx)")
      ->required();
  app->add_option("-o,--output", o->output, "Dataset directory to create")->required();
  app->add_option("-t,--tokenizer", o->tokenizer_model,
                  "Tokenizer file the data was tokenized with (optional; any kind build takes)");
  auto parse_tokenizer_options = AddTokenizerOptions(app, &o->tokenizer_options);
  app->add_option("--chunk-bytes", o->chunk_bytes, "Checksum chunk size in bytes")
      ->check(IntInRange(1))
      ->capture_default_str();
  app->add_flag("--force", o->force, "Replace an existing dataset at --output");
  return [o, parse_tokenizer_options](const StorageOptions&) -> int {
    if (Status st = parse_tokenizer_options(); !st.ok()) return ReportError("import", st);
    StatusOr<Manifest> m = ImportMegatron(*o);
    if (!m.ok()) return ReportError("import", m.status());
    std::printf("imported %zu prefix(es) into %s: %llu documents, %llu tokens (%s)\n",
                o->prefixes.size(), o->output.c_str(), static_cast<ull>(m->TotalDocuments()),
                static_cast<ull>(m->TotalTokens()), std::string(TokenDtypeName(m->dtype)).c_str());
    return 0;
  };
}

// How `show` marks text that carries no loss (docs/cli.md): dimmed on a
// terminal, else between ⟦ and ⟧, so a person sees what is trained on.
struct Marks {
  const char* open;
  const char* close;
};
Marks NoLossMarks() {
  if (::isatty(STDOUT_FILENO) != 0) return {"\x1b[2m", "\x1b[0m"};
  return {"\u27e6", "\u27e7"};
}

// The text of ids[begin, end), decoded or as ids. Decoded runs are cut from
// the decoding of the prefix [0, end), so the tokenizer sees each run in
// context (a sentencepiece run would lose its leading space alone); where
// the prefix's text does not extend the shorter one's (a character split
// between runs), the run is decoded alone.
StatusOr<std::string> RunText(const std::vector<int>& ids, size_t begin, size_t end,
                              const Tokenizer* tok, std::string* prefix) {
  if (tok == nullptr) {
    std::string line;
    for (size_t k = begin; k < end; ++k) line += (k > begin ? " " : "") + std::to_string(ids[k]);
    return line;
  }
  TOKPACK_ASSIGN_OR_RETURN(std::string text,
                           tok->Decode(std::vector<int>(ids.begin(), ids.begin() + end)));
  std::string run;
  if (text.compare(0, prefix->size(), *prefix) == 0) {
    run = text.substr(prefix->size());
  } else {
    TOKPACK_ASSIGN_OR_RETURN(run,
                             tok->Decode(std::vector<int>(ids.begin() + begin, ids.begin() + end)));
  }
  *prefix = std::move(text);
  return run;
}

// A document's text (or ids), its runs that carry no loss (bit 0) marked.
StatusOr<std::string> MarkedText(const std::vector<int>& ids, const std::vector<uint8_t>& bits,
                                 const Tokenizer* tok) {
  const Marks marks = NoLossMarks();
  std::string out, prefix;
  for (size_t begin = 0; begin < ids.size();) {
    size_t end = begin + 1;
    while (end < ids.size() && bits[end] == bits[begin]) ++end;
    TOKPACK_ASSIGN_OR_RETURN(std::string run, RunText(ids, begin, end, tok, &prefix));
    if (tok == nullptr && begin > 0) out += ' ';
    out += bits[begin] ? run : marks.open + run + marks.close;
    begin = end;
  }
  return out;
}

Runner AddShowCommand(CLI::App* app) {
  struct Args {
    std::string dir;
    uint64_t doc = 0;
    uint64_t count = 1;
    bool decode = false;
    bool source = false;
    std::string tokenizer;
    TokenizerOptions tokenizer_options;
  };
  auto a = std::make_shared<Args>();
  app->add_option("dataset", a->dir, kDatasetHelp)->required();
  // IntInRange: CLI11 alone takes "-1" as 2^64 - 1.
  app->add_option("--doc", a->doc, "First document (0-based)")
      ->check(IntInRange(0))
      ->capture_default_str();
  app->add_option("--count", a->count, "Number of documents")
      ->check(IntInRange(0))
      ->capture_default_str();
  app->add_flag("--decode", a->decode,
                "Print text decoded with the dataset's tokenizer (with loss masks, what "
                "carries no loss is dimmed on a terminal, else between \u27e6 and \u27e7)");
  app->add_option("--tokenizer", a->tokenizer,
                  "Tokenizer file (default: the copy inside the dataset, as recorded)");
  app->add_flag("--source", a->source,
                "Print where each document came from (input, line or row, id) instead of its "
                "tokens (and whether it is removed)");
  auto parse_tokenizer_options = AddTokenizerOptions(app, &a->tokenizer_options);
  auto apply_open_flags = AddOptionFlags<DatasetOptions>(app, DatasetOptions::Describe());
  return [a, parse_tokenizer_options, apply_open_flags](const StorageOptions& storage) -> int {
    if (Status st = parse_tokenizer_options(); !st.ok()) return ReportError("show", st);
    DatasetOptions open_options;
    if (Status st = apply_open_flags(&open_options); !st.ok()) return ReportError("show", st);
    StatusOr<std::shared_ptr<Dataset>> ds = Dataset::Open(a->dir, storage, open_options);
    if (!ds.ok()) return ReportError("show", ds.status());
    std::unique_ptr<Tokenizer> tok;
    if (a->decode) {
      if (a->tokenizer.empty() && (*ds)->manifest().tokenizer.file.empty()) {
        return ReportError(
            "show", InvalidArgumentError("the dataset holds no tokenizer; pass --tokenizer"));
      }
      StatusOr<std::unique_ptr<Tokenizer>> loaded =
          a->tokenizer.empty() ? LoadDatasetTokenizer(**ds, storage)
                               : Tokenizer::Load(a->tokenizer, a->tokenizer_options);
      if (!loaded.ok()) return ReportError("show", loaded.status());
      tok = std::move(*loaded);
    }
    // Counted, not compared with doc + count, which wraps for a doc near 2^64.
    for (uint64_t shown = 0; shown < a->count; ++shown) {
      const uint64_t i = a->doc + shown;  // The first past the end fails before this wraps.
      if (a->source) {
        StatusOr<Dataset::DocumentSource> source = (*ds)->Source(i);
        if (!source.ok()) return ReportError("show", source.status());
        std::printf("document %llu: %s%s\n", static_cast<ull>(i), DescribeSource(*source).c_str(),
                    (*ds)->is_removed(i) ? " (removed)" : "");
        continue;
      }
      uint64_t offset = 0, length = 0;
      Status st = (*ds)->DocumentExtent(i, &offset, &length);
      if (st.ok() && (*ds)->is_removed(i)) {
        // What it reads as is pad; what it held is not shown.
        std::printf("--- document %llu (%llu tokens, removed: read as pad token %lld, no loss)\n",
                    static_cast<ull>(i), static_cast<ull>(length),
                    static_cast<long long>((*ds)->pad_token()));
        continue;
      }
      std::vector<int32_t> ids(length);
      if (st.ok()) st = (*ds)->ReadTokens(offset, length, ids.data());
      if (!st.ok()) return ReportError("show", st);
      if ((*ds)->has_loss_masks()) {
        std::vector<uint8_t> bits(length);
        st = (*ds)->ReadLossMask(offset, length, bits.data());
        if (!st.ok()) return ReportError("show", st);
        uint64_t trainable = 0;
        for (uint8_t b : bits) trainable += b;
        StatusOr<std::string> text =
            MarkedText(std::vector<int>(ids.begin(), ids.end()), bits, tok.get());
        if (!text.ok()) return ReportError("show", text.status());
        std::printf("--- document %llu (%zu tokens, %llu carry loss)\n%s\n", static_cast<ull>(i),
                    ids.size(), static_cast<ull>(trainable), text->c_str());
        continue;
      }
      std::printf("--- document %llu (%zu tokens)\n", static_cast<ull>(i), ids.size());
      if (tok) {
        StatusOr<std::string> text = tok->Decode(std::vector<int>(ids.begin(), ids.end()));
        if (!text.ok()) return ReportError("show", text.status());
        std::printf("%s\n", text->c_str());
      } else {
        std::string line;
        for (size_t k = 0; k < ids.size(); ++k) {
          if (k) line += ' ';
          line += std::to_string(ids[k]);
        }
        std::printf("%s\n", line.c_str());
      }
    }
    return 0;
  };
}

Runner AddPushCommand(CLI::App* app) {
  auto o = std::make_shared<PushOptions>();
  app->add_option("dir", o->dir, "Local dataset directory (with manifest.json)")->required();
  app->add_option("url", o->url, "s3://bucket/prefix or gs://bucket/prefix")->required();
  app->add_flag("--force", o->force, "Replace a dataset already at the URL");
  app->add_option("--part-bytes", o->part_bytes,
                  "Files larger than this go up in multipart uploads of this part size")
      ->check(IntInRange(uint64_t{5} << 20, uint64_t{5} << 30));
  return [o](const StorageOptions& storage) -> int {
    o->storage = storage;
    o->cancel = UnownedCancelFlag(&g_interrupted);
    o->on_file = [](const std::string& name, uint64_t bytes) {
      std::fprintf(stderr, "uploaded %s (%s)\n", name.c_str(),
                   ProgressPrinter::Bytes(bytes).c_str());
    };
    StatusOr<uint64_t> total = PushDataset(*o);
    if (!total.ok()) return ReportError("push", total.status());
    std::printf("pushed %s to %s\n", ProgressPrinter::Bytes(*total).c_str(), o->url.c_str());
    return 0;
  };
}

}  // namespace tokpack::cli
