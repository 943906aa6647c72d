#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>

#include "tokpack/dataset_ops.h"
#include "tokpack/files.h"
#include "tokpack/json_writer.h"
#include "tokpack/loader.h"
#include "tokpack/mixture_plan.h"
#include "tokpack/tokenizer.h"
#include "tools/commands.h"
#include "tools/file_util.h"
#include "tools/mixture.h"
#include "tools/option_flags.h"
#include "tools/python_plot.h"

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
  bool steps_given = false;  // --steps, else a plan's default length.
  std::string plot;          // --plot PNG: draw the mixture's plan.
  bool plan_json = false;    // Print the plan as JSON.
  int64_t explain = -1;      // --explain STEP: the rows' documents instead of batches.
  bool json = false;         // --explain as JSON lines.
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
// the names its summary prints, its phases and its datasets.
StatusOr<std::unique_ptr<Loader>> MakeLoader(const SampleArgs& a, const StorageOptions& storage,
                                             std::vector<std::string>* names,
                                             std::vector<MixturePhase>* phases,
                                             std::vector<double>* max_epochs,
                                             std::vector<std::shared_ptr<Dataset>>* datasets) {
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
    *phases = mix.phases;
    *max_epochs = mix.max_epochs;
    *datasets = mix.datasets;
    StatusOr<std::unique_ptr<Loader>> loader =
        Loader::Create(std::move(mix.datasets), std::move(mix.phases), mix.max_epochs, a.o);
    if (!loader.ok()) return loader.status().WithContext(a.phases_file);
    return loader;
  }
  std::vector<Loader::Source> sources;
  phases->assign(1, MixturePhase{});
  for (const std::string& spec : a.datasets) {
    Loader::Source s;
    names->emplace_back();
    TOKPACK_RETURN_IF_ERROR(ParseSource(spec, storage, a.open_options, &s, &names->back()));
    phases->back().weights.push_back(s.weight);
    sources.push_back(std::move(s));
  }
  for (const Loader::Source& s : sources) datasets->push_back(s.dataset);
  return Loader::Create(std::move(sources), a.o);
}

// Steps a plan covers unless --steps says: --max-steps if given, else the
// last phase's start and ramp and a quarter as much again (at least 100).
int64_t DefaultPlanSteps(const LoaderOptions& o, const std::vector<MixturePhase>& phases) {
  if (o.max_steps > 0) return o.max_steps;
  const int64_t end = phases.back().start_step + phases.back().ramp_steps;
  return end + std::max<int64_t>(end / 4, 100);
}

std::string PlanJson(const MixturePlan& plan, const std::vector<std::string>& names,
                     const std::vector<MixturePhase>& phases) {
  const size_t n = plan.steps.size();
  JsonWriter w;
  w.BeginObject();
  w.UInt("global_batch", plan.global_batch);
  w.InlineDoubleArray("steps", std::vector<double>(plan.steps.begin(), plan.steps.end()));
  w.InlineDoubleArray("phase", std::vector<double>(plan.phase.begin(), plan.phase.end()));
  w.BeginArray("phases");
  for (const MixturePhase& p : phases) {
    w.BeginObject();
    w.Int("start_step", p.start_step);
    w.Int("ramp_steps", p.ramp_steps);
    w.InlineDoubleArray("weights", p.weights);
    w.EndObject();
  }
  w.EndArray();
  // Per source: a column of the plan, one value per recorded step.
  w.BeginArray("sources");
  std::vector<double> planned(n), drawn(n);
  for (size_t s = 0; s < plan.sources; ++s) {
    for (size_t i = 0; i < n; ++i) {
      planned[i] = plan.planned[i * plan.sources + s];
      drawn[i] = static_cast<double>(plan.drawn[i * plan.sources + s]);
    }
    w.BeginObject();
    w.String("name", names[s]);
    w.InlineDoubleArray("planned", planned);
    w.InlineDoubleArray("drawn", drawn);
    w.EndObject();
  }
  w.EndArray();
  w.BeginArray("events");
  for (const MixtureEvent& e : plan.events) {
    w.BeginObject();
    w.String("kind", MixtureEventName(e.kind));
    w.Int("step", e.step);
    w.UInt("phase", e.phase);
    if (e.kind == MixtureEvent::Kind::kCap) w.String("source", names[e.source]);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

// --plot and --plan-json: the plan of the loader's mixture from the start
// of the data, drawn and/or printed instead of the batches.
int Plan(const SampleArgs& a, const Loader& loader, const std::vector<std::string>& names,
         const std::vector<MixturePhase>& phases, const std::vector<double>& max_epochs) {
  if (!a.state_in.empty() || !a.state_out.empty()) {
    return ReportError("sample", InvalidArgumentError("--plot and --plan-json plan from the "
                                                      "start of the data: drop --state-in and "
                                                      "--state-out"));
  }
  const int64_t steps = a.steps_given ? a.steps : DefaultPlanSteps(a.o, phases);
  // About 2000 recorded steps: enough for a figure, small for 200 sources.
  const int64_t stride = std::max<int64_t>(1, (steps + 1999) / 2000);
  const uint64_t global_batch =
      static_cast<uint64_t>(a.o.batch_size) * static_cast<uint64_t>(a.o.world_size);
  StatusOr<MixturePlan> plan = PlanMixture(names, phases, max_epochs, loader.SamplesPerSource(),
                                           global_batch, steps, stride);
  if (!plan.ok()) return ReportError("sample", plan.status());
  const std::string json = PlanJson(*plan, names, phases);
  if (a.plan_json) std::printf("%s\n", json.c_str());
  if (!a.plot.empty()) {
    if (Status s = DrawWithPython("tokpack.mixture_plot", json, a.plot); !s.ok()) {
      return ReportError("sample", s);
    }
    if (!a.plan_json) std::printf("plot: %s\n", a.plot.c_str());
  }
  return 0;
}

int Run(SampleArgs& a, const StorageOptions& storage) {
  LoaderOptions& o = a.o;
  if (Status st = a.apply_flags(&o); !st.ok()) return ReportError("sample", st);
  if (Status st = a.apply_open_flags(&a.open_options); !st.ok()) return ReportError("sample", st);
  std::vector<std::string> names;
  std::vector<MixturePhase> phases;
  std::vector<double> max_epochs;
  std::vector<std::shared_ptr<Dataset>> datasets;
  auto loader = MakeLoader(a, storage, &names, &phases, &max_epochs, &datasets);
  if (!loader.ok()) return ReportError("sample", loader.status());
  if (a.explain >= 0 && (!a.plot.empty() || a.plan_json)) {
    return ReportError("sample", InvalidArgumentError("give --explain, or --plot/--plan-json"));
  }
  if (a.json && a.explain < 0) {
    return ReportError("sample", InvalidArgumentError("--json prints what --explain finds: give "
                                                      "--explain STEP"));
  }
  if (!a.plot.empty() || a.plan_json) return Plan(a, **loader, names, phases, max_epochs);
  const std::shared_ptr<Dataset>& first = datasets[0];
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
  if (a.explain >= 0) {
    if (!a.state_out.empty() || a.decode || a.summary) {
      return ReportError("sample", InvalidArgumentError("--explain prints no batches: drop "
                                                        "--state-out, --decode and --summary"));
    }
    return PrintExplained(**loader, names, datasets, a.explain, a.steps, a.json);
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
  app->add_option("--steps", a->steps,
                  "Batches to print; with --plot or --plan-json, steps to plan (default: "
                  "--max-steps, else past the last phase's start and ramp by a quarter, at "
                  "least 100)")
      ->capture_default_str()
      ->each([a](const std::string&) { a->steps_given = true; });
  app->add_option("--state-in", a->state_in, "Resume from this cursor file");
  app->add_option("--state-out", a->state_out, "Write the cursor after the last batch here");
  app->add_flag("--decode", a->decode, "Print decoded text instead of token ids");
  app->add_flag("--summary", a->summary,
                "After the batches, print per source the samples, tokens and epochs served "
                "and per phase the samples of each source (global counts)");
  app->add_option("--plot", a->plot,
                  "Instead of the batches, draw the mixture's plan as PNG: per source the "
                  "planned weights and the realised share over the steps, with phase starts, "
                  "ramps and caps (python -m tokpack.mixture_plot, needs matplotlib)")
      ->type_name("PNG");
  app->add_flag("--plan-json", a->plan_json,
                "Instead of the batches, print the mixture's plan as JSON (per source and "
                "recorded step: planned weight, cumulative draws; the events)");
  app->add_option("--explain", a->explain,
                  "Instead of the batches, print what every row of --steps steps from STEP "
                  "(all ranks) was made of: its source and sample, and the stretches of "
                  "documents in it with their origins (input, line or row, id). Replays "
                  "the order from the start, or from --state-in")
      ->type_name("STEP")
      ->check(IntInRange(0));
  app->add_flag("--json", a->json, "With --explain: one JSON object per row (JSON lines)");
  return [a](const StorageOptions& storage) -> int { return Run(*a, storage); };
}

}  // namespace tokpack::cli
