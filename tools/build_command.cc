#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "frontend/build_part.h"
#include "frontend/registry_names.h"
#include "tokpack/builder.h"
#include "tools/commands.h"
#include "tools/option_flags.h"
#include "tools/progress_printer.h"

namespace tokpack::cli {
namespace {

struct BuildArgs {
  BuildOptions options;
  std::function<Status(BuildOptions*)> apply_flags;  // The settings given as flags.
  std::string part;
  bool quiet = false;
  double progress_every = 0;  // 0: 0.2 s on a terminal, 10 s otherwise.
};

void PrintSummary(const BuildSummary& s, const std::string& output) {
  const Manifest& m = s.manifest;
  const BuildCounts& c = m.provenance.counts;
  const double mb = s.input_bytes / 1e6, text_mb = s.text_bytes / 1e6;
  std::fprintf(stderr,
               "tokpack build: wrote %s: %llu documents, %llu tokens (%s) in %zu shard(s)\n"
               "  skipped: %llu empty, %llu bad lines, %llu invalid UTF-8; "
               "%llu documents had invalid UTF-8 replaced\n"
               "  tokens that lost text: %llu unknown (<unk>: text the vocabulary has no piece "
               "for); %llu byte-fallback tokens kept bytes\n"
               "  read %.1f MB (%.1f MB of text) in %.2f s: %.1f MB/s of text, %s tokens/s\n",
               output.c_str(), static_cast<unsigned long long>(c.documents),
               static_cast<unsigned long long>(c.tokens),
               std::string(TokenDtypeName(m.dtype)).c_str(), m.shards.size(),
               static_cast<unsigned long long>(c.skipped_empty),
               static_cast<unsigned long long>(c.bad_lines),
               static_cast<unsigned long long>(c.skipped_invalid_utf8),
               static_cast<unsigned long long>(c.utf8_repaired),
               static_cast<unsigned long long>(c.unknown_tokens),
               static_cast<unsigned long long>(c.byte_fallback_tokens), mb, text_mb, s.seconds,
               s.seconds > 0 ? text_mb / s.seconds : 0.0,
               ProgressPrinter::Count(s.seconds > 0 ? c.tokens / s.seconds : 0).c_str());
  if (s.piece_cache_lookups > 0) {
    std::fprintf(stderr, "  piece cache: %.1f%% of %s pieces found (a bounded cache per thread)\n",
                 100.0 * static_cast<double>(s.piece_cache_hits) /
                     static_cast<double>(s.piece_cache_lookups),
                 ProgressPrinter::Count(static_cast<double>(s.piece_cache_lookups)).c_str());
  }
  if (m.HasLossMasks()) {
    std::fprintf(stderr, "  loss masks: %llu of the tokens carry loss\n",
                 static_cast<unsigned long long>(m.TrainableTokens()));
  }
  std::fprintf(stderr, "  inputs: %zu read", m.provenance.inputs.size());
  if (!s.skipped_files.empty()) {
    std::fprintf(stderr, ", %zu skipped (--skip-unknown-files):", s.skipped_files.size());
    constexpr size_t kShown = 20;
    for (size_t i = 0; i < s.skipped_files.size() && i < kShown; ++i) {
      std::fprintf(stderr, "\n    %s", s.skipped_files[i].c_str());
    }
    if (s.skipped_files.size() > kShown) {
      std::fprintf(stderr, "\n    ... and %zu more", s.skipped_files.size() - kShown);
    }
  }
  std::fprintf(stderr, "\n");
}

}  // namespace

Runner AddBuildCommand(CLI::App* app) {
  auto args = std::make_shared<BuildArgs>();
  BuildOptions& o = args->options;
  app->add_option("-i,--input", o.inputs,
                  "Input files, directories, globs ('corpus/**/*.jsonl.zst'), object-store "
                  "URLs, prefixes or globs ('s3://bucket/fineweb/**/*.parquet') or - for stdin")
      ->required();
  app->add_option("-o,--output", o.output,
                  "Dataset directory to create, or s3:// / gs:// URL (built in $TMPDIR, then "
                  "pushed)")
      ->required();
  app->add_option("-t,--tokenizer", o.tokenizer_model, "Tokenizer file: " + TokenizerKindsText())
      ->required();
  auto parse_tokenizer_options = AddTokenizerOptions(app, &o.tokenizer_options);
  args->apply_flags = AddOptionFlags<BuildOptions>(app, BuildOptions::Describe());
  app->add_option("--part", args->part,
                  "Build part i/N of the inputs (0-based), e.g. for a Slurm job array");
  app->add_flag("-q,--quiet", args->quiet, "No progress output (the summary is still printed)");
  app->add_option("--progress-every", args->progress_every,
                  "Seconds between progress reports (default: 0.2 on a terminal, else 10)");

  return [args, parse_tokenizer_options](const StorageOptions& storage) -> int {
    BuildOptions& opts = args->options;
    if (Status st = args->apply_flags(&opts); !st.ok()) return ReportError("build", st);
    opts.storage = storage;
    if (Status st = parse_tokenizer_options(); !st.ok()) return ReportError("build", st);
    if (!args->part.empty()) {
      Status st = ParsePart(args->part, &opts.part_index, &opts.part_count);
      if (!st.ok()) return ReportError("build", st);
    }
    opts.cancel = UnownedCancelFlag(&g_interrupted);
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    ProgressPrinter printer(tty);
    if (!args->quiet) {
      opts.progress_interval_seconds =
          args->progress_every > 0 ? args->progress_every : (tty ? 0.2 : 10.0);
      opts.progress = [&printer](const BuildProgress& p) { printer.Update(p); };
    }
    StatusOr<BuildSummary> summary = Build(opts);
    printer.Finish();
    if (!summary.ok()) return ReportError("build", summary.status());
    PrintSummary(*summary, opts.output);
    if (summary->uploaded_bytes > 0) {
      std::fprintf(stderr, "pushed %s to %s\n",
                   ProgressPrinter::Bytes(summary->uploaded_bytes).c_str(), opts.output.c_str());
    }
    return 0;
  };
}

}  // namespace tokpack::cli
