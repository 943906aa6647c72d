// tokpack profile: simulates a training loop over a dataset for several
// loader settings, reports per setting the wait for data per step, throughput
// and the CPU the data path costs, and recommends the cheapest setting whose
// p99 wait fits in 1% of the step. --json writes every measurement (per-step
// timelines included); --plot has Python draw them (tokpack.profile_plot).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <sstream>
#include <thread>

#include "tokpack/json_writer.h"
#include "tokpack/loader.h"
#include "tools/commands.h"
#include "tools/mixture.h"
#include "tools/option_flags.h"
#include "tools/python_plot.h"

namespace tokpack::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Waits closer than this are handover cost and scheduler jitter on a busy
// machine, not the data path: settings that differ by less are tied, and a
// p99 wait may exceed the budget by this much (but never by more than the
// budget itself) before it counts as over.
constexpr double kNoiseFloorSeconds = 20e-6;
constexpr double kBudgetShareOfStep = 0.01;

struct ProfileArgs {
  std::string dataset;
  std::string phases_file;  // Instead of `dataset`.
  std::string step_time = "100ms";
  std::string threads = "1,2,4";
  std::string prefetch = "2,4,8";
  std::string device = "cpu";  // As the advice names it: o.device, after the flags.
  LoaderOptions o;
  std::function<Status(LoaderOptions*)> apply_flags;
  DatasetOptions open_options;  // How the datasets are opened (split, verify_on_open).
  std::function<Status(DatasetOptions*)> apply_open_flags;
  int steps = 50;
  int warmup = 5;
  bool json = false;
  std::string plot;
};

struct Result {
  int threads = 0, prefetch = 0;
  // Per measured step, seconds since the first: next() called, batch in
  // hand, simulated training step done.
  std::vector<double> request, ready, done;
  double wall = 0, cpu = 0;  // Seconds over the measured steps.
  double mean = 0, p50 = 0, p99 = 0, max = 0, samples_per_second = 0;
  LoaderStats stats;  // At the end: the mixture as served.
  std::vector<uint64_t> samples_per_source;
  double CpuPerStep() const { return cpu / static_cast<double>(request.size()); }
};

struct Verdict {
  size_t baseline = 0;  // Loader's default setting if tried, else the cheapest.
  size_t pick = 0;      // The recommendation.
  bool within = false;  // Its p99 wait fits the budget.
  double budget = 0;    // Seconds: 1% of the step.
};

StatusOr<double> ParseDuration(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return InvalidArgumentError("--step-time '" + text + "' is not a duration such as 100ms");
  }
  const std::string unit = text.substr(used);
  if (unit == "ms" || unit.empty()) return v / 1e3;
  if (unit == "s") return v;
  if (unit == "us") return v / 1e6;
  return InvalidArgumentError("--step-time unit must be s, ms or us, not '" + unit + "'");
}

StatusOr<std::vector<int>> ParseList(const std::string& text, const char* what) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1) {
      return InvalidArgumentError(std::string(what) + " must be positive integers like 1,2,4");
    }
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// CPU time of every thread of the process (assemblers, copy stage, the
// consumer), to the nanosecond; getrusage counts in ticks on some kernels.
double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The positional dataset alone, or the mixture of --phases FILE.
StatusOr<OpenedMixture> OpenMixture(const ProfileArgs& a, const StorageOptions& storage) {
  if (a.dataset.empty() == a.phases_file.empty()) {
    return InvalidArgumentError(a.phases_file.empty()
                                    ? "give the dataset to profile, or --phases FILE"
                                    : "give the datasets in --phases " + a.phases_file +
                                          " or as an argument, not both");
  }
  if (!a.phases_file.empty()) return OpenMixtureFile(a.phases_file, storage, a.open_options);
  TOKPACK_ASSIGN_OR_RETURN(std::shared_ptr<Dataset> ds,
                           Dataset::Open(a.dataset, storage, a.open_options));
  return OpenedMixture{{a.dataset}, {std::move(ds)}, {{0, {1.0}}}, {}};
}

// One setting: warm-up steps, then `steps` steps of next() followed by a
// simulated training step of `step` seconds.
Status Measure(const ProfileArgs& a, const OpenedMixture& mix, double step, Result* r) {
  LoaderOptions o = a.o;
  o.threads = r->threads;
  o.prefetch = r->prefetch;
  StatusOr<std::unique_ptr<Loader>> created =
      Loader::Create(mix.datasets, mix.phases, mix.max_epochs, o);
  if (!created.ok() && !a.phases_file.empty()) return created.status().WithContext(a.phases_file);
  TOKPACK_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader, std::move(created));
  const auto next = [&]() -> Status {
    TOKPACK_ASSIGN_OR_RETURN(auto b, loader->Next());
    if (!b) return OutOfRangeError("the dataset ended; use a smaller --steps");
    return b->UseOn(nullptr);  // A training step's stream waits for the batch.
  };
  for (int i = 0; i < a.warmup; ++i) {
    TOKPACK_RETURN_IF_ERROR(next());
    std::this_thread::sleep_for(std::chrono::duration<double>(step));
  }
  const auto start = Clock::now();
  const double cpu0 = ProcessCpuSeconds();
  const auto since = [&start](Clock::time_point t) {
    return std::chrono::duration<double>(t - start).count();
  };
  std::vector<double> waits;
  for (int i = 0; i < a.steps && !g_interrupted; ++i) {
    const auto t0 = Clock::now();
    TOKPACK_RETURN_IF_ERROR(next());
    const auto t1 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(step));
    const auto t2 = Clock::now();
    r->request.push_back(since(t0));
    r->ready.push_back(since(t1));
    r->done.push_back(since(t2));
    waits.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  if (g_interrupted) return CancelledError("profile interrupted");
  r->wall = since(Clock::now());
  r->cpu = ProcessCpuSeconds() - cpu0;
  std::sort(waits.begin(), waits.end());
  for (double x : waits) r->mean += x / static_cast<double>(waits.size());
  r->p50 = waits[(waits.size() - 1) / 2];
  r->p99 = waits[(waits.size() - 1) * 99 / 100];
  r->max = waits.back();
  r->samples_per_second = static_cast<double>(a.steps * o.batch_size) / r->wall;
  r->stats = loader->Stats();
  r->samples_per_source = loader->SamplesPerSource();
  return Status::Ok();
}

// Cheapest first: fewest threads, then the smallest ring. CPU time is not a
// criterion: at these loads it is mostly scheduler noise.
bool Cheaper(const Result& a, const Result& b) {
  return a.threads != b.threads ? a.threads < b.threads : a.prefetch < b.prefetch;
}

bool WithinBudget(double p99, double budget) {
  return p99 <= budget + std::min(kNoiseFloorSeconds, budget);
}

// The cheapest setting within the budget; failing that, the cheapest of
// those whose p99 wait ties with the smallest.
Verdict Decide(const std::vector<Result>& results, double step) {
  Verdict v;
  v.budget = kBudgetShareOfStep * step;
  const LoaderOptions defaults;
  v.baseline = results.size();
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].threads == defaults.threads && results[i].prefetch == defaults.prefetch) {
      v.baseline = i;
    }
  }
  std::vector<size_t> order(results.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return Cheaper(results[a], results[b]); });
  if (v.baseline == results.size()) v.baseline = order[0];
  double best = results[order[0]].p99;
  for (size_t i : order) best = std::min(best, results[i].p99);
  const double tie = std::max(kNoiseFloorSeconds, 0.1 * best);
  v.within = WithinBudget(best, v.budget);
  for (size_t i : order) {
    const double p99 = results[i].p99;
    if (v.within ? WithinBudget(p99, v.budget) : p99 <= best + tie) {
      v.pick = i;
      break;
    }
  }
  return v;
}

std::string LoaderCall(const Result& r, const std::string& device) {
  std::string call = "tokpack.Loader(..., threads=" + std::to_string(r.threads) +
                     ", prefetch=" + std::to_string(r.prefetch);
  if (device != "cpu") call += ", device=\"" + device + "\"";
  return call + ")";
}

std::string Advice(const std::vector<Result>& results, const Verdict& v, double step,
                   const std::string& device) {
  const Result& r = results[v.pick];
  char text[512];
  if (v.within) {
    std::snprintf(text, sizeof(text),
                  "recommended: %s, the cheapest setting tried whose p99 wait (%.3f ms) is "
                  "within 1%% of the %.1f ms step (%.3f ms, give or take %.3f ms of noise); it "
                  "costs %.3f ms of CPU per step",
                  LoaderCall(r, device).c_str(), r.p99 * 1e3, step * 1e3, v.budget * 1e3,
                  std::min(kNoiseFloorSeconds, v.budget) * 1e3, r.CpuPerStep() * 1e3);
  } else {
    std::snprintf(text, sizeof(text),
                  "the data path is the bottleneck: even the best setting tried, %s, waits "
                  "%.3f ms at p99, more than 1%% of the %.1f ms step (%.3f ms), and %.3f ms "
                  "per step on average; try more threads than %d if cores are free (this "
                  "machine has %u), or data closer to the accelerator",
                  LoaderCall(r, device).c_str(), r.p99 * 1e3, step * 1e3, v.budget * 1e3,
                  r.mean * 1e3, r.threads, std::thread::hardware_concurrency());
  }
  return text;
}

std::string ReportJson(const ProfileArgs& a, const OpenedMixture& mix,
                       const std::vector<Result>& results, const Verdict& v, double step) {
  JsonWriter w;
  w.BeginObject();
  w.String("dataset", a.dataset);
  if (!a.phases_file.empty()) w.String("phases_file", a.phases_file);
  w.String("device", a.device);
  w.Double("step_seconds", step);
  w.Double("budget_seconds", v.budget);
  w.Double("noise_floor_seconds", kNoiseFloorSeconds);
  w.Int("batch_size", a.o.batch_size);
  w.Int("seq_len", a.o.seq_len);
  w.BeginArray("configurations");
  for (const Result& r : results) {
    w.BeginObject();
    w.Int("threads", r.threads);
    w.Int("prefetch", r.prefetch);
    w.Double("wait_mean_seconds", r.mean);
    w.Double("wait_p50_seconds", r.p50);
    w.Double("wait_p99_seconds", r.p99);
    w.Double("wait_max_seconds", r.max);
    w.Double("samples_per_second", r.samples_per_second);
    w.Double("cpu_seconds_per_step", r.CpuPerStep());
    w.Double("cpu_cores", r.cpu / r.wall);
    w.Bool("within_budget", WithinBudget(r.p99, v.budget));
    w.InlineDoubleArray("request_seconds", r.request);
    w.InlineDoubleArray("ready_seconds", r.ready);
    w.InlineDoubleArray("done_seconds", r.done);
    w.EndObject();
  }
  w.EndArray();
  w.Int("baseline", static_cast<int64_t>(v.baseline));
  w.BeginObject("recommended");
  w.Int("index", static_cast<int64_t>(v.pick));
  w.Int("threads", results[v.pick].threads);
  w.Int("prefetch", results[v.pick].prefetch);
  w.Bool("within_budget", v.within);
  w.String("advice", Advice(results, v, step, a.device));
  w.EndObject();
  // Every setting runs the same steps from the start: one mixture for all.
  WriteMixtureJson(mix.names, results[0].stats, results[0].samples_per_source, &w);
  w.EndObject();
  return w.str();
}

void PrintTable(const std::vector<Result>& results) {
  std::printf("%-8s %-8s %10s %10s %10s %10s %12s %12s %6s\n", "threads", "prefetch", "wait mean",
              "p50", "p99", "max", "samples/s", "cpu/step", "cores");
  for (const Result& r : results) {
    std::printf("%-8d %-8d %8.3fms %8.3fms %8.3fms %8.3fms %12.0f %10.3fms %6.3f\n", r.threads,
                r.prefetch, r.mean * 1e3, r.p50 * 1e3, r.p99 * 1e3, r.max * 1e3,
                r.samples_per_second, r.CpuPerStep() * 1e3, r.cpu / r.wall);
  }
}

int Run(ProfileArgs& a, const StorageOptions& storage) {
  StatusOr<double> step = ParseDuration(a.step_time);
  StatusOr<std::vector<int>> threads = ParseList(a.threads, "--threads");
  StatusOr<std::vector<int>> prefetch = ParseList(a.prefetch, "--prefetch");
  for (const Status& s : {step.status(), threads.status(), prefetch.status()}) {
    if (!s.ok()) return ReportError("profile", s);
  }
  if (Status s = a.apply_flags(&a.o); !s.ok()) return ReportError("profile", s);
  if (Status s = a.apply_open_flags(&a.open_options); !s.ok()) return ReportError("profile", s);
  a.device = a.o.device.ToString();
  StatusOr<OpenedMixture> mix = OpenMixture(a, storage);
  if (!mix.ok()) return ReportError("profile", mix.status());
  std::vector<Result> results;
  for (int t : *threads) {
    for (int p : *prefetch) {
      Result r;
      r.threads = t;
      r.prefetch = p;
      if (!a.json) std::fprintf(stderr, "profiling threads %d, prefetch %d\n", t, p);
      Status s = Measure(a, *mix, *step, &r);
      if (!s.ok()) return ReportError("profile", s);
      results.push_back(std::move(r));
    }
  }
  const Verdict v = Decide(results, *step);
  const std::string json = ReportJson(a, *mix, results, v, *step);
  if (a.json) {
    std::printf("%s", json.c_str());
  } else {
    PrintTable(results);
    std::printf("%s\n", Advice(results, v, *step, a.device).c_str());
    if (!a.phases_file.empty()) {
      PrintMixtureSummary(mix->names, results[0].stats, results[0].samples_per_source);
    }
  }
  if (!a.plot.empty()) {
    Status s = DrawWithPython("tokpack.profile_plot", json, a.plot);
    if (!s.ok()) return ReportError("profile", s);
    if (!a.json) std::printf("plot: %s\n", a.plot.c_str());
  }
  return 0;
}

}  // namespace

Runner AddProfileCommand(CLI::App* app) {
  auto a = std::make_shared<ProfileArgs>();
  app->add_option("dataset", a->dataset, "Dataset directory, Megatron prefix or URL");
  app->add_option("--phases", a->phases_file,
                  "A JSON file of named sources and the phases that weight them, instead of "
                  "the dataset (docs/cli.md)")
      ->type_name("FILE");
  app->add_option("--step-time", a->step_time, "Simulated training step, e.g. 100ms, 0.5s")
      ->default_val("100ms");
  // The loader's own options, from its table; threads and prefetch are
  // lists of settings to try, and the run length is --steps.
  a->apply_flags = AddOptionFlags<LoaderOptions>(app, LoaderOptions::Describe(),
                                                 {"threads", "prefetch", "epochs", "max_steps"});
  a->apply_open_flags = AddOptionFlags<DatasetOptions>(app, DatasetOptions::Describe());
  app->add_option("--threads", a->threads, "Assembler threads to try, e.g. 1,2,4")
      ->default_val("1,2,4");
  app->add_option("--prefetch", a->prefetch, "Ring sizes to try, e.g. 2,4,8")->default_val("2,4,8");
  app->add_option("--steps", a->steps, "Measured steps per setting")
      ->default_val(50)
      ->check(IntInRange(1, INT_MAX));
  app->add_option("--warmup", a->warmup, "Unmeasured steps first")->default_val(5);
  app->add_flag("--json", a->json, "Every measurement as JSON, per-step timelines included");
  app->add_option("--plot", a->plot,
                  "Draw p99 wait per setting and the baseline's and recommended setting's "
                  "timelines as PNG (python -m tokpack.profile_plot, needs matplotlib)");
  return [a](const StorageOptions& storage) -> int { return Run(*a, storage); };
}

}  // namespace tokpack::cli
