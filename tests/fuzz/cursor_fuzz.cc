// libFuzzer target: loader states (checkpoint cursors) come from user files;
// parsing must fail cleanly, accepted states must round-trip, a loader with
// exactly the state's phases must accept them, and the phase schedule must
// continue from any accepted state.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "reader/cursor.h"
#include "reader/phase_schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto c = tokpack::Cursor::Parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!c.ok()) return 0;
  auto again = tokpack::Cursor::Parse(c->ToJson());
  if (!again.ok() || again->ToJson() != c->ToJson()) __builtin_trap();
  if (c->phases.empty()) return 0;
  // The loader's phases: those begun; its caps: the sources'.
  std::vector<tokpack::MixturePhase> phases;
  std::vector<uint64_t> caps;
  tokpack::MixtureState state;
  for (const auto& p : c->phases) {
    phases.push_back({p.start_step, p.weights, p.ramp_steps});
    state.phases.push_back({p.counts, p.ramp});
  }
  state.run = c->run;
  for (const auto& source : c->sources) caps.push_back(source.cap);
  if (state.Position() != c->position) __builtin_trap();
  tokpack::Cursor known = *c;
  if (known.step < 0) known.step = static_cast<int64_t>(known.position);  // Global batch 1.
  if (!known.CheckPhases(phases).ok()) __builtin_trap();
  state.step = known.step;
  tokpack::PhaseSchedule schedule(phases, 1 + size % 7, caps);
  schedule.Reset(state);
  for (int i = 0; i < 64; ++i) {
    const size_t s = schedule.Next();
    if (s == tokpack::PhaseSchedule::kExhausted) break;
    if (s >= phases[0].weights.size() || phases.back().weights[s] == 0) __builtin_trap();
    if (schedule.totals()[s] > caps[s]) __builtin_trap();
  }
  return 0;
}
