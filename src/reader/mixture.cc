#include "tokpack/mixture.h"

#include <cmath>

#include "reader/mixture_rules.h"
#include "tokpack/json_writer.h"

namespace tokpack {
namespace {

std::string Indexed(size_t i) { return "phases[" + std::to_string(i) + "]"; }

// A weight as Python writes a float (0.0, 0.5, 1e-05), for the API's users.
std::string PyFloat(double w) {
  std::string s = ShortestDouble(w);
  if (s.find_first_of(".ein") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string PhaseNaming::Field(const std::string& path) const {
  return file_ + ": field '" + path + "'";
}

std::string PhaseNaming::List() const { return file_.empty() ? "phases" : Field("phases"); }

std::string PhaseNaming::StartStep(size_t i) const {
  return file_.empty() ? Indexed(i) + ": start_step" : Field(Indexed(i) + ".start_step");
}

std::string PhaseNaming::RampSteps(size_t i, int64_t start) const {
  if (!file_.empty()) return Field(Indexed(i) + ".ramp_steps");
  return Indexed(i) + " (start_step " + std::to_string(start) + "): ramp_steps";
}

std::string PhaseNaming::Weights(size_t i, int64_t start) const {
  if (!file_.empty()) return Field(Indexed(i) + ".weights");
  return Indexed(i) + " (start_step " + std::to_string(start) + ")";
}

std::string PhaseNaming::Weight(size_t i, int64_t start, const std::string& name) const {
  if (!file_.empty()) return Field(Indexed(i) + ".weights." + name);
  return Weights(i, start) + ": the weight of '" + name + "'";
}

std::string PhaseNaming::Source(size_t i, int64_t start, const std::string& name) const {
  if (!file_.empty()) return Field(Indexed(i) + ".weights." + name);
  return Weights(i, start) + ": '" + name + "'";
}

StatusOr<std::vector<MixturePhase>> ResolvePhases(const std::vector<std::string>& names,
                                                  const std::vector<NamedPhase>& phases,
                                                  const PhaseNaming& naming) {
  if (phases.empty()) {
    return InvalidArgumentError(naming.List() + " is empty: a mixture needs at least one phase");
  }
  std::vector<MixturePhase> out;
  for (size_t i = 0; i < phases.size(); ++i) {
    const NamedPhase& phase = phases[i];
    const int64_t start = phase.start_step;
    const std::string step = std::to_string(start);
    if (start < 0) {
      return InvalidArgumentError(naming.StartStep(i) + " is " + step +
                                  "; start steps are integers >= 0");
    }
    if (i == 0 && start != 0) {
      return InvalidArgumentError(naming.StartStep(i) + " is " + step +
                                  "; the first phase starts at 0");
    }
    if (i > 0 && start <= out.back().start_step) {
      return InvalidArgumentError(naming.StartStep(i) + " is " + step + ", not after the " +
                                  std::to_string(out.back().start_step) + " before it");
    }
    if (phase.ramp_steps < 0 || (i == 0 && phase.ramp_steps != 0)) {
      return InvalidArgumentError(
          naming.RampSteps(i, start) + " is " + std::to_string(phase.ramp_steps) +
          (i == 0 ? "; the first phase has no phase before it to ramp from (give 0)"
                  : "; ramps last >= 0 steps (0: the weights change at once)"));
    }
    MixturePhase resolved{start, std::vector<double>(names.size(), 0.0), phase.ramp_steps};
    std::vector<bool> given(names.size(), false);
    bool any = false;
    std::string zeros;  // The weights as given, for the error when all are 0.
    for (const auto& [name, w] : phase.weights) {
      size_t s = 0;
      while (s < names.size() && names[s] != name) ++s;
      if (s == names.size()) {
        std::string known;
        for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
        return InvalidArgumentError(naming.Source(i, start, name) +
                                    " names no source (the sources are " + known + ")");
      }
      if (given[s]) {
        return InvalidArgumentError(naming.Source(i, start, name) + " is given twice");
      }
      if (!std::isfinite(w) || w < 0) {
        return InvalidArgumentError(naming.Weight(i, start, name) + " is " + ShortestDouble(w) +
                                    "; weights must be finite and >= 0");
      }
      given[s] = true;
      resolved.weights[s] = w;
      any = any || w > 0;
      zeros += (zeros.empty() ? "'" : ", '") + name + "': " + PyFloat(w);
    }
    if (!any) {
      return InvalidArgumentError(naming.Weights(i, start) +
                                  " has no positive weight: every weight is 0 in {" + zeros +
                                  "}; a phase needs at least one source");
    }
    out.push_back(std::move(resolved));
  }
  return out;
}

StatusOr<std::vector<MixturePhase>> PhasesByName(const std::vector<std::string>& names,
                                                 const std::vector<NamedPhase>& phases) {
  return ResolvePhases(names, phases, PhaseNaming::Api());
}

std::vector<double> Mixture::MaxEpochs() const {
  std::vector<double> caps;
  for (const MixtureSource& s : sources) caps.push_back(s.max_epochs);
  for (double c : caps) {
    if (c > 0) return caps;
  }
  return {};
}

std::vector<std::string> Mixture::Names() const {
  std::vector<std::string> names;
  for (const MixtureSource& s : sources) names.push_back(s.name);
  return names;
}

StatusOr<std::vector<std::shared_ptr<Dataset>>> Mixture::Open(const StorageOptions& storage,
                                                              const DatasetOptions& defaults,
                                                              const std::string& context) const {
  std::vector<std::shared_ptr<Dataset>> datasets;
  for (const MixtureSource& source : sources) {
    const std::string where = context + ": source '" + source.name + "'";
    DatasetOptions options = defaults;
    for (const auto& [key, text] : source.options) {
      TOKPACK_RETURN_IF_ERROR(options.SetText(key, text).WithContext(where));
    }
    StatusOr<std::shared_ptr<Dataset>> ds = Dataset::Open(source.location, storage, options);
    if (!ds.ok()) return ds.status().WithContext(where);
    datasets.push_back(*std::move(ds));
  }
  return datasets;
}

}  // namespace tokpack
