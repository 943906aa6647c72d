#include "tokenizer/pre_tokenizer.h"

namespace tokpack {
namespace {

void Push(size_t start, size_t end, std::vector<std::pair<size_t, size_t>>* out) {
  if (start < end) out->emplace_back(start, end);
}

// Bytes that are printable Latin-1 stand for themselves; the others take
// U+0100 onwards in byte order.
bool SelfMapped(unsigned char b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

}  // namespace

uint32_t ByteLevelCodepoint(unsigned char b) {
  if (SelfMapped(b)) return b;
  uint32_t n = 0;
  for (unsigned k = 0; k < b; ++k) n += SelfMapped(static_cast<unsigned char>(k)) ? 0 : 1;
  return 0x100 + n;
}

int ByteLevelByte(uint32_t cp) {
  if (cp < 0x100) return SelfMapped(static_cast<unsigned char>(cp)) ? static_cast<int>(cp) : -1;
  uint32_t n = 0x100;
  for (unsigned b = 0; b < 256; ++b) {
    if (SelfMapped(static_cast<unsigned char>(b))) continue;
    if (n++ == cp) return static_cast<int>(b);
  }
  return -1;
}

void ApplySplitBehavior(const std::vector<SplitEvent>& events, SplitBehavior behavior,
                        std::vector<std::pair<size_t, size_t>>* out) {
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const SplitEvent& e : events) {
        if (!e.is_match) Push(e.start, e.end, out);
      }
      return;
    case SplitBehavior::kIsolated:
      for (const SplitEvent& e : events) Push(e.start, e.end, out);
      return;
    default:
      break;
  }
  // The folds of tokenizers' NormalizedString::split, on a local list so that
  // a merge can extend the previous (or, for MergedWithNext, the following)
  // part before empty parts are dropped.
  std::vector<std::pair<size_t, size_t>> parts;
  bool previous_match = false;
  if (behavior == SplitBehavior::kMergedWithNext) {
    for (size_t k = events.size(); k-- > 0;) {
      const SplitEvent& e = events[k];
      if (e.is_match && !previous_match && !parts.empty()) {
        parts.back().first = e.start;
      } else {
        parts.emplace_back(e.start, e.end);
      }
      previous_match = e.is_match;
    }
    for (size_t k = parts.size(); k-- > 0;) Push(parts[k].first, parts[k].second, out);
    return;
  }
  for (const SplitEvent& e : events) {
    bool merge = behavior == SplitBehavior::kContiguous ? e.is_match == previous_match
                                                        : e.is_match && !previous_match;
    if (merge && !parts.empty()) {
      parts.back().second = e.end;
    } else {
      parts.emplace_back(e.start, e.end);
    }
    previous_match = e.is_match;
  }
  for (const auto& p : parts) Push(p.first, p.second, out);
}

Status PreTokenizerStage::Events(std::string_view piece, std::vector<SplitEvent>* events) const {
  events->clear();
  size_t prev = 0;
  TOKPACK_RETURN_IF_ERROR(regex->ForEachMatch(piece, [&](size_t s, size_t e) {
    if (prev != s) events->push_back({prev, s, invert});
    events->push_back({s, e, !invert});
    prev = e;
  }));
  if (prev != piece.size()) events->push_back({prev, piece.size(), invert});
  return Status::Ok();
}

}  // namespace tokpack
