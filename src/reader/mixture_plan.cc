#include "tokpack/mixture_plan.h"

#include <cstdint>

#include "reader/phase_schedule.h"
#include "reader/share_curve.h"

namespace tokpack {

const char* MixtureEventName(MixtureEvent::Kind kind) {
  switch (kind) {
    case MixtureEvent::Kind::kPhaseStart:
      return "phase_start";
    case MixtureEvent::Kind::kRampEnd:
      return "ramp_end";
    case MixtureEvent::Kind::kCap:
      return "cap";
    case MixtureEvent::Kind::kExhausted:
      return "exhausted";
  }
  return "";
}

namespace {

// Appends to `out` the weights the schedule aims at over the G positions
// from its current run's last draw on: the share its curve gives them, per
// position, so ramps and caps read as the schedule draws them.
void AppendPlanned(const PhaseSchedule& schedule, uint64_t global_batch, std::vector<double>* out) {
  const ShareCurve& curve = schedule.curve();
  // The step's first draw is the last one made.
  const double from = static_cast<double>(schedule.run_position() - 1);
  const double to = from + static_cast<double>(global_batch);
  for (size_t s = 0; s < curve.size(); ++s) {
    out->push_back((curve.Share(s, to) - curve.Share(s, from)) / static_cast<double>(global_batch));
  }
}

}  // namespace

StatusOr<MixturePlan> PlanMixture(const std::vector<std::string>& names,
                                  const std::vector<MixturePhase>& phases,
                                  const std::vector<double>& max_epochs,
                                  const std::vector<uint64_t>& samples, uint64_t global_batch,
                                  int64_t steps, int64_t stride) {
  TOKPACK_RETURN_IF_ERROR(CheckPhases(phases, names));
  TOKPACK_RETURN_IF_ERROR(CheckMaxEpochs(max_epochs, names));
  if (!max_epochs.empty() && samples.size() != names.size()) {
    return InvalidArgumentError("caps need the samples per epoch of each of the " +
                                std::to_string(names.size()) + " sources, not " +
                                std::to_string(samples.size()) + " counts");
  }
  if (global_batch < 1 || steps < 1 || stride < 1) {
    return InvalidArgumentError("a mixture plan needs a global batch, steps and a stride >= 1");
  }
  if (static_cast<uint64_t>(steps) > static_cast<uint64_t>(INT64_MAX) / global_batch) {
    return InvalidArgumentError(std::to_string(steps) + " steps of " +
                                std::to_string(global_batch) +
                                " positions pass the loader's last position (2^63 - 1)");
  }
  const size_t sources = names.size();
  const std::vector<uint64_t> caps =
      max_epochs.empty() ? std::vector<uint64_t>(sources, kNoCap) : CapsOf(max_epochs, samples);
  MixturePlan plan;
  plan.sources = sources;
  plan.global_batch = global_batch;
  PhaseSchedule schedule(phases, global_batch, caps);
  using Kind = MixtureEvent::Kind;
  size_t phase = SIZE_MAX;  // The phase of the last run begun.
  int64_t ramp_end = -1;    // The step its ramp ends at, if it ramps.
  // The step under way, kept until the next one is filled: it is recorded
  // if it falls on the stride or turns out to be the last one served.
  int64_t last = -1;
  size_t last_phase = 0;
  std::vector<double> planned, last_planned;
  std::vector<uint64_t> last_drawn;
  const auto record = [&] {
    plan.steps.push_back(last);
    plan.phase.push_back(last_phase);
    plan.planned.insert(plan.planned.end(), last_planned.begin(), last_planned.end());
    plan.drawn.insert(plan.drawn.end(), last_drawn.begin(), last_drawn.end());
  };
  for (int64_t step = 0; step < steps; ++step) {
    for (uint64_t i = 0; i < global_batch; ++i) {
      const size_t s = schedule.Next();
      if (s == PhaseSchedule::kExhausted) {
        plan.events.push_back({Kind::kExhausted, step, schedule.phase(), 0});
        break;
      }
      if (i == 0) {
        if (schedule.phase() != phase) {
          phase = schedule.phase();
          plan.events.push_back({Kind::kPhaseStart, step, phase, 0});
          const int64_t ramp = phases[phase].ramp_steps;
          ramp_end = ramp > 0 ? step + ramp : -1;
        }
        if (step == ramp_end) plan.events.push_back({Kind::kRampEnd, step, phase, 0});
        planned.clear();
        AppendPlanned(schedule, global_batch, &planned);
      }
      if (schedule.totals()[s] == caps[s]) plan.events.push_back({Kind::kCap, step, phase, s});
    }
    if (!plan.events.empty() && plan.events.back().kind == Kind::kExhausted) break;
    last = step;
    last_phase = phase;
    last_planned.swap(planned);
    last_drawn = schedule.totals();
    if (step % stride == 0) record();
  }
  if (last >= 0 && (plan.steps.empty() || plan.steps.back() != last)) record();
  return plan;
}

}  // namespace tokpack
