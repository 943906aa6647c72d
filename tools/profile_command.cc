// tokpack profile: simulates a training loop over a dataset for several
// loader settings and reports the wait for data per step, throughput and CPU
// use, recommends a setting, and optionally plots the timeline and the wait
// histogram (with gnuplot).
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "tokpack/json_writer.h"
#include "tokpack/loader.h"
#include "tools/commands.h"
#include "tools/file_util.h"

namespace tokpack::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct ProfileArgs {
  std::string dataset;
  std::string step_time = "100ms";
  std::string threads = "1,2,4";
  std::string prefetch = "2,4,8";
  std::string device = "cpu";
  LoaderOptions o;
  int steps = 50;
  int warmup = 5;
  bool json = false;
  std::string plot;
};

struct Result {
  int threads = 0, prefetch = 0;
  std::vector<double> waits;                    // Seconds, per measured step.
  std::vector<std::array<double, 3>> timeline;  // Request, batch in hand, step done.
  double wall = 0, cpu = 0;                     // Seconds over the measured steps.
  double mean = 0, p50 = 0, p99 = 0, max = 0, samples_per_second = 0;
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

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// One configuration: warm-up steps, then `steps` steps of next() followed by
// a simulated training step of `step` seconds.
Status Measure(const ProfileArgs& a, const std::shared_ptr<Dataset>& ds, double step, Result* r) {
  LoaderOptions o = a.o;
  o.threads = r->threads;
  o.prefetch = r->prefetch;
  TOKPACK_ASSIGN_OR_RETURN(o.device, Device::Parse(a.device));
  TOKPACK_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader, Loader::Create({{ds, 1.0}}, o));
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
  const double cpu0 = CpuSeconds();
  const auto since = [&start](Clock::time_point t) {
    return std::chrono::duration<double>(t - start).count();
  };
  for (int i = 0; i < a.steps && !g_interrupted; ++i) {
    const auto t0 = Clock::now();
    TOKPACK_RETURN_IF_ERROR(next());
    const auto t1 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(step));
    const auto t2 = Clock::now();
    r->waits.push_back(std::chrono::duration<double>(t1 - t0).count());
    r->timeline.push_back({since(t0), since(t1), since(t2)});
  }
  if (g_interrupted) return CancelledError("profile interrupted");
  r->wall = since(Clock::now());
  r->cpu = CpuSeconds() - cpu0;
  std::vector<double> w = r->waits;
  std::sort(w.begin(), w.end());
  for (double x : w) r->mean += x / static_cast<double>(w.size());
  r->p50 = w[(w.size() - 1) / 2];
  r->p99 = w[(w.size() - 1) * 99 / 100];
  r->max = w.back();
  r->samples_per_second = static_cast<double>(a.steps * o.batch_size) / r->wall;
  return Status::Ok();
}

// The cheapest setting (CPU, then threads, then prefetch) whose p99 wait is
// under 1% of the step; failing that, the one that waits least.
size_t Recommend(const std::vector<Result>& results, double step, bool* meets) {
  size_t best = results.size();
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].p99 > 0.01 * step) continue;
    if (best == results.size() || results[i].cpu < results[best].cpu * 0.9) best = i;
  }
  *meets = best != results.size();
  if (*meets) return best;
  best = 0;
  for (size_t i = 1; i < results.size(); ++i) {
    if (results[i].mean < results[best].mean) best = i;
  }
  return best;
}

Status Plot(const std::string& out, const std::vector<Result>& results, size_t pick) {
  const std::string dir = out + ".data";
  TOKPACK_RETURN_IF_ERROR(CreateDirs(dir));
  std::ofstream timeline(JoinPath(dir, "timeline.dat"));
  for (size_t s = 0; s < results[pick].timeline.size(); ++s) {
    const auto& t = results[pick].timeline[s];
    timeline << s << ' ' << t[0] * 1e3 << ' ' << t[1] * 1e3 << ' ' << t[2] * 1e3 << '\n';
  }
  timeline.close();
  std::string plots;
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string name = "waits-" + std::to_string(i) + ".dat";
    std::ofstream f(JoinPath(dir, name));
    for (double w : results[i].waits) f << w * 1e6 << '\n';
    plots += std::string(plots.empty() ? "" : ", ") + "'" + JoinPath(dir, name) +
             "' using (bin($1)):(1.0) smooth frequency with steps title 'threads " +
             std::to_string(results[i].threads) + ", prefetch " +
             std::to_string(results[i].prefetch) + "'";
  }
  std::ofstream gp(JoinPath(dir, "plot.gp"));
  gp << "set terminal pngcairo size 1200,900\n"
     << "set output '" << out << "'\n"
     << "set multiplot layout 2,1\n"
     << "set title 'Timeline, threads " << results[pick].threads << ", prefetch "
     << results[pick].prefetch << ": waiting for data (red) and training (blue)'\n"
     << "set xlabel 'ms'\nset ylabel 'step'\nset yrange [-1:*]\n"
     << "plot '" << JoinPath(dir, "timeline.dat")
     << "' using 2:1:2:3:($1-0.4):($1+0.4) with boxxyerror fs solid lc rgb 'red' title "
        "'wait', '' using 3:1:3:4:($1-0.4):($1+0.4) with boxxyerror fs solid lc rgb "
        "'blue' title 'train'\n"
     << "set title 'Wait for data per step'\nset logscale x\nset xlabel 'microseconds'\n"
     << "set ylabel 'steps'\nset yrange [0:*]\n"
     << "bin(x) = 10**(floor(log10(x > 0.1 ? x : 0.1) * 10) / 10.0)\n"
     << "plot " << plots << "\nunset multiplot\n";
  gp.close();
  const std::string cmd = "gnuplot '" + JoinPath(dir, "plot.gp") + "' 2>&1";
  if (std::system(("command -v gnuplot >/dev/null 2>&1")) != 0) {
    return FailedPreconditionError("--plot needs gnuplot (apt-get install gnuplot-nox)");
  }
  if (std::system(cmd.c_str()) != 0) return InternalError("gnuplot failed on " + dir);
  RemoveAllQuietly(dir);
  return Status::Ok();
}

int Run(ProfileArgs& a, const StorageOptions& storage) {
  StatusOr<double> step = ParseDuration(a.step_time);
  StatusOr<std::vector<int>> threads = ParseList(a.threads, "--threads");
  StatusOr<std::vector<int>> prefetch = ParseList(a.prefetch, "--prefetch");
  for (const Status& s : {step.status(), threads.status(), prefetch.status()}) {
    if (!s.ok()) return ReportError("profile", s);
  }
  if (auto d = Device::Parse(a.device); !d.ok()) {
    return ReportError("profile", d.status().WithContext("--device"));
  }
  auto ds = Dataset::Open(a.dataset, storage);
  if (!ds.ok()) return ReportError("profile", ds.status());
  std::vector<Result> results;
  for (int t : *threads) {
    for (int p : *prefetch) {
      Result r;
      r.threads = t;
      r.prefetch = p;
      if (!a.json) std::fprintf(stderr, "profiling threads %d, prefetch %d\n", t, p);
      Status s = Measure(a, *ds, *step, &r);
      if (!s.ok()) return ReportError("profile", s);
      results.push_back(std::move(r));
    }
  }
  bool meets = false;
  const size_t pick = Recommend(results, *step, &meets);
  if (a.json) {
    JsonWriter w;
    w.BeginObject();
    w.String("dataset", a.dataset);
    w.Double("step_seconds", *step);
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
      w.Double("cpu_cores", r.cpu / r.wall);
      w.EndObject();
    }
    w.EndArray();
    w.BeginObject("recommended");
    w.Int("threads", results[pick].threads);
    w.Int("prefetch", results[pick].prefetch);
    w.Bool("wait_under_1_percent", meets);
    w.EndObject();
    w.EndObject();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("%-8s %-8s %10s %10s %10s %10s %12s %9s\n", "threads", "prefetch", "wait mean",
                "p50", "p99", "max", "samples/s", "cpu");
    for (const Result& r : results) {
      std::printf("%-8d %-8d %8.3fms %8.3fms %8.3fms %8.3fms %12.0f %6.2f cores\n", r.threads,
                  r.prefetch, r.mean * 1e3, r.p50 * 1e3, r.p99 * 1e3, r.max * 1e3,
                  r.samples_per_second, r.cpu / r.wall);
    }
    const Result& r = results[pick];
    if (meets) {
      std::printf(
          "recommended: --threads %d --prefetch %d (p99 wait %.3f ms, %.2f%% of the %.1f ms "
          "step, at %.2f cores)\n",
          r.threads, r.prefetch, r.p99 * 1e3, 100 * r.p99 / *step, *step * 1e3, r.cpu / r.wall);
    } else {
      std::printf(
          "recommended: --threads %d --prefetch %d, but the data path is the bottleneck: "
          "every setting tried waits more than 1%% of the %.1f ms step at p99 (best mean "
          "%.3f ms); try more threads, or remote data closer to the GPUs\n",
          r.threads, r.prefetch, *step * 1e3, r.mean * 1e3);
    }
  }
  if (!a.plot.empty()) {
    Status s = Plot(a.plot, results, pick);
    if (!s.ok()) return ReportError("profile", s);
    if (!a.json) std::printf("plot: %s\n", a.plot.c_str());
  }
  return 0;
}

}  // namespace

Runner AddProfileCommand(CLI::App* app) {
  auto a = std::make_shared<ProfileArgs>();
  a->o.seq_len = 2048;
  a->o.batch_size = 8;
  app->add_option("dataset", a->dataset, "Dataset directory, Megatron prefix or URL")->required();
  app->add_option("--step-time", a->step_time, "Simulated training step, e.g. 100ms, 0.5s")
      ->default_val("100ms");
  app->add_option("--seq-len", a->o.seq_len, "Tokens per row")->default_val(2048);
  app->add_option("--batch-size", a->o.batch_size, "Rows per step")->default_val(8);
  app->add_option("--threads", a->threads, "Assembler threads to try, e.g. 1,2,4")
      ->default_val("1,2,4");
  app->add_option("--prefetch", a->prefetch, "Ring sizes to try, e.g. 2,4,8")->default_val("2,4,8");
  app->add_option("--device", a->device, "cpu, cuda or cuda:N")->default_val("cpu");
  app->add_option("--steps", a->steps, "Measured steps per setting")
      ->default_val(50)
      ->check(CLI::PositiveNumber);
  app->add_option("--warmup", a->warmup, "Unmeasured steps first")->default_val(5);
  app->add_option("--seed", a->o.seed, "Shuffle seed")->default_val(0);
  app->add_flag("--json", a->json, "Machine-readable output");
  app->add_option("--plot", a->plot, "Write the timeline and wait histogram as PNG (gnuplot)");
  return [a](const StorageOptions& storage) -> int { return Run(*a, storage); };
}

}  // namespace tokpack::cli
