// The plan of a mixture: what a loader of these phases draws from each
// source, step by step from the start of the data, and why it changes (the
// phase starts, the ends of ramps, the caps reached). It runs the loader's
// own schedule (src/reader/phase_schedule.h) without reading any data, so
// its counts are the loader's (Loader::Stats after the same steps), for any
// world size of the same global batch. `tokpack sample --plot` and
// tokpack.mixture_plan draw it. Plain values and a free function:
// thread-safe.
//
// Invariant: every planned step draws exactly global_batch positions, so
// drawn[i] sums to (steps[i] + 1) * global_batch; a step the schedule cannot
// fill (every source of its phase capped) is not planned, and an event of
// kind kExhausted names it.
#ifndef TOKPACK_MIXTURE_PLAN_H_
#define TOKPACK_MIXTURE_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tokpack/loader.h"
#include "tokpack/status.h"

namespace tokpack {

struct MixtureEvent {
  enum class Kind {
    kPhaseStart,  // `phase` begins with the batch of `step`.
    kRampEnd,     // `phase` reaches its own weights at `step`.
    kCap,         // `source` reaches its cap with a draw of `step`.
    kExhausted,   // `step` cannot be filled: every source of `phase` is capped.
  };
  Kind kind = Kind::kPhaseStart;
  int64_t step = 0;
  size_t phase = 0;
  size_t source = 0;  // kCap only.
};

// "phase_start", "ramp_end", "cap", "exhausted": how JSON and Python name kinds.
const char* MixtureEventName(MixtureEvent::Kind kind);

// Per recorded step i (a row) and source s (a column), row-major.
struct MixturePlan {
  size_t sources = 0;
  uint64_t global_batch = 0;
  std::vector<int64_t> steps;  // Increasing: every stride-th step and the last.
  std::vector<size_t> phase;   // The phase drawing at the step's start.
  // The weights the schedule aims at over the step: the phase's normalized
  // weights, or during a ramp the ramp's mean rate over the step, with the
  // capped sources' weight shared out.
  std::vector<double> planned;
  std::vector<uint64_t> drawn;       // Cumulative draws, up to the end of the step.
  std::vector<MixtureEvent> events;  // In step order.
};

// The plan of `steps` steps of `global_batch` positions of a loader with
// these phases (one weight per source in `names`, which errors name) and
// caps (max_epochs, per source, of `samples` positions per epoch, as
// Loader::Create takes them; empty: none), recording every `stride`-th step
// and the last one planned. Cost: O(steps * global_batch * log sources)
// time, O(steps / stride * sources) memory. InvalidArgument for phases or
// caps the loader would refuse, or steps, global_batch or stride < 1.
[[nodiscard]] StatusOr<MixturePlan> PlanMixture(const std::vector<std::string>& names,
                                                const std::vector<MixturePhase>& phases,
                                                const std::vector<double>& max_epochs,
                                                const std::vector<uint64_t>& samples,
                                                uint64_t global_batch, int64_t steps,
                                                int64_t stride);

}  // namespace tokpack

#endif  // TOKPACK_MIXTURE_PLAN_H_
