// `tokpack pack`: makes a dataset's best-fit packing plan ahead of training
// (say in a Slurm step before the job), and the packing numbers that
// `tokpack info --packing best_fit` shows too.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "tokpack/dataset_ops.h"
#include "tokpack/loader.h"
#include "tools/commands.h"
#include "tools/option_flags.h"

namespace tokpack::cli {

std::function<Status(LoaderOptions*)> AddPackingFlags(CLI::App* app, bool choose) {
  std::set<std::string> keep = {"seq_len", "max_docs_per_sequence"};
  if (choose) keep.insert("packing");
  std::set<std::string> skip;
  for (const OptionInfo& info : LoaderOptions::Describe()) {
    if (!keep.count(info.name)) skip.insert(info.name);
  }
  return AddOptionFlags<LoaderOptions>(app, LoaderOptions::Describe(), skip);
}

StatusOr<PackingInfo> PackWithProgress(const Dataset& dataset, const LoaderOptions& o,
                                       const StorageOptions& storage, int threads,
                                       const char* command) {
  return PackDataset(dataset, o.seq_len, o.max_docs_per_sequence, storage, threads,
                     [command](const std::string& line) {
                       std::fprintf(stderr, "tokpack %s: %s\n", command, line.c_str());
                     });
}

void PrintPackingInfo(const PackingInfo& p) {
  using ull = unsigned long long;
  std::set<std::string> dirs;
  for (const std::string& f : p.plan_files) dirs.insert(f.substr(0, f.rfind('/') + 1));
  std::printf("packing      best_fit, seq_len %lld, max_docs_per_sequence %lld%s\n",
              static_cast<long long>(p.seq_len), static_cast<long long>(p.max_docs_per_sequence),
              p.max_docs_per_sequence == 0 ? " (no cap)" : "");
  for (const std::string& d : dirs) std::printf("plans in     %s\n", d.c_str());
  std::printf("plan files   %zu (%llu built now, the rest loaded)\n", p.plan_files.size(),
              static_cast<ull>(p.shards_built));
  std::printf("bins         %llu (samples)\n", static_cast<ull>(p.bins));
  std::printf("padding      %.4f%% (%llu tokens of %llu)\n", 100 * p.padding_fraction,
              static_cast<ull>(p.padding_tokens), static_cast<ull>(p.bins * p.seq_len));
  std::printf(
      "documents    %llu (%llu empty, in no bin; %llu truncated: longer than seq_len, "
      "split into pieces)\n",
      static_cast<ull>(p.documents), static_cast<ull>(p.empty_documents),
      static_cast<ull>(p.truncated_documents));
  std::printf("pieces       %llu; per bin mean %.2f, max %llu\n", static_cast<ull>(p.pieces),
              p.mean_pieces_per_bin, static_cast<ull>(p.max_pieces_per_bin));
}

Runner AddPackCommand(CLI::App* app) {
  struct Args {
    std::string dir;
    int threads = 0;
    std::function<Status(LoaderOptions*)> apply_flags;
    std::function<Status(DatasetOptions*)> apply_open_flags;
  };
  auto a = std::make_shared<Args>();
  app->add_option("dataset", a->dir,
                  "Dataset: a directory, a Megatron prefix, or an s3://, gs://, http(s):// URL")
      ->required();
  a->apply_flags = AddPackingFlags(app, false);
  app->get_option("--seq-len")->required();
  app->add_option("--threads", a->threads, "Planning threads (0: one per core)")
      ->check(IntInRange(0, 1024))
      ->capture_default_str();
  a->apply_open_flags = AddOptionFlags<DatasetOptions>(app, DatasetOptions::Describe());
  return [a](const StorageOptions& storage) -> int {
    LoaderOptions o;
    o.packing = Packing::kBestFit;
    if (Status st = a->apply_flags(&o); !st.ok()) return ReportError("pack", st);
    DatasetOptions open_options;
    if (Status st = a->apply_open_flags(&open_options); !st.ok()) return ReportError("pack", st);
    StatusOr<std::shared_ptr<Dataset>> ds = Dataset::Open(a->dir, storage, open_options);
    if (!ds.ok()) return ReportError("pack", ds.status());
    StatusOr<PackingInfo> info = PackWithProgress(**ds, o, storage, a->threads, "pack");
    if (!info.ok()) return ReportError("pack", info.status());
    PrintPackingInfo(*info);
    return 0;
  };
}

}  // namespace tokpack::cli
