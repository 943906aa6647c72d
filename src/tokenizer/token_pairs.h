// ForEachTokenPair: every way of cutting a token of a vocabulary into two
// tokens, which is how a tiktoken ranks file becomes a merge table (the rank
// of a pair is the rank of its concatenation).
//
// Cutting each token at every position and looking both halves up hashes
// O(len^2) bytes per token: a ranks file with one 400 KB token took seconds
// to load. Here each token's longest proper prefix and suffix that are tokens
// are found with polynomial hashes that step by one byte in O(1), and only a
// hash hit is compared byte for byte. The prefixes of a token that are tokens
// form a chain (each is the longest proper token prefix of the next), and so
// do its suffixes; a cut is a pair where the two chains meet. Expected time is
// O(total bytes + pairs), whatever the vocabulary ("a", "aa", "aaa", ... has
// a pair per byte and costs a step per pair).
#ifndef TOKPACK_SRC_TOKENIZER_TOKEN_PAIRS_H_
#define TOKPACK_SRC_TOKENIZER_TOKEN_PAIRS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tokpack {

// For each of `tokens` (distinct byte strings), the index of its longest
// proper prefix and of its longest proper suffix that are tokens, or -1.
struct TokenLinks {
  std::vector<int32_t> prefix, suffix;
};
TokenLinks LinkTokens(const std::vector<std::string>& tokens);

// Calls fn(token, left, right), indices into `tokens` (distinct byte
// strings), for every token and every cut of it into a left and a right part
// that are both tokens, in no particular order, until fn returns false.
// Returns false if fn did.
template <typename Fn>
bool ForEachTokenPair(const std::vector<std::string>& tokens, Fn&& fn) {
  const TokenLinks links = LinkTokens(tokens);
  // A cut at `len` is a pair when the prefix chain has a token of len bytes
  // and the suffix chain one of size - len bytes. The prefix chain comes by
  // decreasing cut; the suffix chain, gathered by decreasing suffix size, is
  // by increasing cut, so it is met from its end.
  std::vector<int32_t> rights;
  std::vector<size_t> cuts;  // Of rights.
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (links.prefix[i] < 0 || links.suffix[i] < 0) continue;
    const size_t size = tokens[i].size();
    rights.clear();
    cuts.clear();
    for (int32_t s = links.suffix[i]; s >= 0; s = links.suffix[s]) {
      rights.push_back(s);
      cuts.push_back(size - tokens[s].size());
    }
    size_t k = rights.size();
    for (int32_t p = links.prefix[i]; p >= 0 && k > 0; p = links.prefix[p]) {
      const size_t cut = tokens[p].size();
      while (k > 0 && cuts[k - 1] > cut) --k;
      if (k > 0 && cuts[k - 1] == cut && !fn(static_cast<int32_t>(i), p, rights[k - 1])) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_TOKEN_PAIRS_H_
