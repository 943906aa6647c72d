// Mixtures for the CLI: `--phases FILE` (named sources and the phases that
// weight them, as JSON) and the per-source and per-phase counts that
// `sample --summary` prints and `profile --json` reports.
//
// The file:
//   {"sources": {"web": "data/web", "code": "s3://bucket/code",
//                "web_valid": {"path": "data/web", "split": "949,50,1", "split_index": 1}},
//    "phases": [{"start_step": 0, "weights": {"web": 0.9, "code": 0.1}},
//               {"start_step": 9000, "weights": {"web": 0.5, "code": 0.5}}]}
// A source is a path or URL, or an object with "path" and dataset options
// (DatasetOptions' names: split, split_index, verify_on_open) that override
// the command line's for it. A source left out of a phase's weights has
// weight 0 there (absent).
// Relative paths are relative to the working directory, as the positional
// dataset arguments are.
#ifndef TOKPACK_TOOLS_MIXTURE_H_
#define TOKPACK_TOOLS_MIXTURE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokpack/dataset.h"
#include "tokpack/files.h"
#include "tokpack/json_writer.h"
#include "tokpack/loader.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack::cli {

struct MixtureFile {
  std::vector<std::string> names;      // In the file's order: dataset index.
  std::vector<std::string> locations;  // Path or URL of each.
  // Each source's dataset options given in the file, as option name -> text.
  std::vector<std::vector<std::pair<std::string, std::string>>> options;
  std::vector<MixturePhase> phases;  // One weight per name.
};

// Reads and checks a phases file: InvalidArgument naming the file and the
// field ("mix.json: field 'phases[1].weights.math' ..."); the file itself
// passes ReadSmallFile's rule (tokpack/files.h: a regular file of at most
// kMaxPhasesFileBytes; NotFound if missing). The file is untrusted: sizes
// are bounded.
StatusOr<MixtureFile> ReadMixtureFile(const std::string& path);
// The same for text already read; `source` names it in errors.
StatusOr<MixtureFile> ParseMixtureJson(std::string_view json, const std::string& source);

// What a loader is made of: named datasets and their phases.
struct Mixture {
  std::vector<std::string> names;
  std::vector<std::shared_ptr<Dataset>> datasets;
  std::vector<MixturePhase> phases;
};
// Reads a phases file and opens its datasets with `defaults` (the command
// line's dataset options), overridden by each source's own in the file.
StatusOr<Mixture> OpenMixtureFile(const std::string& path, const StorageOptions& storage,
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
