// Cursor: the loader's resumable position as a small versioned JSON document
// (docs/reader.md, "The cursor"): the global position and the step number
// of the loader that saved it, per source its fingerprint and the samples
// consumed, per phase begun its start step, weights and the draws of each
// source in it, plus the settings that define the order (seed, sequence
// length, shuffle mode and its block or window setting, packing and its
// max_docs_per_sequence, allow_mixed_tokenizers). Independent of
// rank, world size and batch size. Version 1 cursors (one weighted blend)
// parse as one phase at step 0 with an unknown step. Plain value; not
// synchronized.
#ifndef TOKPACK_SRC_READER_CURSOR_H_
#define TOKPACK_SRC_READER_CURSOR_H_

#include <climits>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reader/phase_schedule.h"
#include "tokpack/loader.h"
#include "tokpack/status.h"

namespace tokpack {

struct Cursor {
  static constexpr int kVersion = 2;
  // A packed cursor (packing != "concat") is version 3, so a tokpack from
  // before packing, which ignores unknown fields, refuses it rather than
  // reading counts of bins as counts of windows.
  static constexpr int kPackedVersion = 3;
  // A cursor with a ramp or a cap (of either packing) is version 4, so a
  // tokpack from before them refuses it rather than resume another order.
  static constexpr int kScheduleVersion = 4;
  // At most this many sources and phases: a cursor stays small, and an
  // untrusted one cannot ask for much memory or time.
  static constexpr size_t kMaxEntries = 4096;
  // The largest global position a loader reaches: steps and positions are
  // signed 64-bit, and a position this far leaves 2^63 positions of room.
  static constexpr uint64_t kMaxPosition = INT64_MAX;
  uint64_t position = 0;  // Global positions consumed.
  // The saving loader's Step(): phases starting before it had begun. -1:
  // unknown (a version 1 cursor); the loading loader takes its own.
  int64_t step = -1;
  uint64_t seed = 0;
  int64_t seq_len = 0;
  std::string shuffle;         // "none", "full", "block" or "window" (as resolved).
  uint64_t block_size = 0;     // "block" only, else 0.
  uint64_t block_window = 0;   // "block" only, else 0.
  uint64_t window_chunks = 0;  // "window" only, else 0; optional in Parse.
  // What a sample is: "concat" or "best_fit" (then max_docs_per_sequence,
  // else 0). Written only for best_fit; absent (older cursors): concat.
  std::string packing = "concat";
  uint64_t max_docs_per_sequence = 0;
  // The loader's allow_mixed_tokenizers. Written only when true, so the
  // cursors of loaders without it stay as they were; absent: false.
  bool allow_mixed_tokenizers = false;
  struct Source {
    uint64_t fingerprint = 0;
    uint64_t consumed = 0;  // Over all phases.
    uint64_t cap = kNoCap;  // The most draws of it (phase_schedule.h).
  };
  std::vector<Source> sources;
  struct Phase {
    int64_t start_step = 0;
    std::vector<double> weights;   // One per source.
    std::vector<uint64_t> counts;  // Draws of each source in this phase.
    int64_t ramp_steps = 0;
    uint64_t ramp = 0;  // Its ramp in positions; 0 without ramp_steps.
  };
  // The phases begun, in order; the last is the one drawing. Their start
  // positions are the prefix sums of their counts.
  std::vector<Phase> phases;
  // When a source reaching its cap began the last phase's current run, the
  // draws of each source in that run (MixtureState::run); else empty.
  std::vector<uint64_t> run;

  // The cursor of a loader with (resolved) options `o`, these sources,
  // phases and caps (one per source), at `state` (whose step it takes).
  static Cursor Of(const LoaderOptions& o, const std::vector<Loader::Source>& sources,
                   const std::vector<MixturePhase>& phases, const std::vector<uint64_t>& caps,
                   const MixtureState& state);

  std::string ToJson() const;
  // Parses and validates an untrusted state: InvalidArgument naming the
  // field when one is missing or mistyped, there are more than kMaxEntries
  // sources or phases, the phases' start steps do not increase from 0, a
  // weight is negative or not finite, a phase's weights are all 0, a count
  // does not add up (over sources to the position, over phases to the
  // source's consumed) without overflow, the position is past kMaxPosition,
  // or a phase's count is not one the phase schedule reaches (within one
  // draw of its weight's share of the phase, 0 at weight 0; see
  // phase_schedule.h).
  static StatusOr<Cursor> Parse(std::string_view json);
  // InvalidArgument naming the first setting in which `saved` differs from
  // this (the loader's own settings), and for the order's settings the
  // loader options that resume it; positions and counts are not compared.
  // The loader may have more sources than `saved` (appended), not fewer.
  Status CheckCompatible(const Cursor& saved) const;
  // InvalidArgument unless `phases` (a loader's, valid for at least as many
  // sources as this cursor has) begins with this cursor's phases, with the
  // same start steps and weights (sources this cursor lacks at weight 0),
  // and has no other phase before `step`: a resume cannot change what the
  // saved run began. The message names the phase and what resumes it.
  Status CheckPhases(const std::vector<MixturePhase>& phases) const;
  // For a loader whose cursor of now is this one (Of()), with `phases` and
  // global batch `global_batch`: parses `json` and checks it (Parse,
  // CheckCompatible, CheckPhases; a version 1 cursor takes this loader's
  // step at its position), then returns the schedule state to continue
  // from, with no draws for the sources the saved run did not have.
  StatusOr<MixtureState> Resume(std::string_view json, const std::vector<MixturePhase>& phases,
                                uint64_t global_batch) const;

 private:
  // InvalidArgument "invalid loader state: <what>".
  static Status Bad(const std::string& what);
  // The loader options that make this order: shuffle="block",
  // block_size=64, block_window=16.
  std::string OrderOptions() const;
  // The loader options that make these samples: packing="best_fit",
  // max_docs_per_sequence=4.
  std::string PackingOptions() const;
  // Parse's checks of the numbers: the counts, position and weights.
  Status CheckReachable() const;
  // CheckReachable's checks of phase `j`, with `totals` the draws before it.
  Status CheckPhase(size_t j, const std::vector<uint64_t>& totals) const;
  // CheckReachable's checks of `run`, with `totals` the draws in all.
  Status CheckCapRun(const std::vector<uint64_t>& totals) const;
  // That the counts of a run of phase j drawn from `offset` positions into
  // it, after `totals` draws, are within a draw of its shares.
  Status CheckRun(size_t j, const std::vector<uint64_t>& counts, uint64_t offset,
                  const std::vector<uint64_t>& totals) const;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_CURSOR_H_
