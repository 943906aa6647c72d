#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "io/file_system.h"
#include "tokpack/loader.h"
#include "tokpack/tokenizer.h"
#include "tools/commands.h"

namespace tokpack::cli {
namespace {

struct SampleArgs {
  std::vector<std::string> datasets;  // DIR or DIR:WEIGHT
  LoaderOptions o;
  std::string shuffle = "full";
  int64_t steps = 1;
  std::string state_in, state_out;
  bool decode = false;
};

Status ParseSource(const std::string& spec, const StorageOptions& storage, Loader::Source* out) {
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
  TOKPACK_ASSIGN_OR_RETURN(out->dataset, Dataset::Open(path, storage));
  out->weight = weight;
  return Status::Ok();
}

int Run(SampleArgs& a, const StorageOptions& storage) {
  LoaderOptions& o = a.o;
  o.shuffle = a.shuffle == "none"    ? ShuffleMode::kNone
              : a.shuffle == "block" ? ShuffleMode::kBlock
                                     : ShuffleMode::kFull;
  o.max_steps = 0;
  std::vector<Loader::Source> sources;
  for (const std::string& spec : a.datasets) {
    Loader::Source s;
    Status st = ParseSource(spec, storage, &s);
    if (!st.ok()) return ReportError("sample", st);
    sources.push_back(std::move(s));
  }
  std::unique_ptr<Tokenizer> tok;
  if (a.decode) {
    const Manifest& m = sources[0].dataset->manifest();
    if (m.tokenizer.file.empty()) {
      return ReportError("sample",
                         InvalidArgumentError("the dataset holds no tokenizer to decode with"));
    }
    auto t = Tokenizer::LoadRecorded(JoinPath(sources[0].dataset->path(), m.tokenizer.file),
                                     m.tokenizer);
    if (!t.ok()) return ReportError("sample", t.status());
    tok = std::move(*t);
  }
  auto loader = Loader::Create(std::move(sources), o);
  if (!loader.ok()) return ReportError("sample", loader.status());
  if (!a.state_in.empty()) {
    auto state = ReadFileToString(a.state_in);
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
    const std::filesystem::path out(a.state_out);
    const std::string dir = out.has_parent_path() ? out.parent_path().string() : ".";
    Status st = WriteFileAtomically(PosixFileSystem(), dir, out.filename().string(),
                                    (*loader)->SaveState());
    if (!st.ok()) return ReportError("sample", st);
  }
  return 0;
}

}  // namespace

Runner AddSampleCommand(CLI::App* app) {
  auto a = std::make_shared<SampleArgs>();
  LoaderOptions& o = a->o;
  o.threads = 1;
  app->add_option("datasets", a->datasets,
                  "Dataset directories or Megatron prefixes, each optionally DIR:WEIGHT")
      ->required();
  app->add_option("--seq-len", o.seq_len, "Tokens per sample (inputs)")->capture_default_str();
  app->add_option("--batch-size", o.batch_size, "Samples per rank per step")->capture_default_str();
  app->add_option("--seed", o.seed, "Shuffle seed")->capture_default_str();
  app->add_option("--rank", o.rank, "This rank")->capture_default_str();
  app->add_option("--world-size", o.world_size, "Number of ranks")->capture_default_str();
  app->add_option("--steps", a->steps, "Batches to print")->capture_default_str();
  app->add_option("--shuffle", a->shuffle, "full, block or none")
      ->check(CLI::IsMember({"full", "block", "none"}))
      ->capture_default_str();
  app->add_option("--state-in", a->state_in, "Resume from this cursor file");
  app->add_option("--state-out", a->state_out, "Write the cursor after the last batch here");
  app->add_flag("--decode", a->decode, "Print decoded text instead of token ids");
  return [a](const StorageOptions& storage) -> int { return Run(*a, storage); };
}

}  // namespace tokpack::cli
