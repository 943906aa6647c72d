// PhaseSchedule: the deterministic order in which weighted sources are drawn
// when the weights change by phase (docs/reader.md, "Blending and phases").
//
// Phase j starts at a global position B_j and runs until the next phase's
// start. Position q of a phase (0-based from B_j) goes, among the sources
// behind their share (w_s*(q+1) > c_s, where the weights are the phase's,
// normalized, and c_s counts the draws of s in this phase only), to the one
// whose next draw is due first ((c_s+1) / w_s, earliest deadline first);
// ties go to the lowest index and weight-0 sources are never drawn. That is
// a proportionate-fair (Pfair) schedule of one slot per position: for every
// prefix of every phase, |c_s - w_s*q| < 1 (Baruah et al. 1996; tested), and
// a phase change takes effect at once, with no catch-up on earlier phases.
// Each source also keeps one total across phases: its k-th draw overall is
// the k-th sample of its SampleOrder.
//
// Steps: the batch starting at the state's position P has step number K
// (the state's step), and each later batch of G positions one more: steps
// continue across resumes whatever the global batch. Start positions:
// phases begun before a Reset keep theirs (the prefix sums of their
// counts); a phase not yet begun starts at P + max(0, start_step - K) * G,
// the first batch whose step number reaches start_step. Not thread-safe.
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
  // The step number of the next batch, the one starting at Position().
  int64_t step = 0;

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
  // prefix of this schedule's, the phases after them starting at steps >=
  // state.step (Cursor::CheckPhases).
  void Reset(const MixtureState& state);

  // The source of the next position; advances the counts.
  size_t Next();

  uint64_t position() const { return position_; }
  // Draws of each source over all phases.
  const std::vector<uint64_t>& totals() const { return totals_; }
  // Where the schedule stands; its step is the number of the next batch to
  // begin, K + ceil((position - P) / G) after a Reset to position P, step K.
  const MixtureState& state() const { return state_; }

 private:
  std::vector<MixturePhase> phases_;  // Weights normalized.
  uint64_t global_batch_;
  std::vector<uint64_t> starts_;  // Per phase: its start position.
  MixtureState state_;
  std::vector<uint64_t> totals_;
  uint64_t position_ = 0;
  uint64_t phase_position_ = 0;  // Draws in the current phase.
  uint64_t anchor_ = 0;          // The position of the last Reset.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_PHASE_SCHEDULE_H_
