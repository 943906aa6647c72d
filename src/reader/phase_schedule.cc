#include "reader/phase_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>

#include "tokpack/json_writer.h"

namespace tokpack {

uint64_t MixtureState::Position() const {
  uint64_t p = 0;
  for (const BegunPhase& phase : phases) {
    for (uint64_t c : phase.counts) p += c;
  }
  return p;
}

std::vector<uint64_t> MixtureState::Totals(size_t sources) const {
  std::vector<uint64_t> totals(sources, 0);
  for (const BegunPhase& phase : phases) {
    for (size_t s = 0; s < phase.counts.size() && s < sources; ++s) totals[s] += phase.counts[s];
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
    out += "(" + std::to_string(phases[j].start_step) + ", " + FormatWeights(phases[j].weights);
    if (phases[j].ramp_steps > 0) out += ", ramp_steps=" + std::to_string(phases[j].ramp_steps);
    out += ")";
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
    if (phase.ramp_steps < 0 || (j == 0 && phase.ramp_steps != 0)) {
      return InvalidArgumentError(
          name + ": ramp_steps is " + std::to_string(phase.ramp_steps) +
          (j == 0 ? "; the first phase has no phase before it to ramp from (give 0)"
                  : "; it must be >= 0 (0: the weights change at once)"));
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

Status CheckMaxEpochs(const std::vector<double>& max_epochs,
                      const std::vector<std::string>& names) {
  if (max_epochs.empty()) return Status::Ok();
  if (max_epochs.size() != names.size()) {
    return InvalidArgumentError("max_epochs has " + std::to_string(max_epochs.size()) +
                                " values for " + std::to_string(names.size()) +
                                " datasets: give one per dataset (0: no cap)");
  }
  for (size_t s = 0; s < names.size(); ++s) {
    if (!(max_epochs[s] >= 0) || !std::isfinite(max_epochs[s])) {
      return InvalidArgumentError("the max_epochs of '" + names[s] + "' is " +
                                  ShortestDouble(max_epochs[s]) +
                                  "; a cap is a finite number of epochs > 0 (0: no cap)");
    }
  }
  return Status::Ok();
}

std::vector<uint64_t> CapsOf(const std::vector<double>& max_epochs,
                             const std::vector<uint64_t>& samples) {
  std::vector<uint64_t> caps(samples.size(), kNoCap);
  for (size_t s = 0; s < max_epochs.size() && s < samples.size(); ++s) {
    if (max_epochs[s] == 0) continue;
    const double draws = std::floor(max_epochs[s] * static_cast<double>(samples[s]));
    caps[s] = draws < 1 ? 1 : draws >= 0x1p63 ? kNoCap : static_cast<uint64_t>(draws);
  }
  return caps;
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
    stats->phases.push_back(
        {phases[j].start_step, start, phases[j].weights, state.phases[j].counts});
    for (uint64_t c : state.phases[j].counts) start += c;
  }
}

PhaseSchedule::PhaseSchedule(std::vector<MixturePhase> phases, uint64_t global_batch,
                             std::vector<uint64_t> caps)
    : phases_(std::move(phases)),
      global_batch_(global_batch),
      caps_(std::move(caps)),
      starts_(phases_.size(), 0) {
  caps_.resize(phases_[0].weights.size(), kNoCap);
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
    for (uint64_t c : state_.phases[j].counts) start += c;
  }
  const uint64_t G = global_batch_;
  const uint64_t k0 = static_cast<uint64_t>(state_.step);
  for (size_t j = begun; j < phases_.size(); ++j) {
    const uint64_t step = static_cast<uint64_t>(phases_[j].start_step);
    const uint64_t wait = step > k0 ? step - k0 : 0;
    starts_[j] = wait > (UINT64_MAX - position_) / G ? UINT64_MAX : position_ + wait * G;
  }
  run_position_ = run_offset_ = 0;
  due_.clear();
  waiting_.clear();
  exhausted_ = cap_reached_ = false;
  if (begun == 0) return;
  // The current run continues: its offset in the phase, and the sources its
  // weights left out (capped before it began).
  for (uint64_t c : state_.phases.back().counts) run_offset_ += c;
  for (size_t s = 0; s < sources; ++s) run_position_ += RunCount(s);
  run_offset_ -= run_position_;
  StartRun();
}

void PhaseSchedule::BeginPhase(uint64_t ramp) {
  state_.phases.push_back({std::vector<uint64_t>(totals_.size(), 0), ramp});
  state_.run.clear();
  run_position_ = run_offset_ = 0;
  StartRun();
}

void PhaseSchedule::BeginCapRun() {
  run_offset_ += run_position_;
  run_position_ = 0;
  state_.run.assign(totals_.size(), 0);
  StartRun();
}

namespace {

// `weights` normalized, then, if that leaves out a weighted source, without
// the capped ones and normalized again (zeros if nothing is left).
std::vector<double> RunWeights(std::vector<double> weights, const std::vector<bool>& capped) {
  double sum = 0;
  for (double w : weights) sum += w;
  for (double& w : weights) w /= sum;
  bool any = false;
  for (size_t s = 0; s < weights.size(); ++s) any = any || (capped[s] && weights[s] > 0);
  if (!any) return weights;  // Bit for bit the weights of a run without caps.
  sum = 0;
  for (size_t s = 0; s < weights.size(); ++s) {
    if (capped[s]) weights[s] = 0;
    sum += weights[s];
  }
  if (sum > 0) {
    for (double& w : weights) w /= sum;
  }
  return weights;
}

}  // namespace

ShareCurve RunCurve(const MixturePhase* previous, const MixturePhase& phase,
                    const std::vector<bool>& capped, uint64_t ramp, uint64_t offset) {
  std::vector<double> to = RunWeights(phase.weights, capped);
  if (previous == nullptr || ramp <= offset) return ShareCurve(std::move(to));
  std::vector<double> from = RunWeights(previous->weights, capped);
  double sum = 0;
  for (double w : from) sum += w;
  if (!(sum > 0)) from = to;  // Nothing left to ramp from.
  return ShareCurve(std::move(from), std::move(to), ramp, offset);
}

void PhaseSchedule::StartRun() {
  const size_t j = state_.phases.size() - 1;
  const size_t sources = phases_[0].weights.size();
  // Capped: the sources at their cap when the run began.
  capped_.assign(sources, false);
  cap_reached_ = false;
  for (size_t s = 0; s < sources; ++s) {
    capped_[s] = totals_[s] - RunCount(s) >= caps_[s];
    cap_reached_ = cap_reached_ || (!capped_[s] && totals_[s] >= caps_[s]);
  }
  curve_ = RunCurve(j > 0 ? &phases_[j - 1] : nullptr, phases_[j], capped_,
                    state_.phases.back().ramp, run_offset_);
  exhausted_ = true;
  for (size_t s = 0; s < sources && exhausted_; ++s) exhausted_ = !(curve_.weight(s) > 0);
  first_present_ = 0;
  while (first_present_ < sources && !curve_.Present(first_present_)) ++first_present_;
  due_.clear();
  waiting_.clear();
  for (size_t s = 0; s < sources; ++s) Queue(s);
}

void PhaseSchedule::Queue(size_t s) {
  const uint64_t count = RunCount(s);
  const uint64_t release = curve_.Release(s, count);
  if (release == ShareCurve::kNever) return;
  const auto greater = std::greater<>();
  if (release <= run_position_) {
    due_.push_back({curve_.Deadline(s, count), static_cast<uint32_t>(s), count});
    std::push_heap(due_.begin(), due_.end(), greater);
  } else {
    waiting_.push_back({release, static_cast<uint32_t>(s), count});
    std::push_heap(waiting_.begin(), waiting_.end(), greater);
  }
}

size_t PhaseSchedule::Next() {
  // Enter the phases that start here (the last draws; several start here
  // only when a state broke Reset's contract), or a new run of the phase
  // when a source reached its cap.
  size_t next = state_.phases.size();
  if (next < phases_.size() && starts_[next] <= position_) {
    while (next + 1 < phases_.size() && starts_[next + 1] <= position_) {
      state_.phases.push_back({std::vector<uint64_t>(totals_.size(), 0), 0});
      ++next;
    }
    // A ramp past the last position a loader reaches (Cursor::kMaxPosition)
    // never ends either way: it is kept at that bound, as cursors hold it.
    const uint64_t steps = static_cast<uint64_t>(phases_[next].ramp_steps);
    const uint64_t most = INT64_MAX;
    BeginPhase(steps > most / global_batch_ ? most : std::min(most, steps * global_batch_));
  } else if (cap_reached_) {
    BeginCapRun();
  }
  if (exhausted_) return kExhausted;
  const auto greater = std::greater<>();
  // The sources falling behind their share at this position join the due.
  while (!waiting_.empty() && waiting_.front().key <= run_position_) {
    const Entry<uint64_t> e = waiting_.front();
    std::pop_heap(waiting_.begin(), waiting_.end(), greater);
    waiting_.pop_back();
    if (e.count != RunCount(e.source)) continue;  // Stale.
    due_.push_back({curve_.Deadline(e.source, e.count), e.source, e.count});
    std::push_heap(due_.begin(), due_.end(), greater);
  }
  // Earliest deadline first among the sources behind their share. The
  // shares add up to the position, so one is behind; should rounding say
  // otherwise, the first present source.
  size_t best = first_present_;
  while (!due_.empty()) {
    const Entry<double> e = due_.front();
    std::pop_heap(due_.begin(), due_.end(), greater);
    due_.pop_back();
    if (e.count != RunCount(e.source)) continue;
    best = e.source;
    break;
  }
  ++state_.phases.back().counts[best];
  if (!state_.run.empty()) ++state_.run[best];
  ++totals_[best];
  ++position_;
  ++run_position_;
  if ((position_ - anchor_) % global_batch_ == 1 || global_batch_ == 1) ++state_.step;
  Queue(best);
  if (totals_[best] == caps_[best]) cap_reached_ = true;
  return best;
}

}  // namespace tokpack
