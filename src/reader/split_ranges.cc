#include "reader/split_ranges.h"

#include <xxhash.h>

#include <algorithm>
#include <numeric>

#include "reader/permutation.h"

namespace tokpack {
namespace {

__extension__ typedef unsigned __int128 u128;  // documents * weights overflows 64 bits.

constexpr size_t kMaxIntDigits = 18;
constexpr size_t kMaxFracDigits = 9;

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

// A weight as its digits without the point (leading zeros dropped) and the
// number of digits after the point.
struct Decimal {
  u128 mantissa = 0;
  size_t frac_digits = 0;
};

StatusOr<Decimal> ParseDecimal(const std::string& text, const std::string& item) {
  const std::string bad = "split '" + text + "': '" + item + "' is not a non-negative number";
  const size_t dot = item.find('.');
  const std::string whole = item.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : item.substr(dot + 1);
  if (whole.empty() && frac.empty()) return InvalidArgumentError(bad);
  Decimal d;
  size_t significant = 0;
  for (const std::string* part : {&whole, &frac}) {
    for (char c : *part) {
      if (c < '0' || c > '9') return InvalidArgumentError(bad);
      d.mantissa = d.mantissa * 10 + static_cast<unsigned>(c - '0');
      if (part == &whole) significant += d.mantissa != 0;
    }
  }
  d.frac_digits = frac.size();
  if (significant > kMaxIntDigits || d.frac_digits > kMaxFracDigits) {
    return InvalidArgumentError("split '" + text + "': '" + item + "' has more than " +
                                std::to_string(kMaxIntDigits) + " digits before the point or " +
                                std::to_string(kMaxFracDigits) + " after it");
  }
  return d;
}

u128 Gcd(u128 a, u128 b) {
  while (b != 0) {
    const u128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

}  // namespace

std::string SplitSpec::Normalized() const {
  std::string out;
  for (size_t j = 0; j < weights.size(); ++j) {
    if (j) out += ',';
    out += std::to_string(weights[j]);
  }
  return out;
}

StatusOr<SplitSpec> ParseSplit(const std::string& text) {
  const std::string usage = " (split takes weights such as \"949,50,1\")";
  std::vector<Decimal> parts;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = Trim(text.substr(start, comma - start));
    if (parts.size() == SplitSpec::kMaxParts) {
      return InvalidArgumentError("split '" + text.substr(0, 40) + "...': more than " +
                                  std::to_string(SplitSpec::kMaxParts) + " parts");
    }
    TOKPACK_ASSIGN_OR_RETURN(Decimal d, ParseDecimal(text, item));
    parts.push_back(d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  size_t frac = 0;
  for (const Decimal& d : parts) frac = std::max(frac, d.frac_digits);
  // Exact integers on a common scale (< 10^27 each, < 10^30 in all), then
  // divided by their gcd.
  std::vector<u128> scaled;
  u128 g = 0;
  for (const Decimal& d : parts) {
    u128 v = d.mantissa;
    for (size_t k = d.frac_digits; k < frac; ++k) v *= 10;
    scaled.push_back(v);
    g = Gcd(g, v);
  }
  if (g == 0) return InvalidArgumentError("split '" + text + "': every weight is 0" + usage);
  SplitSpec spec;
  u128 total = 0;
  for (u128 v : scaled) {
    total += v / g;
    if (total > SplitSpec::kMaxTotal) {
      return InvalidArgumentError("split '" + text +
                                  "': the weights are too fine (in lowest terms they add up to "
                                  "more than 2^62)");
    }
    spec.weights.push_back(static_cast<uint64_t>(v / g));
  }
  return spec;
}

StatusOr<SplitSpec> ParseSplitPart(const std::string& split, int64_t index) {
  if (split.empty()) {
    return InvalidArgumentError("split_index " + std::to_string(index) +
                                " needs a split (e.g. split=\"949,50,1\")");
  }
  TOKPACK_ASSIGN_OR_RETURN(SplitSpec spec, ParseSplit(split));
  if (index < 0 || static_cast<uint64_t>(index) >= spec.parts()) {
    return InvalidArgumentError("split_index " + std::to_string(index) +
                                " is out of range for split '" + split + "' (parts 0 to " +
                                std::to_string(spec.parts() - 1) + ")");
  }
  return spec;
}

Status EmptyPartError(const std::string& dataset, const std::string& split, size_t part,
                      uint64_t runs) {
  return InvalidArgumentError(
      dataset + ": split '" + split + "' part " + std::to_string(part) +
      " holds no documents: the dataset's " + std::to_string(runs) +
      " runs of documents are dealt to the parts in proportion to their weights, and this "
      "part's weight gives it none; give it more weight");
}

DocumentRange SplitRange(const SplitSpec& spec, size_t part, uint64_t n) {
  uint64_t before = 0, total = 0;
  for (size_t j = 0; j < spec.weights.size(); ++j) {
    if (j < part) before += spec.weights[j];
    total += spec.weights[j];
  }
  const uint64_t through = before + spec.weights[part];
  const auto at = [&](uint64_t c) {
    return static_cast<uint64_t>(static_cast<u128>(n) * c / total);
  };
  return {at(before), at(through)};
}

uint64_t SplitRuns::RunDocuments(uint64_t documents) {
  return std::max<uint64_t>(1, documents / kTargetRuns + (documents % kTargetRuns != 0));
}

SplitRuns::SplitRuns(const SplitSpec& spec, std::vector<uint64_t> shard_documents)
    : shard_documents_(std::move(shard_documents)) {
  uint64_t documents = 0;
  for (uint64_t d : shard_documents_) documents += d;
  run_documents_ = RunDocuments(documents);
  for (uint64_t d : shard_documents_) {
    first_run_.push_back(runs_);
    runs_ += d / run_documents_ + (d % run_documents_ != 0);
  }
  for (size_t j = 0; j < spec.parts(); ++j) bounds_.push_back(SplitRange(spec, j, runs_).begin);
  bounds_.push_back(runs_);
  // The key depends on the split alone, so every process deals the same runs.
  const std::string keyed = "tokpack-split-runs-v2:" + spec.Normalized();
  key_ = XXH3_64bits(keyed.data(), keyed.size());
}

size_t SplitRuns::PartOfSlot(uint64_t slot) const {
  // The last part j with bounds_[j] <= slot (parts of weight 0 hold no slot).
  return std::upper_bound(bounds_.begin(), bounds_.end() - 1, slot) - bounds_.begin() - 1;
}

size_t SplitRuns::PartOfRun(uint64_t g) const {
  return PartOfSlot(FeistelPermutation(runs_, key_).Apply(g));
}

std::vector<SplitRuns::Dealt> SplitRuns::Deal(size_t shard) const {
  std::vector<Dealt> dealt;
  const uint64_t d = shard_documents_[shard];
  if (d == 0) return dealt;
  const FeistelPermutation pi(runs_, key_);
  for (uint64_t begin = 0, g = first_run_[shard]; begin < d; begin += run_documents_, ++g) {
    const size_t part = PartOfSlot(pi.Apply(g));
    const uint64_t end = std::min(d, begin + run_documents_);
    if (!dealt.empty() && dealt.back().part == part) {
      dealt.back().range.end = end;
    } else {
      dealt.push_back({part, {begin, end}});
    }
  }
  return dealt;
}

std::vector<DocumentRange> SplitRuns::Ranges(size_t part, size_t shard) const {
  std::vector<DocumentRange> ranges;
  for (const Dealt& d : Deal(shard)) {
    if (d.part == part) ranges.push_back(d.range);
  }
  return ranges;
}

uint64_t SplitFingerprint(uint64_t parent, const SplitSpec& spec, size_t part) {
  std::string buf = "tokpack-split-v2";
  auto put = [&buf](uint64_t v) { buf.append(reinterpret_cast<const char*>(&v), 8); };
  const std::string normalized = spec.Normalized();
  put(parent);
  put(normalized.size());
  buf += normalized;
  put(part);
  return XXH3_64bits(buf.data(), buf.size());
}

}  // namespace tokpack
