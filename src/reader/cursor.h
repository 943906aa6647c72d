// Cursor: the loader's resumable position as a small versioned JSON document:
// the next global position, and per source its fingerprint, weight and number
// of samples consumed, plus the settings that define the order (seed,
// sequence length, shuffle mode and its block or window setting).
// Independent of rank, world size and batch size. Plain value; not
// synchronized.
#ifndef TOKPACK_SRC_READER_CURSOR_H_
#define TOKPACK_SRC_READER_CURSOR_H_

#include <climits>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokpack/status.h"

namespace tokpack {

struct Cursor {
  static constexpr int kVersion = 1;
  // The largest global position a loader reaches: steps and positions are
  // signed 64-bit, and a position this far leaves 2^63 positions of room.
  static constexpr uint64_t kMaxPosition = INT64_MAX;
  uint64_t position = 0;  // Global positions consumed.
  uint64_t seed = 0;
  int64_t seq_len = 0;
  std::string shuffle;         // "none", "full", "block" or "window" (as resolved).
  uint64_t block_size = 0;     // "block" only, else 0.
  uint64_t block_window = 0;   // "block" only, else 0.
  uint64_t window_chunks = 0;  // "window" only, else 0; optional in Parse.
  struct Source {
    uint64_t fingerprint = 0;
    double weight = 0;
    uint64_t consumed = 0;
  };
  std::vector<Source> sources;

  std::string ToJson() const;
  // Parses and validates an untrusted state: InvalidArgument naming the
  // field when one is missing or mistyped, a weight is not positive and
  // finite, the counts do not add up to the position without overflow, the
  // position is past kMaxPosition, or a count is not one the blend schedule
  // reaches at that position with these weights (within one draw of its
  // share, see blend_schedule.h).
  static StatusOr<Cursor> Parse(std::string_view json);
  // InvalidArgument naming the first setting in which `saved` differs from
  // this (the loader's own settings), and for the order's settings the
  // loader options that resume it; positions and counts are not compared.
  Status CheckCompatible(const Cursor& saved) const;

 private:
  // The loader options that make this order: shuffle="block",
  // block_size=64, block_window=16.
  std::string OrderOptions() const;
  // Parse's checks of the numbers: the counts, position and weights.
  Status CheckReachable() const;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_CURSOR_H_
