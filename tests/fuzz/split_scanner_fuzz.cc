// libFuzzer target: the hand-written split scanners against the PCRE2 path
// of the same pattern, on any text (the input, its invalid UTF-8 replaced),
// for every pattern a scanner knows. Any difference in the matches, or in the
// pieces an Isolated split cuts, traps.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/utf8.h"
#include "tokenizer/regex.h"
#include "tokenizer/split_scanner.h"

namespace {

using Spans = std::vector<std::pair<size_t, size_t>>;

struct Pair {
  std::unique_ptr<tokpack::Regex> scanned, pcre2;
};

const std::vector<Pair>& Pairs() {
  static const std::vector<Pair> pairs = [] {
    std::vector<Pair> out;
    for (std::string_view p : tokpack::SplitScanner::KnownPatterns()) {
      const auto d = tokpack::RegexDialect::kOniguruma;
      out.push_back(
          {std::move(tokpack::Regex::Compile(p, d).value()),
           std::move(tokpack::Regex::Compile(p, d, tokpack::RegexEngine::kPcre2).value())});
    }
    return out;
  }();
  return pairs;
}

Spans Matches(const tokpack::Regex& re, std::string_view text) {
  Spans out;
  if (!re.ForEachMatch(text, [&](size_t s, size_t e) { out.emplace_back(s, e); }).ok()) {
    __builtin_trap();
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text =
      tokpack::RepairUtf8(std::string_view(reinterpret_cast<const char*>(data), size));
  for (const Pair& p : Pairs()) {
    const Spans want = Matches(*p.pcre2, text);
    if (Matches(*p.scanned, text) != want) __builtin_trap();
    if (text.empty()) continue;
    // Scan(): the matches and the text between them, in order, to the end.
    std::vector<size_t> cut;
    size_t prev = 0;
    for (const auto& [s, e] : want) {
      if (s > prev) cut.push_back(s);
      cut.push_back(e);
      prev = e;
    }
    if (prev < text.size()) cut.push_back(text.size());
    std::vector<size_t> got;
    size_t ends[7];
    for (size_t pos = 0; pos < text.size();) {
      const size_t n = p.scanned->scanner()->Scan(text, pos, ends, 7);
      if (n == 0) __builtin_trap();
      got.insert(got.end(), ends, ends + n);
      pos = ends[n - 1];
    }
    if (got != cut) __builtin_trap();
  }
  return 0;
}
