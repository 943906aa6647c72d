// Mixtures for the CLI: the datasets of `--phases FILE` (the file and its
// rules: tokpack/mixture.h), and the per-source and per-phase counts that
// `sample --summary` prints and `profile --json` reports.
#ifndef TOKPACK_TOOLS_MIXTURE_H_
#define TOKPACK_TOOLS_MIXTURE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokpack/dataset.h"
#include "tokpack/json_writer.h"
#include "tokpack/loader.h"
#include "tokpack/mixture.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack::cli {

// What a loader is made of: named datasets and their phases.
struct OpenedMixture {
  std::vector<std::string> names;
  std::vector<std::shared_ptr<Dataset>> datasets;
  std::vector<MixturePhase> phases;
  std::vector<double> max_epochs;  // Per source, or empty: no caps.
};
// Reads a phases file and opens its datasets with `defaults` (the command
// line's dataset options), overridden by each source's own in the file.
[[nodiscard]] StatusOr<OpenedMixture> OpenMixtureFile(const std::string& path,
                                                      const StorageOptions& storage,
                                                      const DatasetOptions& defaults);

// Per source: samples, tokens, epochs (completed and as a fraction), and
// per phase begun: its start and the samples of each source, as lines
// starting with "source NAME:" and "phase K:" (global counts, all ranks).
void PrintMixtureSummary(const std::vector<std::string>& names, const LoaderStats& stats,
                         const std::vector<uint64_t>& samples_per_source);
// The same as a "mixture" member of the object `w` is writing.
void WriteMixtureJson(const std::vector<std::string>& names, const LoaderStats& stats,
                      const std::vector<uint64_t>& samples_per_source, JsonWriter* w);

}  // namespace tokpack::cli

#endif  // TOKPACK_TOOLS_MIXTURE_H_
