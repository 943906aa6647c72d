#include "build/loss_spans.h"

#include <algorithm>

#include "base/utf8.h"

namespace tokpack {
namespace {

// Reads an integer element; false for anything else (1.0 and true included).
bool ReadIndex(simdjson::dom::element e, int64_t* out) {
  if (e.is_int64()) return e.get_int64().get(*out) == simdjson::SUCCESS;
  // A uint64 beyond int64 is past any text.
  if (e.is_uint64()) {
    *out = INT64_MAX;
    return true;
  }
  return false;
}

}  // namespace

std::string ReadLossSpans(simdjson::dom::element value, std::string_view key, std::string_view text,
                          bool inverse, std::vector<ByteSpan>* loss) {
  loss->clear();
  const std::string name(key);
  simdjson::dom::array spans;
  if (value.get_array().get(spans) != simdjson::SUCCESS) {
    return name + " is not an array of [start, end] pairs";
  }
  // Characters are walked once, left to right: the spans are sorted, so
  // each boundary lies at or after the one before.
  size_t byte = 0;    // Offset of character `chars`.
  int64_t chars = 0;  // Characters before `byte`.
  auto to_byte = [&](int64_t index) -> bool {
    while (chars < index && byte < text.size()) {
      ++byte;
      while (byte < text.size() && IsUtf8Continuation(text[byte])) ++byte;
      ++chars;
    }
    return chars == index;
  };
  std::vector<ByteSpan> given;
  int64_t previous_end = 0;
  size_t i = 0;
  for (simdjson::dom::element span : spans) {
    const std::string where = name + "[" + std::to_string(i++) + "]";
    simdjson::dom::array pair;
    int64_t start = 0, end = 0;
    if (span.get_array().get(pair) != simdjson::SUCCESS || pair.size() != 2 ||
        !ReadIndex(pair.at(0).value_unsafe(), &start) ||
        !ReadIndex(pair.at(1).value_unsafe(), &end)) {
      return where + " is not a pair of integers [start, end]";
    }
    if (start < 0 || end < start) {
      return where + ": [" + std::to_string(start) + ", " + std::to_string(end) +
             "] is not a range (0 <= start <= end)";
    }
    if (start < previous_end) {
      return where + ": start " + std::to_string(start) + " is before the end " +
             std::to_string(previous_end) +
             " of the span before it (spans must be sorted and must not overlap)";
    }
    previous_end = end;
    ByteSpan b{};
    const bool start_in = to_byte(start);
    b.begin = static_cast<uint32_t>(byte);
    if (!start_in || !to_byte(end)) {
      // Count the rest, for the message.
      to_byte(INT64_MAX);
      return where + ": end " + std::to_string(end) + " is past the text's " +
             std::to_string(chars) + " characters";
    }
    b.end = static_cast<uint32_t>(byte);
    if (b.begin < b.end) given.push_back(b);
  }
  if (!inverse) {
    *loss = std::move(given);
    return std::string();
  }
  uint32_t at = 0;
  for (const ByteSpan& s : given) {
    if (at < s.begin) loss->push_back({at, s.begin});
    at = s.end;
  }
  if (at < text.size()) loss->push_back({at, static_cast<uint32_t>(text.size())});
  return std::string();
}

void TokenLossFlags(const std::vector<TokenRange>& ranges, const std::vector<ByteSpan>& loss,
                    size_t text_size, char* flags) {
  for (size_t i = 0; i < ranges.size(); ++i) {
    uint64_t begin = ranges[i].begin, end = ranges[i].end;
    if (begin == end) {
      if (end < text_size) {
        ++end;
      } else if (begin > 0) {
        --begin;
      }
    }
    // The first span that ends after the token begins; the token carries
    // loss if that span starts before the token ends.
    auto it = std::upper_bound(loss.begin(), loss.end(), begin,
                               [](uint64_t b, const ByteSpan& s) { return b < s.end; });
    flags[i] = it != loss.end() && it->begin < end;
  }
}

}  // namespace tokpack
