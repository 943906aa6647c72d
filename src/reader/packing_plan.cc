#include "reader/packing_plan.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <tuple>
#include <unordered_map>

#include "tokpack/options.h"

namespace tokpack {
namespace {

constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
// A piece's place in best fit decreasing's order: longest first, then by
// document and piece index (L - length, document, piece).
using PieceOrder = std::tuple<uint64_t, uint32_t, uint32_t>;
// How many documents or pieces PackShard handles between looks at its
// cancel flag (a power of two: the test is a mask).
constexpr size_t kCancelStride = size_t{1} << 16;

// A set of integers in [0, n) with "smallest member >= x" in O(log_64 n):
// level 0 holds one bit per integer, each higher level one bit per nonzero
// word of the level below. n / 8 bytes, however many members.
class BitTree {
 public:
  explicit BitTree(uint64_t n) {
    do {
      n = (n + 63) / 64;
      levels_.emplace_back(n, 0);
    } while (n > 1);
  }
  void Insert(uint64_t i) {
    for (std::vector<uint64_t>& level : levels_) {
      const bool had = level[i >> 6] != 0;
      level[i >> 6] |= uint64_t{1} << (i & 63);
      if (had) return;
      i >>= 6;
    }
  }
  void Erase(uint64_t i) {
    for (std::vector<uint64_t>& level : levels_) {
      level[i >> 6] &= ~(uint64_t{1} << (i & 63));
      if (level[i >> 6] != 0) return;
      i >>= 6;
    }
  }
  uint64_t Next(uint64_t x) const {
    size_t l = 0;
    while (true) {
      if (l == levels_.size()) return kNone;
      const uint64_t w = x >> 6;
      if (w < levels_[l].size()) {
        const uint64_t bits = levels_[l][w] & (~uint64_t{0} << (x & 63));
        if (bits != 0) {
          x = (w << 6) | __builtin_ctzll(bits);
          break;
        }
      }
      x = w + 1;
      ++l;
    }
    while (l > 0) {
      --l;
      x = (x << 6) | __builtin_ctzll(levels_[l][x]);
    }
    return x;
  }

 private:
  std::vector<std::vector<uint64_t>> levels_;
};

// Open bins by remaining capacity: the bit tree finds the smallest capacity
// that holds a piece, a min-heap per capacity its earliest bin.
class OpenBins {
 public:
  explicit OpenBins(uint64_t seq_len) : tree_(seq_len + 1) {}
  // The earliest bin of the smallest remaining capacity >= need, removed,
  // with its capacity; kNone when none holds `need`.
  uint64_t Take(uint64_t need, uint64_t* capacity) {
    const uint64_t c = tree_.Next(need);
    if (c == kNone) return kNone;
    std::vector<uint64_t>& heap = by_capacity_[c];
    std::pop_heap(heap.begin(), heap.end(), std::greater<uint64_t>());
    const uint64_t bin = heap.back();
    heap.pop_back();
    if (heap.empty()) {
      by_capacity_.erase(c);
      tree_.Erase(c);
    }
    *capacity = c;
    return bin;
  }
  void Put(uint64_t bin, uint64_t capacity) {
    std::vector<uint64_t>& heap = by_capacity_[capacity];
    if (heap.empty()) tree_.Insert(capacity);
    heap.push_back(bin);
    std::push_heap(heap.begin(), heap.end(), std::greater<uint64_t>());
  }

 private:
  BitTree tree_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> by_capacity_;
};

// Stable sort of `keys`' indices by key, ascending: LSD radix, 16 bits a pass.
std::vector<uint32_t> StableOrder(const std::vector<uint32_t>& keys, uint32_t max_key) {
  std::vector<uint32_t> order(keys.size()), next(keys.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  for (int shift = 0; shift < 32 && (max_key >> shift) != 0; shift += 16) {
    std::vector<uint64_t> start((1 << 16) + 1, 0);
    for (uint32_t k : keys) ++start[((k >> shift) & 0xffff) + 1];
    for (size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
    for (uint32_t i : order) next[start[(keys[i] >> shift) & 0xffff]++] = i;
    order.swap(next);
  }
  return order;
}

}  // namespace

Status PackingSettings::Validate() const {
  if (seq_len < 1 || seq_len > INT32_MAX) {
    return InvalidArgumentError("seq_len must be " +
                                DescribeIntRange(int64_t{1}, int64_t{INT32_MAX}) + ", not " +
                                std::to_string(seq_len));
  }
  if (max_docs_per_sequence < 0) {
    return InvalidArgumentError("max_docs_per_sequence must be " +
                                DescribeIntRange(int64_t{0}, INT64_MAX) + ", not " +
                                std::to_string(max_docs_per_sequence));
  }
  return Status::Ok();
}

void PackingCounts::Add(const PackingCounts& o) {
  documents += o.documents;
  empty_documents += o.empty_documents;
  truncated_documents += o.truncated_documents;
  pieces += o.pieces;
  tokens += o.tokens;
  bins += o.bins;
  max_pieces_per_bin = std::max(max_pieces_per_bin, o.max_pieces_per_bin);
}

uint64_t PackingCounts::PaddingTokens(int64_t seq_len) const {
  return bins * static_cast<uint64_t>(seq_len) - tokens;
}

double PackingCounts::PaddingFraction(int64_t seq_len) const {
  if (bins == 0) return 0;
  return static_cast<double>(PaddingTokens(seq_len)) /
         (static_cast<double>(bins) * static_cast<double>(seq_len));
}

double PackingCounts::MeanPiecesPerBin() const {
  return bins == 0 ? 0 : static_cast<double>(pieces) / static_cast<double>(bins);
}

uint64_t PieceLength(uint64_t length, uint64_t piece, uint64_t seq_len) {
  if (piece >= length / seq_len + (length % seq_len != 0)) return 0;
  return std::min(seq_len, length - piece * seq_len);
}

StatusOr<ShardPlan> PackShard(const std::vector<uint64_t>& lengths, const PackingSettings& settings,
                              const std::string& shard, const CancelFlag& cancel) {
  TOKPACK_RETURN_IF_ERROR(settings.Validate());
  if (lengths.size() > UINT32_MAX) {
    return FailedPreconditionError(shard + ": " + std::to_string(lengths.size()) +
                                   " documents; packing plans hold at most 2^32 - 1 per shard");
  }
  const uint64_t L = static_cast<uint64_t>(settings.seq_len);
  const uint64_t cap = settings.max_docs_per_sequence > 0
                           ? static_cast<uint64_t>(settings.max_docs_per_sequence)
                           : kNone;
  ShardPlan plan;
  PackingCounts& c = plan.counts;
  c.documents = lengths.size();
  // Whole pieces of L come first (longest), each alone in a bin; then the
  // remainders, sorted by length descending (key L - length), stable.
  std::vector<PieceRef> order;
  std::vector<uint32_t> rest_docs, rest_keys;
  // Looked at every kCancelStride documents or pieces: about a millisecond.
  const auto cancelled = [&](size_t i) {
    return i % kCancelStride == 0 && cancel != nullptr && cancel->load(std::memory_order_relaxed);
  };
  for (uint32_t d = 0; d < lengths.size(); ++d) {
    if (cancelled(d)) return CancelledError(shard + ": planning cancelled");
    const uint64_t n = lengths[d];
    c.tokens += n;
    if (n == 0) ++c.empty_documents;
    if (n > L) ++c.truncated_documents;
    if (n / L + 1 > UINT32_MAX) {
      return FailedPreconditionError(shard + ": document " + std::to_string(d) + " of " +
                                     std::to_string(n) +
                                     " tokens has 2^32 pieces or more at "
                                     "seq_len " +
                                     std::to_string(L));
    }
    for (uint32_t j = 0; j < n / L; ++j) order.push_back({d, j});
    if (n % L != 0) {
      rest_docs.push_back(d);
      rest_keys.push_back(static_cast<uint32_t>(L - n % L));
    }
  }
  for (uint32_t i : StableOrder(rest_keys, static_cast<uint32_t>(L))) {
    order.push_back({rest_docs[i], static_cast<uint32_t>(lengths[rest_docs[i]] / L)});
  }
  rest_docs = std::vector<uint32_t>();
  rest_keys = std::vector<uint32_t>();

  // Place each piece; record its bin, then lay the bins out in order.
  OpenBins open(L);
  std::vector<uint64_t> bin_of(order.size());
  std::vector<uint64_t> sizes;
  for (size_t i = 0; i < order.size(); ++i) {
    if (cancelled(i)) return CancelledError(shard + ": planning cancelled");
    const uint64_t len = PieceLength(lengths[order[i].document], order[i].piece, L);
    uint64_t capacity = 0;
    uint64_t bin = open.Take(len, &capacity);
    if (bin == kNone) {
      bin = sizes.size();
      sizes.push_back(0);
      capacity = L;
    }
    bin_of[i] = bin;
    if (++sizes[bin] < cap && capacity > len) open.Put(bin, capacity - len);
  }
  plan.bin_offsets.resize(sizes.size() + 1);
  for (size_t b = 0; b < sizes.size(); ++b) {
    plan.bin_offsets[b + 1] = plan.bin_offsets[b] + sizes[b];
    c.max_pieces_per_bin = std::max(c.max_pieces_per_bin, sizes[b]);
  }
  std::vector<uint64_t> fill(plan.bin_offsets.begin(), plan.bin_offsets.end() - 1);
  plan.items.resize(order.size());
  for (size_t i = 0; i < order.size(); ++i) plan.items[fill[bin_of[i]]++] = order[i];
  c.pieces = order.size();
  c.bins = sizes.size();
  return plan;
}

Status CheckShardPlan(const std::vector<uint64_t>& lengths, const PackingSettings& settings,
                      const std::string& name, ShardPlan* plan) {
  const uint64_t L = static_cast<uint64_t>(settings.seq_len);
  const auto bad = [&name](const std::string& what) { return DataLossError(name + ": " + what); };
  const std::vector<uint64_t>& off = plan->bin_offsets;
  if (off.empty() || off.front() != 0 || off.back() != plan->items.size()) {
    return bad("bin offsets do not span the items");
  }
  PackingCounts c;
  c.documents = lengths.size();
  // first_piece[d]: index of document d's first piece among all pieces.
  std::vector<uint64_t> first_piece(lengths.size() + 1, 0);
  for (size_t d = 0; d < lengths.size(); ++d) {
    const uint64_t n = lengths[d];
    c.tokens += n;
    if (n == 0) ++c.empty_documents;
    if (n > L) ++c.truncated_documents;
    first_piece[d + 1] = first_piece[d] + n / L + (n % L != 0);
  }
  c.pieces = first_piece.back();
  if (plan->items.size() != c.pieces) {
    return bad(std::to_string(plan->items.size()) + " pieces, but the shard's documents make " +
               std::to_string(c.pieces));
  }
  const uint64_t cap = settings.max_docs_per_sequence > 0
                           ? static_cast<uint64_t>(settings.max_docs_per_sequence)
                           : kNone;
  std::vector<bool> seen(c.pieces, false);
  // Best fit decreasing's own marks (see the header): where the previous
  // piece and the previous bin's first piece are in its order, and the
  // earlier bin below the cap with the most room left.
  PieceOrder previous{}, previous_first{};
  uint64_t roomiest = kNone, most_room = 0;
  const auto not_best_fit = [&](const std::string& why) {
    return bad("not the best-fit-decreasing plan of the shard's documents: " + why +
               " (made by another packer, or edited)");
  };
  for (size_t b = 0; b + 1 < off.size(); ++b) {
    if (off[b + 1] <= off[b]) return bad("bin " + std::to_string(b) + " is empty or reversed");
    if (off[b + 1] - off[b] > cap) {
      return bad("bin " + std::to_string(b) + " holds more than " +
                 std::to_string(settings.max_docs_per_sequence) + " pieces");
    }
    uint64_t tokens = 0;
    for (uint64_t i = off[b]; i < off[b + 1]; ++i) {
      const PieceRef p = plan->items[i];
      const uint64_t len =
          p.document < lengths.size() ? PieceLength(lengths[p.document], p.piece, L) : 0;
      if (len == 0) {
        return bad("item " + std::to_string(i) + " (document " + std::to_string(p.document) +
                   ", piece " + std::to_string(p.piece) + ") is not a piece of the shard");
      }
      const uint64_t k = first_piece[p.document] + p.piece;
      if (seen[k]) {
        return bad("document " + std::to_string(p.document) + " piece " + std::to_string(p.piece) +
                   " appears twice");
      }
      seen[k] = true;
      tokens += len;
      const PieceOrder order{L - len, p.document, p.piece};
      if (i == off[b]) {
        if (b > 0 && !(previous_first < order)) {
          return not_best_fit("bin " + std::to_string(b) + " comes after bin " +
                              std::to_string(b - 1) + " but was opened first");
        }
        if (roomiest != kNone && len <= most_room) {
          return not_best_fit("bin " + std::to_string(b) + " was opened for a piece of " +
                              std::to_string(len) + " tokens that bin " + std::to_string(roomiest) +
                              " has room for");
        }
        previous_first = order;
      } else if (!(previous < order)) {
        return not_best_fit("bin " + std::to_string(b) +
                            "'s pieces are not in the order they are placed");
      }
      previous = order;
    }
    if (tokens > L) {
      return bad("bin " + std::to_string(b) + " holds " + std::to_string(tokens) +
                 " tokens, more than seq_len " + std::to_string(L));
    }
    c.max_pieces_per_bin = std::max(c.max_pieces_per_bin, off[b + 1] - off[b]);
    if (off[b + 1] - off[b] < cap && L - tokens > most_room) {
      most_room = L - tokens;
      roomiest = b;
    }
  }
  // As many items as pieces, none twice: every piece is there.
  c.bins = off.size() - 1;
  plan->counts = c;
  return Status::Ok();
}

std::vector<uint64_t> ShardDocumentLengths(const Dataset& dataset, size_t shard) {
  uint64_t first = 0;
  for (size_t k = 0; k < shard; ++k) first += dataset.manifest().shards[k].documents;
  const uint64_t n = dataset.manifest().shards[shard].documents;
  std::vector<uint64_t> lengths(n);
  for (uint64_t d = 0; d < n; ++d) {
    uint64_t offset = 0;
    // In range by construction: the dataset's own counts.
    dataset.DocumentExtent(first + d, &offset, &lengths[d]).IgnoreError();
  }
  return lengths;
}

std::shared_ptr<const PackingPlan> PackingPlan::Make(const Dataset& dataset,
                                                     const PackingSettings& settings,
                                                     const std::vector<ShardPlan>& plans,
                                                     std::vector<std::string> plan_files) {
  std::shared_ptr<PackingPlan> v(new PackingPlan());
  v->settings_ = settings;
  v->plan_files_ = std::move(plan_files);
  const uint64_t L = static_cast<uint64_t>(settings.seq_len);
  uint64_t first_document = 0;
  for (size_t k = 0; k < plans.size(); ++k) {
    const ShardPlan& plan = plans[k];
    v->counts_.Add(plan.counts);
    for (size_t b = 0; b < plan.bins(); ++b) {
      for (uint64_t i = plan.bin_offsets[b]; i < plan.bin_offsets[b + 1]; ++i) {
        uint64_t offset = 0, length = 0;
        dataset.DocumentExtent(first_document + plan.items[i].document, &offset, &length)
            .IgnoreError();  // Checked: the plan holds pieces of the shard only.
        v->begins_.push_back(offset + plan.items[i].piece * L);
        v->lengths_.push_back(static_cast<uint32_t>(PieceLength(length, plan.items[i].piece, L)));
      }
      v->bin_offsets_.push_back(v->begins_.size());
    }
    first_document += dataset.manifest().shards[k].documents;
  }
  return v;
}

void PackingPlan::Bins(const uint64_t* bins, size_t n, std::vector<Range>* out,
                       std::vector<size_t>* ends) const {
  for (size_t r = 0; r < n; ++r) __builtin_prefetch(&bin_offsets_[bins[r]]);
  for (size_t r = 0; r < n; ++r) {
    const uint64_t i = bin_offsets_[bins[r]];
    __builtin_prefetch(&begins_[i]);
    __builtin_prefetch(&lengths_[i]);
  }
  for (size_t r = 0; r < n; ++r) {
    for (uint64_t i = bin_offsets_[bins[r]]; i < bin_offsets_[bins[r] + 1]; ++i) {
      out->push_back({begins_[i], lengths_[i]});
    }
    ends->push_back(out->size());
  }
}

void PackingPlan::Bin(uint64_t bin, std::vector<Range>* out) const {
  out->clear();
  for (uint64_t i = bin_offsets_[bin]; i < bin_offsets_[bin + 1]; ++i) {
    out->push_back({begins_[i], lengths_[i]});
  }
}

}  // namespace tokpack
