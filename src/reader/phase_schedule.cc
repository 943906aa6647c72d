#include "reader/phase_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tokpack/json_writer.h"

namespace tokpack {

uint64_t MixtureState::Position() const {
  uint64_t p = 0;
  for (const auto& phase : phases) {
    for (uint64_t c : phase) p += c;
  }
  return p;
}

std::vector<uint64_t> MixtureState::Totals(size_t sources) const {
  std::vector<uint64_t> totals(sources, 0);
  for (const auto& phase : phases) {
    for (size_t s = 0; s < phase.size() && s < sources; ++s) totals[s] += phase[s];
  }
  return totals;
}

std::string FormatWeights(const std::vector<double>& weights) {
  std::string out = "[";
  for (size_t i = 0; i < weights.size(); ++i) {
    if (i) out += ", ";
    out += ShortestDouble(weights[i]);
  }
  return out + "]";
}

std::string PhaseName(size_t index, int64_t start_step) {
  return "phase " + std::to_string(index) + " (start_step " + std::to_string(start_step) + ")";
}

std::string FormatPhases(const std::vector<MixturePhase>& phases) {
  std::string out = "[";
  for (size_t j = 0; j < phases.size(); ++j) {
    if (j) out += ", ";
    out +=
        "(" + std::to_string(phases[j].start_step) + ", " + FormatWeights(phases[j].weights) + ")";
  }
  return out + "]";
}

Status CheckPhases(const std::vector<MixturePhase>& phases, const std::vector<std::string>& names) {
  if (phases.empty()) return InvalidArgumentError("a mixture needs at least one phase");
  for (size_t j = 0; j < phases.size(); ++j) {
    const MixturePhase& phase = phases[j];
    const std::string name = PhaseName(j, phase.start_step);
    if (j == 0 && phase.start_step != 0) {
      return InvalidArgumentError(name + ": the first phase must start at step 0");
    }
    if (j > 0 && phase.start_step <= phases[j - 1].start_step) {
      return InvalidArgumentError(name + " must start after " +
                                  PhaseName(j - 1, phases[j - 1].start_step) +
                                  ": start steps increase");
    }
    if (phase.weights.size() != names.size()) {
      return InvalidArgumentError(name + " has " + std::to_string(phase.weights.size()) +
                                  " weights for " + std::to_string(names.size()) +
                                  " datasets: give one weight per dataset (0: absent)");
    }
    double sum = 0;
    for (size_t s = 0; s < names.size(); ++s) {
      const double w = phase.weights[s];
      if (!(w >= 0) || !std::isfinite(w)) {
        return InvalidArgumentError(name + ": the weight of '" + names[s] + "' is " +
                                    ShortestDouble(w) + "; weights must be finite and >= 0");
      }
      sum += w;
    }
    if (!(sum > 0)) {
      return InvalidArgumentError(name + ": every weight is 0; a phase draws from some dataset");
    }
    if (!std::isfinite(sum)) {
      return InvalidArgumentError(name + ": the weights " + FormatWeights(phase.weights) +
                                  " add up past the double range");
    }
  }
  return Status::Ok();
}

void AddMixtureStats(const MixtureState& state, const std::vector<MixturePhase>& phases,
                     const std::vector<uint64_t>& samples, int64_t seq_len, LoaderStats* stats) {
  const std::vector<uint64_t> totals = state.Totals(samples.size());
  for (size_t s = 0; s < samples.size(); ++s) {
    stats->sources.push_back({totals[s], totals[s] * static_cast<uint64_t>(seq_len),
                              totals[s] / samples[s], totals[s] % samples[s]});
  }
  uint64_t start = 0;
  for (size_t j = 0; j < state.phases.size(); ++j) {
    stats->phases.push_back({phases[j].start_step, start, phases[j].weights, state.phases[j]});
    for (uint64_t c : state.phases[j]) start += c;
  }
}

PhaseSchedule::PhaseSchedule(std::vector<MixturePhase> phases, uint64_t global_batch)
    : phases_(std::move(phases)), global_batch_(global_batch), starts_(phases_.size(), 0) {
  for (MixturePhase& phase : phases_) {
    double sum = 0;
    for (double w : phase.weights) sum += w;
    for (double& w : phase.weights) w /= sum;
  }
  Reset(MixtureState{});
}

void PhaseSchedule::Reset(const MixtureState& state) {
  const size_t sources = phases_[0].weights.size();
  state_ = state;
  totals_ = state_.Totals(sources);
  position_ = anchor_ = state_.Position();
  const size_t begun = state_.phases.size();
  uint64_t start = 0;
  for (size_t j = 0; j < begun; ++j) {
    starts_[j] = start;
    for (uint64_t c : state_.phases[j]) start += c;
  }
  const uint64_t G = global_batch_;
  const uint64_t k0 = static_cast<uint64_t>(state_.step);
  for (size_t j = begun; j < phases_.size(); ++j) {
    const uint64_t step = static_cast<uint64_t>(phases_[j].start_step);
    const uint64_t wait = step > k0 ? step - k0 : 0;
    starts_[j] = wait > (UINT64_MAX - position_) / G ? UINT64_MAX : position_ + wait * G;
  }
  phase_position_ = 0;
  if (begun > 0) {
    for (uint64_t c : state_.phases.back()) phase_position_ += c;
  }
}

size_t PhaseSchedule::Next() {
  // Enter the phases that start here (the last draws; several start here
  // only when a state broke Reset's contract).
  size_t next = state_.phases.size();
  if (next < phases_.size() && starts_[next] <= position_) {
    while (next + 1 < phases_.size() && starts_[next + 1] <= position_) ++next;
    const size_t sources = phases_[0].weights.size();
    while (state_.phases.size() <= next) state_.phases.emplace_back(sources, 0);
    phase_position_ = 0;
  }
  const std::vector<double>& weights = phases_[state_.phases.size() - 1].weights;
  std::vector<uint64_t>& counts = state_.phases.back();
  // Earliest deadline first among the sources behind their share: the
  // (c+1)-th draw of s is due by (c+1) / w_s. The deficits add up to 1, so
  // one is behind; should rounding say otherwise, the first present source.
  size_t best = SIZE_MAX, present = SIZE_MAX;
  double deadline = 0;
  const double q = static_cast<double>(phase_position_ + 1);
  for (size_t s = 0; s < weights.size(); ++s) {
    if (weights[s] == 0) continue;  // Absent from this phase.
    if (present == SIZE_MAX) present = s;
    const double due = static_cast<double>(counts[s] + 1) / weights[s];
    if (weights[s] * q > static_cast<double>(counts[s]) && (best == SIZE_MAX || due < deadline)) {
      best = s;
      deadline = due;
    }
  }
  if (best == SIZE_MAX) best = present;
  ++counts[best];
  ++totals_[best];
  ++position_;
  ++phase_position_;
  if ((position_ - anchor_) % global_batch_ == 1 || global_batch_ == 1) ++state_.step;
  return best;
}

}  // namespace tokpack
