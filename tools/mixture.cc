#include "tools/mixture.h"

#include <cstdio>

namespace tokpack::cli {
namespace {

std::string Epochs(uint64_t samples, uint64_t per_epoch) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f",
                per_epoch ? static_cast<double>(samples) / static_cast<double>(per_epoch) : 0.0);
  return buf;
}

}  // namespace

StatusOr<OpenedMixture> OpenMixtureFile(const std::string& path, const StorageOptions& storage,
                                        const DatasetOptions& defaults) {
  TOKPACK_ASSIGN_OR_RETURN(Mixture file, ReadMixtureFile(path));
  OpenedMixture m;
  TOKPACK_ASSIGN_OR_RETURN(m.datasets, file.Open(storage, defaults, path));
  m.names = file.Names();
  m.phases = std::move(file.phases);
  m.max_epochs = file.MaxEpochs();
  return m;
}

void PrintMixtureSummary(const std::vector<std::string>& names, const LoaderStats& stats,
                         const std::vector<uint64_t>& samples_per_source) {
  std::printf("summary (global counts, all ranks, from the start of the data):\n");
  for (size_t s = 0; s < stats.sources.size() && s < names.size(); ++s) {
    const SourceStats& x = stats.sources[s];
    std::printf(
        "source %s: samples %llu, tokens %llu, epochs %s (%llu completed, %llu "
        "samples into the current one)\n",
        names[s].c_str(), static_cast<unsigned long long>(x.samples),
        static_cast<unsigned long long>(x.tokens), Epochs(x.samples, samples_per_source[s]).c_str(),
        static_cast<unsigned long long>(x.epochs_completed),
        static_cast<unsigned long long>(x.epoch_samples));
  }
  for (size_t k = 0; k < stats.phases.size(); ++k) {
    const PhaseStats& p = stats.phases[k];
    std::string weights, samples;
    for (size_t s = 0; s < names.size() && s < p.weights.size() && s < p.samples.size(); ++s) {
      weights += " " + names[s] + "=" + ShortestDouble(p.weights[s]);
      samples += " " + names[s] + "=" + std::to_string(p.samples[s]);
    }
    std::printf("phase %zu: start_step %lld, start_position %llu, weights%s, samples%s\n", k,
                static_cast<long long>(p.start_step),
                static_cast<unsigned long long>(p.start_position), weights.c_str(),
                samples.c_str());
  }
}

void WriteMixtureJson(const std::vector<std::string>& names, const LoaderStats& stats,
                      const std::vector<uint64_t>& samples_per_source, JsonWriter* w) {
  w->BeginObject("mixture");
  w->BeginArray("sources");
  for (size_t s = 0; s < stats.sources.size() && s < names.size(); ++s) {
    const SourceStats& x = stats.sources[s];
    w->BeginObject();
    w->String("name", names[s]);
    w->UInt("samples", x.samples);
    w->UInt("tokens", x.tokens);
    w->UInt("epochs_completed", x.epochs_completed);
    w->UInt("epoch_samples", x.epoch_samples);
    w->Double("epochs", samples_per_source[s] ? static_cast<double>(x.samples) /
                                                    static_cast<double>(samples_per_source[s])
                                              : 0.0);
    w->EndObject();
  }
  w->EndArray();
  w->BeginArray("phases");
  for (const PhaseStats& p : stats.phases) {
    w->BeginObject();
    w->Int("start_step", p.start_step);
    w->UInt("start_position", p.start_position);
    w->BeginObject("weights");
    for (size_t s = 0; s < names.size() && s < p.weights.size(); ++s)
      w->Double(names[s], p.weights[s]);
    w->EndObject();
    w->BeginObject("samples");
    for (size_t s = 0; s < names.size() && s < p.samples.size(); ++s)
      w->UInt(names[s], p.samples[s]);
    w->EndObject();
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();
}

}  // namespace tokpack::cli
