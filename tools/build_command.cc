#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "io/file_system.h"
#include "io/input_files.h"
#include "tokpack/builder.h"
#include "tokpack/dataset_ops.h"
#include "tools/commands.h"
#include "tools/progress_printer.h"

namespace tokpack::cli {
namespace {

struct BuildArgs {
  BuildOptions options;
  bool no_eos = false;
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
               "  tokens that lost text: %llu unknown; %llu byte-fallback tokens kept bytes\n"
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
  BuildSettings& s = o.settings;
  s.shard_tokens = kDefaultShardTokens;
  app->add_option("-i,--input", o.inputs,
                  "Input files, directories, globs ('corpus/**/*.jsonl.zst'), object-store "
                  "URLs, prefixes or globs ('s3://bucket/fineweb/**/*.parquet') or - for stdin")
      ->required();
  app->add_option("-o,--output", o.output,
                  "Dataset directory to create, or s3:// / gs:// URL (built locally, then pushed)")
      ->required();
  app->add_option("-t,--tokenizer", o.tokenizer_model,
                  "Tokenizer file: sentencepiece .model, Hugging Face tokenizer.json (BPE) or "
                  "tiktoken ranks (with --pattern)")
      ->required();
  auto parse_tokenizer_options = AddTokenizerOptions(app, &o.tokenizer_options);
  app->add_option("--threads", o.threads, "Tokenizer threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--text-key", s.text_key,
                  "JSONL field or Parquet column holding the text; nested: /meta/text (JSONL "
                  "and Parquet) or meta.text (Parquet)")
      ->capture_default_str();
  app->add_option("--input-format", s.input_format,
                  "auto (by file name), jsonl, text or parquet (applies to every input)")
      ->check(CLI::IsMember({"auto", "jsonl", "text", "parquet"}))
      ->capture_default_str();
  app->add_flag("--text-per-line", s.text_per_line,
                "Plain text: one document per line instead of one per file");
  app->add_flag("--bos", s.add_bos, "Prepend the tokenizer's BOS id to every document");
  app->add_flag("--no-eos", args->no_eos, "Do not append the EOS id to every document");
  app->add_option("--invalid-utf8", s.invalid_utf8,
                  "replace (with U+FFFD, as Python's errors='replace'), skip the document, "
                  "or error")
      ->check(CLI::IsMember({"replace", "skip", "error"}))
      ->capture_default_str();
  app->add_flag("--skip-bad-lines", s.skip_bad_lines,
                "Skip and count bad records (malformed JSON, missing, null or non-string "
                "text) instead of failing");
  app->add_flag("--skip-unknown-files", o.skip_unknown_files,
                "Leave out (and list) files whose format the name does not tell, instead of "
                "failing");
  app->add_option("--shard-tokens", s.shard_tokens, "Token budget per shard")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--chunk-bytes", o.chunk_bytes, "Checksum chunk size in bytes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--part", args->part,
                  "Build part i/N of the inputs (0-based), e.g. for a Slurm job array");
  app->add_flag("--force", o.force, "Replace an existing dataset at --output");
  app->add_flag("-q,--quiet", args->quiet, "No progress output (the summary is still printed)");
  app->add_option("--progress-every", args->progress_every,
                  "Seconds between progress reports (default: 0.2 on a terminal, else 10)");

  return [args, parse_tokenizer_options](const StorageOptions& storage) -> int {
    BuildOptions& opts = args->options;
    opts.storage = storage;
    opts.settings.add_eos = !args->no_eos;
    if (Status st = parse_tokenizer_options(); !st.ok()) return ReportError("build", st);
    if (!args->part.empty()) {
      Status st = ParsePart(args->part, &opts.part_index, &opts.part_count);
      if (!st.ok()) return ReportError("build", st);
    }
    opts.cancel = &g_interrupted;
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    ProgressPrinter printer(tty);
    if (!args->quiet) {
      opts.progress_interval_seconds =
          args->progress_every > 0 ? args->progress_every : (tty ? 0.2 : 10.0);
      opts.progress = [&printer](const BuildProgress& p) { printer.Update(p); };
    }
    // An object-store output: build in a local temporary directory, then push.
    const std::string destination = opts.output;
    std::string scratch;
    if (IsRemoteUrl(destination)) {
      std::string pattern = JoinPath(storage.temp_dir, "tokpack-build-XXXXXX");
      if (::mkdtemp(pattern.data()) == nullptr) {
        return ReportError("build", ErrnoToStatus(errno, "mkdtemp", pattern));
      }
      scratch = pattern;
      opts.output = JoinPath(scratch, "data");
    }
    StatusOr<BuildSummary> summary = Build(opts);
    printer.Finish();
    if (!summary.ok()) {
      if (!scratch.empty()) RemoveAllQuietly(scratch);
      return ReportError("build", summary.status());
    }
    PrintSummary(*summary, destination);
    if (scratch.empty()) return 0;
    PushOptions push;
    push.dir = opts.output;
    push.url = destination;
    push.storage = storage;
    push.force = opts.force;
    push.cancel = &g_interrupted;
    StatusOr<uint64_t> pushed = PushDataset(push);
    RemoveAllQuietly(scratch);
    if (!pushed.ok()) return ReportError("build", pushed.status());
    std::fprintf(stderr, "pushed %s to %s\n", ProgressPrinter::Bytes(*pushed).c_str(),
                 destination.c_str());
    return 0;
  };
}

}  // namespace tokpack::cli
