#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "tokpack/dataset_ops.h"
#include "tokpack/files.h"
#include "tokpack/loader.h"
#include "tokpack/tokenizer.h"
#include "tools/commands.h"
#include "tools/file_util.h"
#include "tools/mixture.h"
#include "tools/option_flags.h"

namespace tokpack::cli {
namespace {

struct SampleArgs {
  std::vector<std::string> datasets;  // DIR or DIR:WEIGHT
  std::string phases_file;            // Instead of `datasets`.
  LoaderOptions o;
  std::function<Status(LoaderOptions*)> apply_flags;
  DatasetOptions open_options;  // For every dataset (split, verify_on_open).
  std::function<Status(DatasetOptions*)> apply_open_flags;
  int64_t steps = 1;
  std::string state_in, state_out;
  bool decode = false;
  bool summary = false;
};

Status ParseSource(const std::string& spec, const StorageOptions& storage,
                   const DatasetOptions& options, Loader::Source* out, std::string* name) {
  std::string path = spec;
  double weight = 1.0;
  const size_t colon = spec.rfind(':');
  if (colon != std::string::npos && colon + 1 < spec.size()) {
    try {
      size_t used = 0;
      weight = std::stod(spec.substr(colon + 1), &used);
      if (used == spec.size() - colon - 1)
        path = spec.substr(0, colon);
      else
        weight = 1.0;
    } catch (const std::exception&) {
      weight = 1.0;
    }
  }
  TOKPACK_ASSIGN_OR_RETURN(out->dataset, Dataset::Open(path, storage, options));
  out->weight = weight;
  *name = path;
  return Status::Ok();
}

// The loader of the positional datasets (DIR[:WEIGHT]) or of --phases FILE,
// and the names its summary prints.
StatusOr<std::unique_ptr<Loader>> MakeLoader(const SampleArgs& a, const StorageOptions& storage,
                                             std::vector<std::string>* names,
                                             std::shared_ptr<Dataset>* first) {
  if (a.datasets.empty() == a.phases_file.empty()) {
    return InvalidArgumentError(a.phases_file.empty()
                                    ? "give the datasets to sample, or --phases FILE"
                                    : "give the datasets in --phases " + a.phases_file +
                                          " or as arguments, not both");
  }
  if (!a.phases_file.empty()) {
    TOKPACK_ASSIGN_OR_RETURN(OpenedMixture mix,
                             OpenMixtureFile(a.phases_file, storage, a.open_options));
    *names = mix.names;
    *first = mix.datasets[0];
    StatusOr<std::unique_ptr<Loader>> loader =
        Loader::Create(std::move(mix.datasets), std::move(mix.phases), mix.max_epochs, a.o);
    if (!loader.ok()) return loader.status().WithContext(a.phases_file);
    return loader;
  }
  std::vector<Loader::Source> sources;
  for (const std::string& spec : a.datasets) {
    Loader::Source s;
    names->emplace_back();
    TOKPACK_RETURN_IF_ERROR(ParseSource(spec, storage, a.open_options, &s, &names->back()));
    sources.push_back(std::move(s));
  }
  *first = sources[0].dataset;
  return Loader::Create(std::move(sources), a.o);
}

int Run(SampleArgs& a, const StorageOptions& storage) {
  LoaderOptions& o = a.o;
  if (Status st = a.apply_flags(&o); !st.ok()) return ReportError("sample", st);
  if (Status st = a.apply_open_flags(&a.open_options); !st.ok()) return ReportError("sample", st);
  std::vector<std::string> names;
  std::shared_ptr<Dataset> first;
  auto loader = MakeLoader(a, storage, &names, &first);
  if (!loader.ok()) return ReportError("sample", loader.status());
  std::unique_ptr<Tokenizer> tok;
  if (a.decode) {
    const Manifest& m = first->manifest();
    if (m.tokenizer.file.empty()) {
      return ReportError("sample",
                         InvalidArgumentError("the dataset holds no tokenizer to decode with"));
    }
    auto t = LoadDatasetTokenizer(*first, storage);
    if (!t.ok()) return ReportError("sample", t.status());
    tok = std::move(*t);
  }
  if (!a.state_in.empty()) {
    StatusOr<std::string> state = ReadSmallFile(a.state_in, kMaxCursorBytes, "a cursor file");
    if (!state.ok()) return ReportError("sample", state.status());
    Status st = (*loader)->LoadState(*state);
    if (!st.ok()) return ReportError("sample", st.WithContext(a.state_in));
  }
  for (int64_t i = 0; i < a.steps; ++i) {
    auto batch = (*loader)->Next();
    if (!batch.ok()) return ReportError("sample", batch.status());
    if (!*batch) break;
    const Batch& b = **batch;
    const int64_t* in = static_cast<const int64_t*>(b.inputs());
    for (int64_t r = 0; r < b.batch_size(); ++r) {
      std::printf("step %lld row %lld:", static_cast<long long>(b.step()),
                  static_cast<long long>(r));
      const int64_t* row = in + r * b.seq_len();
      if (tok) {
        auto text = tok->Decode(std::vector<int>(row, row + b.seq_len()));
        if (!text.ok()) return ReportError("sample", text.status());
        std::printf(" %s\n", text->c_str());
      } else {
        for (int64_t j = 0; j < b.seq_len(); ++j)
          std::printf(" %lld", static_cast<long long>(row[j]));
        std::printf("\n");
      }
    }
  }
  if (!a.state_out.empty()) {
    Status st = WriteFileAtomically(a.state_out, (*loader)->SaveState());
    if (!st.ok()) return ReportError("sample", st);
  }
  if (a.summary) {
    PrintMixtureSummary(names, (*loader)->Stats(), (*loader)->SamplesPerSource());
  }
  return 0;
}

}  // namespace

Runner AddSampleCommand(CLI::App* app) {
  auto a = std::make_shared<SampleArgs>();
  LoaderOptions& o = a->o;
  o.threads = 1;
  app->add_option("datasets", a->datasets,
                  "Dataset directories or Megatron prefixes, each optionally DIR:WEIGHT");
  app->add_option("--phases", a->phases_file,
                  "A JSON file of named sources and the phases that weight them, instead of "
                  "the datasets (docs/cli.md)")
      ->type_name("FILE");
  // Batches are printed from host memory: the device options do not apply.
  a->apply_flags = AddOptionFlags<LoaderOptions>(app, LoaderOptions::Describe(),
                                                 {"device", "device_prefetch", "dtype"});
  // How each dataset is opened (e.g. --split 949,50,1 --split-index 1).
  a->apply_open_flags = AddOptionFlags<DatasetOptions>(app, DatasetOptions::Describe());
  app->add_option("--steps", a->steps, "Batches to print")->capture_default_str();
  app->add_option("--state-in", a->state_in, "Resume from this cursor file");
  app->add_option("--state-out", a->state_out, "Write the cursor after the last batch here");
  app->add_flag("--decode", a->decode, "Print decoded text instead of token ids");
  app->add_flag("--summary", a->summary,
                "After the batches, print per source the samples, tokens and epochs served "
                "and per phase the samples of each source (global counts)");
  return [a](const StorageOptions& storage) -> int { return Run(*a, storage); };
}

}  // namespace tokpack::cli
