// PhaseSchedule: the deterministic order in which weighted sources are drawn
// when the weights change by phase (docs/reader.md, "Blending and phases").
//
// Phase j starts at a global position B_j and runs until the next phase's
// start. Position q of a phase (0-based from B_j) goes to the source with
// the largest deficit w_s*(q+1) - c_s, where the weights are the phase's,
// normalized, and c_s counts the draws of s in this phase only; ties go to
// the lowest index and weight-0 sources are never drawn. So every prefix of
// every phase stays within one draw of the phase's weights (tested), and a
// phase change takes effect at once, with no catch-up on earlier phases.
// Each source also keeps one total across phases: its k-th draw overall is
// the k-th sample of its SampleOrder.
//
// Start positions: phases begun before a Reset keep theirs (the prefix sums
// of their counts). A phase not yet begun at a reset to position P with
// global batch G starts at P + max(0, start_step - ceil(P / G)) * G, the
// first batch whose step number reaches start_step; phases sharing a start
// position all count as begun, the last one draws. Not thread-safe.
#ifndef TOKPACK_SRC_READER_PHASE_SCHEDULE_H_
#define TOKPACK_SRC_READER_PHASE_SCHEDULE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tokpack/loader.h"
#include "tokpack/status.h"

namespace tokpack {

// Where a schedule stands: the draws of each source in each phase begun, in
// phase order (the last is the phase drawing now). The position is their sum.
struct MixtureState {
  std::vector<std::vector<uint64_t>> phases;  // [phase][source]

  uint64_t Position() const;
  // Draws of each source over all phases.
  std::vector<uint64_t> Totals(size_t sources) const;
};

// "[0.9, 0.1]": each weight as ShortestDouble (tokpack/json_writer.h)
// prints it, the one way weights are printed, in cursors and in messages.
std::string FormatWeights(const std::vector<double>& weights);
// "phase 1 (start_step 9000)": how messages name a phase.
std::string PhaseName(size_t index, int64_t start_step);
// "[(0, [0.9, 0.1]), (9000, [0.5, 0.5])]": a phase list as a message shows it.
std::string FormatPhases(const std::vector<MixturePhase>& phases);

// InvalidArgument naming the phase (and the dataset, by its entry in
// `names`) unless `phases` is a valid mixture of names.size() datasets: at
// least one phase, the first at step 0, start steps strictly increasing, one
// finite weight >= 0 per dataset, not all 0, with a finite sum.
Status CheckPhases(const std::vector<MixturePhase>& phases, const std::vector<std::string>& names);

// Adds to `stats` the mixture served up to `state` (of a loader with these
// phases, sources of `samples` positions per epoch, and `seq_len`): per
// source its draws, tokens and epochs, per phase begun its start, weights
// and draws.
void AddMixtureStats(const MixtureState& state, const std::vector<MixturePhase>& phases,
                     const std::vector<uint64_t>& samples, int64_t seq_len, LoaderStats* stats);

class PhaseSchedule {
 public:
  // `phases` passes CheckPhases; `global_batch` >= 1 resolves the start
  // positions of phases not yet begun. Starts at position 0.
  PhaseSchedule(std::vector<MixturePhase> phases, uint64_t global_batch);

  // Restarts at `state`, whose phases (with one count per source each) are a
  // prefix of this schedule's. Phases with start_step < ceil(P / G) have
  // begun there too (with no draws if the state has not got them).
  void Reset(const MixtureState& state);

  // The source of the next position; advances the counts.
  size_t Next();

  uint64_t position() const { return position_; }
  // Draws of each source over all phases.
  const std::vector<uint64_t>& totals() const { return totals_; }
  const MixtureState& state() const { return state_; }

 private:
  // Marks phases up to `phase` begun (with no draws yet).
  void Begin(size_t phase);

  std::vector<MixturePhase> phases_;  // Weights normalized.
  uint64_t global_batch_;
  std::vector<uint64_t> starts_;  // Per phase: its start position.
  MixtureState state_;
  std::vector<uint64_t> totals_;
  uint64_t position_ = 0;
  uint64_t phase_position_ = 0;  // Draws in the current phase.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_PHASE_SCHEDULE_H_
