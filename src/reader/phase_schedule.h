// PhaseSchedule: the deterministic order in which weighted sources are drawn
// when the weights change by phase (docs/reader.md, "Blending and phases").
//
// Phase j starts at a global position B_j and runs until the next phase's
// start. Its positions are drawn in runs: a run begins with the phase, and
// again whenever a source reaches its cap (at most so many draws over the
// whole run, e.g. k epochs of a small source), which takes it out of the
// weights from the next position on; a run whose phase has no uncapped
// source left is exhausted (Next() returns kExhausted). The state keeps the
// counts of each phase and of the current run only: the runs before it are
// over, and what a run is follows from the totals when it began. Position q of a run (0-based),
// among the sources behind their share (ShareCurve::Share(s, q + 1) > c_s,
// where c_s counts the draws of s in this run only), goes to the one whose
// next draw is due first (ShareCurve::Deadline, earliest deadline first);
// ties go to the lowest index and sources without weight are never drawn.
// The share is w_s * q for a phase's own weights normalized (with capped
// sources left out and the rest normalized again), or, while a phase ramps,
// the integral of weights moving linearly from the previous phase's to its
// own over its first ramp_steps steps (share_curve.h). That is a
// proportionate-fair (Pfair) schedule of one slot per position: for every
// prefix of every run, |c_s - share_s| < 1 (Baruah et al. 1996; tested),
// and a phase change or a cap takes effect at once, with no catch-up on
// earlier runs. Each source also keeps one total across phases: its k-th
// draw overall is the k-th sample of its SampleOrder.
//
// Cost: a draw is O(log sources) (two heaps: the sources behind their share
// by deadline, the others by the position they fall behind); a run begins
// in O(sources log sources).
//
// Steps: the batch starting at the state's position P has step number K
// (the state's step), and each later batch of G positions one more: steps
// continue across resumes whatever the global batch. Start positions:
// phases begun before a Reset keep theirs (the prefix sums of their
// counts); a phase not yet begun starts at P + max(0, start_step - K) * G,
// the first batch whose step number reaches start_step, and its ramp lasts
// ramp_steps * G positions of the loader that begins it (kept in the state,
// so that a resume with another G finishes the same ramp). Not thread-safe.
#ifndef TOKPACK_SRC_READER_PHASE_SCHEDULE_H_
#define TOKPACK_SRC_READER_PHASE_SCHEDULE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reader/share_curve.h"
#include "tokpack/loader.h"
#include "tokpack/status.h"

namespace tokpack {

// A phase begun: the draws of each source in it, and its ramp.
struct BegunPhase {
  std::vector<uint64_t> counts;
  // The phase's ramp length in positions, fixed when it began; 0: none.
  uint64_t ramp = 0;

  bool operator==(const BegunPhase& o) const { return counts == o.counts && ramp == o.ramp; }
};

// Where a schedule stands: the phases begun, in order (the last is drawing
// now). The position is the sum of their counts.
struct MixtureState {
  std::vector<BegunPhase> phases;
  // When a source reaching its cap began the last phase's current run: the
  // draws of each source in that run (also counted in the phase's). Empty
  // while the run is the whole phase.
  std::vector<uint64_t> run;
  // The step number of the next batch, the one starting at Position().
  int64_t step = 0;

  uint64_t Position() const;
  // Draws of each source over all phases.
  std::vector<uint64_t> Totals(size_t sources) const;
};

// No cap: a source drawn without limit.
inline constexpr uint64_t kNoCap = UINT64_MAX;

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
// finite weight >= 0 per dataset, not all 0, with a finite sum, and
// ramp_steps >= 0, 0 in the first phase (which has nothing to ramp from).
Status CheckPhases(const std::vector<MixturePhase>& phases, const std::vector<std::string>& names);

// InvalidArgument naming the dataset (by its entry in `names`) unless
// `max_epochs` is empty or holds one finite value >= 0 per dataset.
Status CheckMaxEpochs(const std::vector<double>& max_epochs, const std::vector<std::string>& names);
// Caps in draws for sources of `samples` positions per epoch: the most
// draws of max_epochs[s] epochs (rounded down, at least 1); kNoCap for 0
// or when `max_epochs` is empty.
std::vector<uint64_t> CapsOf(const std::vector<double>& max_epochs,
                             const std::vector<uint64_t>& samples);

// Adds to `stats` the mixture served up to `state` (of a loader with these
// phases, sources of `samples` positions per epoch, and `seq_len`): per
// source its draws, tokens and epochs, per phase begun its start, weights
// and draws.
void AddMixtureStats(const MixtureState& state, const std::vector<MixturePhase>& phases,
                     const std::vector<uint64_t>& samples, int64_t seq_len, LoaderStats* stats);

// The share curve of a run of `phase` (weights as given) that begins
// `offset` positions into it, the `capped` sources left out: flat, or, when
// `previous` (the phase before; nullptr for the first) and ramp > offset,
// ramping from previous's weights over `ramp` positions. Weights are
// normalized the one way the schedule and the cursor's checks share.
ShareCurve RunCurve(const MixturePhase* previous, const MixturePhase& phase,
                    const std::vector<bool>& capped, uint64_t ramp, uint64_t offset);

class PhaseSchedule {
 public:
  // What Next() returns when every source of the phase reached its cap.
  static constexpr size_t kExhausted = SIZE_MAX;

  // `phases` passes CheckPhases; `global_batch` >= 1 resolves the start
  // positions (and ramps) of phases not yet begun. `caps`: per source, at
  // most this many draws over the whole run (kNoCap: none; empty: no caps).
  // Starts at position 0.
  PhaseSchedule(std::vector<MixturePhase> phases, uint64_t global_batch,
                std::vector<uint64_t> caps = {});

  // Restarts at `state`, whose runs (with one count per source each) are a
  // prefix of this schedule's, the phases after them starting at steps >=
  // state.step (Cursor::CheckPhases).
  void Reset(const MixtureState& state);

  // The source of the next position, and advances the counts; kExhausted
  // (and no change) when every source of the phase has reached its cap.
  size_t Next();

  uint64_t position() const { return position_; }
  // Draws of each source over all phases.
  const std::vector<uint64_t>& totals() const { return totals_; }
  // Where the schedule stands; its step is the number of the next batch to
  // begin, K + ceil((position - P) / G) after a Reset to position P, step K.
  const MixtureState& state() const { return state_; }
  // The phase drawing now (the last begun): state().phases.size() - 1.
  size_t phase() const { return state_.phases.size() - 1; }
  // The current run's share curve, and the draws in the run so far.
  const ShareCurve& curve() const { return curve_; }
  uint64_t run_position() const { return run_position_; }

 private:
  // A heap entry: a source, its count when queued (an entry whose count is
  // no longer the source's is stale) and its key (deadline or release).
  template <typename Key>
  struct Entry {
    Key key;
    uint32_t source;
    uint64_t count;
    bool operator>(const Entry& o) const { return key != o.key ? key > o.key : source > o.source; }
  };

  // Begins the next phase (of `ramp` positions of ramp) and its run.
  void BeginPhase(uint64_t ramp);
  // Begins a run of the phase drawing now: a source reached its cap.
  void BeginCapRun();
  // The curve and heaps of the current run, from its counts and the totals.
  void StartRun();
  // The draws of source s in the current run.
  uint64_t RunCount(size_t s) const {
    return state_.run.empty() ? state_.phases.back().counts[s] : state_.run[s];
  }
  // Puts source s, with its run count, in the heap it belongs to.
  void Queue(size_t s);
  std::vector<MixturePhase> phases_;
  uint64_t global_batch_;
  std::vector<uint64_t> caps_;    // Per source; kNoCap: none.
  std::vector<uint64_t> starts_;  // Per phase: its start position.
  MixtureState state_;
  std::vector<uint64_t> totals_;
  uint64_t position_ = 0;
  uint64_t anchor_ = 0;        // The position of the last Reset.
  uint64_t run_position_ = 0;  // Draws in the current run.
  uint64_t run_offset_ = 0;    // Positions of its phase before the run.
  std::vector<bool> capped_;   // Sources left out of the current run.
  bool cap_reached_ = false;   // A source reached its cap during the run.
  bool exhausted_ = false;
  size_t first_present_ = 0;  // Drawn should rounding leave nobody behind.
  ShareCurve curve_{std::vector<double>{}};
  std::vector<Entry<double>> due_;        // Behind their share: min-heap by deadline.
  std::vector<Entry<uint64_t>> waiting_;  // Min-heap by release position.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_PHASE_SCHEDULE_H_
