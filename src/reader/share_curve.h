// ShareCurve: how many draws each source is due over the positions of one
// run of a mixture phase (phase_schedule.h), and so when each draw is
// released and due. A phase's weights either hold from its start (flat), or
// ramp: the rate of source s at position x of the phase is
//   r_s(x) = from_s + (to_s - from_s) * min(x, L) / L,
// linear from the previous phase's weights to the phase's own over its first
// L positions. A run starts `offset` positions into its phase (a run after a
// source reached its cap continues its phase); its share of source s after q
// of its positions is the integral of r_s over [offset, offset + q). Both
// weight lists sum to 1, so the shares of every prefix sum to its length,
// which is what keeps each count within one draw of its share (Pfair, with
// unit jobs released when the share passes c and due when it reaches c + 1).
//
// A flat curve computes exactly what the schedule computed before ramps
// existed (w_s * q and (c + 1) / w_s, in doubles), so the orders of runs
// without ramps are unchanged. Immutable; thread-safe.
#ifndef TOKPACK_SRC_READER_SHARE_CURVE_H_
#define TOKPACK_SRC_READER_SHARE_CURVE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tokpack {

class ShareCurve {
 public:
  // Never: a release or deadline that is not reached.
  static constexpr uint64_t kNever = UINT64_MAX;

  // `to` (and `from`, when ramp > offset) normalized to sum 1, one weight
  // per source. ramp: the phase's ramp length L in positions (0: flat).
  ShareCurve(std::vector<double> from, std::vector<double> to, uint64_t ramp, uint64_t offset);
  // A flat curve of `weights` (normalized).
  explicit ShareCurve(std::vector<double> weights) : ShareCurve({}, std::move(weights), 0, 0) {}

  size_t size() const { return to_.size(); }
  // The weight of source s once the ramp is over.
  double weight(size_t s) const { return to_[s]; }
  // Whether source s has a positive rate somewhere in the run.
  bool Present(size_t s) const { return to_[s] > 0 || (!flat_ && a_[s] > 0); }
  // The share of source s after q positions of the run.
  double Share(size_t s, double q) const;
  // The first position p of the run at which a source with `count` draws
  // is behind its share (Share(s, p + 1) > count); kNever if none.
  uint64_t Release(size_t s, uint64_t count) const;
  // When its (count + 1)-th draw is due: the time its share reaches
  // count + 1 (infinity if never); the schedule draws earliest first.
  double Deadline(size_t s, uint64_t count) const;

 private:
  // The time the share of s first exceeds y (reach: first reaches y).
  double Passes(size_t s, double y, bool reach) const;
  // That time when it falls within the ramp: the root of the quadratic.
  double Within(size_t s, double y) const;

  bool flat_;
  std::vector<double> to_;
  // Ramped runs: the rate at the run's start, half the rate's slope, the
  // positions of ramp left and the share of s by its end.
  std::vector<double> a_, k_, end_share_;
  double left_ = 0;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_SHARE_CURVE_H_
