// BpeTokenizer::FromTiktoken: reads a tiktoken ranks file ("base64 rank" per
// line, as tiktoken's load_tiktoken_bpe does) and turns tiktoken's "rank of a
// byte string" into the merge table the shared BPE loop runs on.
#include <algorithm>
#include <charconv>

#include "tokenizer/bpe_tokenizer.h"

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

}  // namespace

StatusOr<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromTiktoken(std::string_view ranks,
                                                                   const TiktokenOptions& options,
                                                                   const std::string& name) {
  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer());
  t->tiktoken_ = true;
  t->byte_level_ = true;
  t->ignore_merges_ = true;  // encode_ordinary takes a piece that is a token as is.
  std::vector<std::pair<std::string, int>> tokens;
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
  t->literal_vocab_.Reserve(lines, token_bytes);
  tokens.reserve(lines);
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
      return InvalidArgumentError(where() + ": expected 'base64 rank', got '" +
                                  std::string(line.substr(0, 80)) + "'");
    }
    size_t bad = DecodeBase64(line.substr(0, space), &bytes);
    if (bad != std::string_view::npos) {
      return InvalidArgumentError(where() + ", column " + std::to_string(bad + 1) + " (byte " +
                                  std::to_string(line_start + bad) + "): invalid base64 '" +
                                  std::string(line.substr(0, space).substr(0, 80)) + "'");
    }
    std::string_view rank_text = line.substr(space + 1);
    int64_t rank = -1;
    auto [end, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
    if (ec != std::errc() || end != rank_text.data() + rank_text.size() || rank < 0 ||
        rank > kMaxTokenId) {
      return InvalidArgumentError(where() + ": rank '" + std::string(rank_text.substr(0, 40)) +
                                  "' is not a token id in [0, " + std::to_string(kMaxTokenId) +
                                  "]");
    }
    const int id = static_cast<int>(rank);
    if (id < t->vocab_size_ && t->has_id_[id]) {
      return InvalidArgumentError(where() + ": rank " + std::to_string(id) + " appears twice");
    }
    if (t->vocab_.Find(bytes) >= 0) {
      return InvalidArgumentError(where() + ": the token appears twice");
    }
    t->vocab_.Insert(bytes, id);
    t->literal_vocab_.Insert(bytes, id);
    if (bytes.size() == 1) t->byte_ids_[static_cast<unsigned char>(bytes[0])] = id;
    t->SetIdBytes(id, bytes);
    tokens.emplace_back(bytes, id);
  }
  // The rank of a pair of adjacent parts is the rank of their concatenation:
  // list each token under every way of cutting it into two tokens (real
  // vocabularies have about two such cuts per token).
  t->merges_.Reserve(2 * tokens.size());
  for (const auto& [token, id] : tokens) {
    for (size_t cut = 1; cut < token.size(); ++cut) {
      std::string_view s = token;
      int left = t->vocab_.Find(s.substr(0, cut));
      if (left < 0) continue;
      int right = t->vocab_.Find(s.substr(cut));
      if (right >= 0) t->merges_.Insert(left, right, MergeRule{id, id});
    }
  }
  for (const auto& [text, id] : options.special_tokens) {
    if (id < 0 || id > kMaxTokenId) {
      return InvalidArgumentError(name + ": special token '" + text + "' has id " +
                                  std::to_string(id) + ", not in [0, " +
                                  std::to_string(kMaxTokenId) + "]");
    }
    if (id < t->vocab_size_ && t->has_id_[id]) {
      return InvalidArgumentError(name + ": special token '" + text + "' has id " +
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
