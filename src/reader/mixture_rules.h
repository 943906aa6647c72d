// The rules of a named phase list (tokpack/mixture.h), shared by the API's
// PhasesByName and the phases file's reader, which name a phase's parts
// differently: the API by phase index and start step, a file by field path.
// Plain values and functions: thread-safe.
#ifndef TOKPACK_SRC_READER_MIXTURE_RULES_H_
#define TOKPACK_SRC_READER_MIXTURE_RULES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tokpack/mixture.h"

namespace tokpack {

// What an error about a part of a phase list starts with; the rule's words
// follow ("... is -0.5; weights must be finite and >= 0").
class PhaseNaming {
 public:
  // The API's: "phases[1] (start_step 7): the weight of 'web'".
  static PhaseNaming Api() { return PhaseNaming(""); }
  // A phases file's: "mix.json: field 'phases[1].weights.web'".
  static PhaseNaming File(const std::string& source) { return PhaseNaming(source); }

  std::string List() const;                              // The whole list.
  std::string StartStep(size_t i) const;                 // Phase i's start step.
  std::string RampSteps(size_t i, int64_t start) const;  // Phase i's ramp_steps.
  std::string Weights(size_t i, int64_t start) const;    // Phase i's weights together.
  std::string Weight(size_t i, int64_t start, const std::string& name) const;
  std::string Source(size_t i, int64_t start, const std::string& name) const;

 private:
  explicit PhaseNaming(std::string file) : file_(std::move(file)) {}
  std::string Field(const std::string& path) const;

  std::string file_;  // Empty: the API.
};

// PhasesByName's checks and result, errors worded by `naming`.
[[nodiscard]] StatusOr<std::vector<MixturePhase>> ResolvePhases(
    const std::vector<std::string>& names, const std::vector<NamedPhase>& phases,
    const PhaseNaming& naming);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_MIXTURE_RULES_H_
