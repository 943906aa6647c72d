// Mixtures: named sources and the phases that weight them by name, as users
// write them (a phases file for the CLI, `phases=` in Python), turned into
// what Loader::Create takes (one weight per dataset, in dataset order). The
// rules of a phase list are checked here once, and errors name the phase
// and the source as the user wrote them. Plain values and free functions:
// thread-safe.
//
// The phases file (`tokpack sample --phases FILE`):
//   {"sources": {"web": "data/web", "code": "s3://bucket/code",
//                "web_valid": {"path": "data/web", "split": "949,50,1", "split_index": 1},
//                "math": {"path": "data/math", "max_epochs": 4}},
//    "phases": [{"start_step": 0, "weights": {"web": 0.9, "code": 0.1}},
//               {"start_step": 9000, "weights": {"web": 0.5, "code": 0.5, "math": 0.1},
//                "ramp_steps": 1000}]}
// A source is a path or URL, or an object with "path", an optional cap
// "max_epochs" (a number > 0: drawn at most that many epochs, its weight
// then shared out among the others) and dataset options (DatasetOptions'
// names: split, split_index, verify_on_open) that override the caller's for
// it. A source left out of a phase's weights has weight 0 there (absent). A
// phase's "ramp_steps" moves the weights linearly from the previous phase's
// over its first ramp_steps steps. Relative paths are relative to the
// working directory.
#ifndef TOKPACK_MIXTURE_H_
#define TOKPACK_MIXTURE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokpack/dataset.h"
#include "tokpack/loader.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack {

struct MixtureSource {
  std::string name;
  std::string location;  // Path or URL.
  // Dataset options given for this source alone, as option name -> text.
  std::vector<std::pair<std::string, std::string>> options;
  double max_epochs = 0;  // The cap (Loader::Create); 0: none.
};

// A phase as users write it: weights by source name, in their order; a
// source left out is absent (weight 0).
struct NamedPhase {
  int64_t start_step = 0;
  std::vector<std::pair<std::string, double>> weights;
  int64_t ramp_steps = 0;  // MixturePhase::ramp_steps.
};

struct Mixture {
  std::vector<MixtureSource> sources;  // Dataset index: the position here.
  std::vector<MixturePhase> phases;    // One weight per source.

  std::vector<std::string> Names() const;
  // The sources' caps as Loader::Create takes them: empty when none has one.
  std::vector<double> MaxEpochs() const;
  // Opens the sources' datasets with `defaults`, overridden by each
  // source's own options; an error is prefixed "<context>: source 'NAME'".
  [[nodiscard]] StatusOr<std::vector<std::shared_ptr<Dataset>>> Open(
      const StorageOptions& storage, const DatasetOptions& defaults,
      const std::string& context) const;
};

// `phases` (weights by name) as the Loader takes them, for sources `names`.
// InvalidArgument naming the phase by index and start step and the source
// by name ("phases[1] (start_step 7): the weight of 'web' is -0.5; ...")
// when the list is empty, a start step is negative, not 0 for the first
// phase or not after the one before, a name is no source's or given twice
// in a phase, a weight is not finite and >= 0, a phase has no positive
// weight, or ramp_steps is negative, or positive in the first phase.
[[nodiscard]] StatusOr<std::vector<MixturePhase>> PhasesByName(
    const std::vector<std::string>& names, const std::vector<NamedPhase>& phases);

// A phases file's text: the same rules, and errors naming `source` and the
// field ("mix.json: field 'phases[1].weights.math' ..."); unknown fields are
// errors. The text is untrusted: sizes are bounded (kMaxPhasesFileBytes,
// tokpack/files.h, and at most 4096 sources and phases).
[[nodiscard]] StatusOr<Mixture> ParseMixtureJson(std::string_view json, const std::string& source);
// The same for a file, which must pass ReadSmallFile's rule (a regular file
// of at most kMaxPhasesFileBytes; NotFound if missing).
[[nodiscard]] StatusOr<Mixture> ReadMixtureFile(const std::string& path);

}  // namespace tokpack

#endif  // TOKPACK_MIXTURE_H_
