// AddedVocab: finds the added tokens of a tokenizer.json in text the way
// tokenizers' AddedVocabulary::find_matches does: non-overlapping
// leftmost-longest matches of the tokens' patterns; a single_word token is
// dropped where a word character touches it (its text stays plain text);
// lstrip/rstrip tokens take the white space beside them.
//
// Two sets: tokens with normalized=false match the raw text, those with
// normalized=true match (their normalized content) in normalized text.
// Immutable after building; safe to share between threads.
#ifndef TOKPACK_SRC_TOKENIZER_ADDED_VOCAB_H_
#define TOKPACK_SRC_TOKENIZER_ADDED_VOCAB_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tokpack {

// Caps on the added (and tiktoken special) tokens of a tokenizer file,
// checked at load with an error naming the token: without them one 100 MB
// token took over 5 GB. At the caps a file loads in under a second and
// 300 MB (262,144 tokens: about 1 KB each with their copies and maps; 256
// tokens of 16 KiB: 46 MB). Real files are far inside them (DeepSeek V3:
// 1,283 tokens of at most 48 bytes, 40 KB in all).
inline constexpr size_t kMaxAddedTokenBytes = size_t{16} << 10;
inline constexpr size_t kMaxAddedTokensBytes = size_t{4} << 20;
inline constexpr size_t kMaxAddedTokens = size_t{1} << 18;

struct AddedToken {
  std::string content;
  int id = -1;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
};

// [start, end) of a segment: an added token's id, or -1 for text between.
struct AddedSplit {
  size_t start;
  size_t end;
  int id;
};

class AddedVocab {
 public:
  enum class Set { kRaw, kNormalized };

  // Matches `pattern` (non-empty) as `token` within `set`.
  void Add(Set set, std::string_view pattern, const AddedToken& token);
  bool empty(Set set) const { return tries_[Index(set)].nodes.size() <= 1; }

  // Replaces *out with splits covering `text` in order; empty ones left out.
  void Split(Set set, std::string_view text, std::vector<AddedSplit>* out) const;

 private:
  // A byte trie whose paths that no two patterns share end in a tail node:
  // the rest of one pattern's bytes, kept in the pattern's copy in `bytes`
  // rather than as a node per byte (~50 bytes each with its edge), so that a
  // long pattern costs its length, not fifty times it. A tail is split a
  // byte at a time where a later pattern shares it.
  struct Node {
    int32_t token = -1;     // Index into tokens_ of the pattern ending here, or -1.
    uint32_t tail_off = 0;  // Tail node: its bytes, bytes[tail_off, +tail_len),
    uint32_t tail_len = 0;  // after which `token` ends; it has no children.
  };
  struct Trie {
    Trie() : nodes(1) { first_byte.fill(false); }
    std::vector<Node> nodes;
    std::unordered_map<uint64_t, int32_t> edges;  // (node << 8 | byte) -> child.
    std::string bytes;                            // The tails' bytes.
    std::array<bool, 256> first_byte;
    int32_t Child(int32_t node, unsigned char byte) const {
      auto it = edges.find((static_cast<uint64_t>(node) << 8) | byte);
      return it == edges.end() ? -1 : it->second;
    }
    int32_t AddChild(int32_t node, unsigned char byte, Node child);
  };
  static size_t Index(Set set) { return set == Set::kRaw ? 0 : 1; }
  // Longest pattern at text[pos]: its end and token index, or -1.
  int32_t LongestAt(const Trie& trie, std::string_view text, size_t pos, size_t* end) const;

  std::array<Trie, 2> tries_;
  std::vector<AddedToken> tokens_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_ADDED_VOCAB_H_
