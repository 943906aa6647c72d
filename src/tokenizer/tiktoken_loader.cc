// BpeTokenizer::FromTiktoken: reads a tiktoken ranks file ("base64 rank" per
// line, as tiktoken's load_tiktoken_bpe does) and turns tiktoken's "rank of a
// byte string" into the merge table the shared BPE loop runs on.
#include <algorithm>
#include <array>
#include <charconv>

#include "base/quote.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pattern_presets.h"
#include "tokenizer/token_pairs.h"

namespace tokpack {
namespace {

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with padding; returns the offset of the first bad
// character, or std::string_view::npos on success.
size_t DecodeBase64(std::string_view in, std::string* out) {
  out->clear();
  if (in.empty() || in.size() % 4 != 0) return in.size();
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '=') {
      if (i + 2 < in.size()) return i;  // Padding only in the last two places.
      ++pad;
      continue;
    }
    if (pad > 0) return i;
    int v = Base64Value(in[i]);
    if (v < 0) return i;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out->empty() ? 0 : std::string_view::npos;
}

// The cap on token pairs (see below): per token, and a floor for small files.
constexpr size_t kMaxPairsPerToken = 16;
constexpr size_t kMinPairCap = size_t{1} << 16;

}  // namespace

StatusOr<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromTiktoken(std::string_view ranks,
                                                                   const TiktokenOptions& options,
                                                                   const std::string& name) {
  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer());
  t->tiktoken_ = true;
  t->byte_level_ = true;
  t->ignore_merges_ = true;         // encode_ordinary takes a piece that is a token as is.
  std::vector<std::string> tokens;  // In file order, and their ids.
  std::vector<int> ids;
  size_t line_no = 0;
  std::string bytes;
  // A line per token, base64 taking 4 bytes per 3: room up front, so that the
  // tables do not rehash as they fill. Capped, so that a file of blank lines
  // does not reserve memory in proportion (real vocabularies stay under it).
  constexpr size_t kMaxReserved = size_t{1} << 18;
  const size_t lines = std::min<size_t>(
      kMaxReserved, static_cast<size_t>(std::count(ranks.begin(), ranks.end(), '\n')) + 1);
  const size_t token_bytes = std::min(ranks.size() * 3 / 4, 16 * kMaxReserved);
  t->vocab_.Reserve(lines, token_bytes);
  tokens.reserve(lines);
  ids.reserve(lines);
  for (size_t pos = 0; pos < ranks.size();) {
    size_t eol = ranks.find('\n', pos);
    if (eol == std::string_view::npos) eol = ranks.size();
    std::string_view line = ranks.substr(pos, eol - pos);
    const size_t line_start = pos;
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    auto where = [&] { return name + ": line " + std::to_string(line_no); };
    size_t space = line.find(' ');
    if (space == std::string_view::npos) {
      return InvalidArgumentError(where() + ": expected 'base64 rank', got " + Quoted(line, 80));
    }
    size_t bad = DecodeBase64(line.substr(0, space), &bytes);
    if (bad != std::string_view::npos) {
      return InvalidArgumentError(where() + ", column " + std::to_string(bad + 1) + " (byte " +
                                  std::to_string(line_start + bad) + "): invalid base64 " +
                                  Quoted(line.substr(0, space), 80));
    }
    std::string_view rank_text = line.substr(space + 1);
    int64_t rank = -1;
    auto [end, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
    if (ec != std::errc() || end != rank_text.data() + rank_text.size() || rank < 0 ||
        rank > kMaxTokenId) {
      return InvalidArgumentError(where() + ": rank " + Quoted(rank_text, 40) +
                                  " is not a token id in [0, " + std::to_string(kMaxTokenId) + "]");
    }
    const int id = static_cast<int>(rank);
    if (id < t->vocab_size_ && t->has_id_[id]) {
      return InvalidArgumentError(where() + ": rank " + std::to_string(id) + " appears twice");
    }
    if (!t->vocab_.InsertNew(bytes, id)) {
      return InvalidArgumentError(where() + ": the token appears twice");
    }
    if (bytes.size() == 1) t->byte_ids_[static_cast<unsigned char>(bytes[0])] = id;
    t->SetIdBytes(id, bytes);
    tokens.push_back(bytes);
    ids.push_back(id);
  }
  // The rank of a pair of adjacent parts is the rank of their concatenation.
  // Real vocabularies have about two such cuts per token (cl100k_base 2.3,
  // o200k_base 2.2, Qwen's 2.0); one made of runs ("a", "aa", "aaa", ...)
  // has one per byte, and its table would take over 30 bytes per byte of
  // the file, so the table is capped per token. The pairs are gathered
  // first, so that the table is sized once and filled with its slots
  // prefetched a few pairs ahead (a random slot per pair is a cache miss:
  // filling the table is a third of loading cl100k_base).
  const size_t max_pairs = kMaxPairsPerToken * tokens.size() + kMinPairCap;
  std::vector<std::array<int32_t, 3>> pairs;  // Left id, right id, id.
  pairs.reserve(std::min(max_pairs, 3 * tokens.size()));
  if (!ForEachTokenPair(tokens, [&](int32_t token, int32_t left, int32_t right) {
        if (pairs.size() == max_pairs) return false;
        pairs.push_back({ids[left], ids[right], ids[token]});
        return true;
      })) {
    return InvalidArgumentError(name + ": its " + std::to_string(tokens.size()) +
                                " tokens split into more than " + std::to_string(max_pairs) +
                                " pairs of tokens (" + std::to_string(kMaxPairsPerToken) +
                                " per token, where real vocabularies have about 2): a merge "
                                "table that large is refused");
  }
  t->merges_.Reserve(pairs.size());
  constexpr size_t kAhead = 8;
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (k + kAhead < pairs.size()) t->merges_.Prefetch(pairs[k + kAhead][0], pairs[k + kAhead][1]);
    const auto& [left, right, id] = pairs[k];
    t->merges_.Insert(left, right, MergeRule{id, id});
  }
  if (options.special_tokens.size() > kMaxAddedTokens) {
    return InvalidArgumentError(name + ": " + std::to_string(options.special_tokens.size()) +
                                " special tokens, more than the " +
                                std::to_string(kMaxAddedTokens) + " tokpack reads");
  }
  for (const auto& [text, id] : options.special_tokens) {
    if (text.size() > kMaxAddedTokenBytes) {
      return InvalidArgumentError(name + ": special token " + Quoted(text) + " is more than the " +
                                  std::to_string(kMaxAddedTokenBytes) +
                                  " bytes a special token may have");
    }
    if (id < 0 || id > kMaxTokenId) {
      return InvalidArgumentError(name + ": special token " + Quoted(text) + " has id " +
                                  std::to_string(id) + ", not in [0, " +
                                  std::to_string(kMaxTokenId) + "]");
    }
    if (id < t->vocab_size_ && t->has_id_[id]) {
      return InvalidArgumentError(name + ": special token " + Quoted(text) + " has id " +
                                  std::to_string(id) + ", which is already a rank");
    }
    t->literal_vocab_.Insert(text, id);
    t->SetIdBytes(id, text);
    AddedToken token;
    token.content = text;
    token.id = id;
    token.special = true;
    token.normalized = false;
    t->added_tokens_.push_back(token);
  }
  std::sort(t->added_tokens_.begin(), t->added_tokens_.end(),
            [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  const std::string pattern = SplitPatternFor(options.pattern);
  if (pattern.empty()) return InvalidArgumentError(name + ": no split pattern given");
  auto regex = Regex::Compile(pattern, RegexDialect::kRust);
  if (!regex.ok()) return InvalidArgumentError(name + ": " + regex.status().message());
  // encode_ordinary keeps only the pattern's matches: text between them is dropped.
  PreTokenizerStage stage;
  stage.regex = std::move(regex).value();
  stage.invert = true;
  stage.behavior = SplitBehavior::kRemoved;
  t->stages_.push_back(std::move(stage));
  return t;
}

}  // namespace tokpack
