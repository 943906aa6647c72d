#include "tokenizer/added_vocab.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace tokpack {
namespace {

bool EndsWithWord(std::string_view s) {
  if (s.empty()) return false;
  size_t len = 0;
  return IsWordChar(DecodeUtf8(s, PreviousCharStart(s, s.size()), &len));
}

bool StartsWithWord(std::string_view s) {
  size_t len = 0;
  return !s.empty() && IsWordChar(DecodeUtf8(s, 0, &len));
}

// Where the run of white space that ends `s` starts, or `floor` if it starts
// earlier (tokenizers then takes `floor` anyway; stopping there keeps many
// lstrip tokens in a long run of spaces linear).
size_t TrailingSpaceStart(std::string_view s, size_t floor) {
  size_t i = s.size();
  while (i > floor) {
    size_t p = PreviousCharStart(s, i);
    size_t len = 0;
    if (!IsWhiteSpace(DecodeUtf8(s, p, &len))) break;
    i = p;
  }
  return i;
}

// Length of the run of white space that starts `s`.
size_t LeadingSpaceLength(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t len = 0;
    if (!IsWhiteSpace(DecodeUtf8(s, i, &len))) break;
    i += len;
  }
  return i;
}

}  // namespace

int32_t AddedVocab::Trie::AddChild(int32_t node, unsigned char byte, Node child) {
  const auto index = static_cast<int32_t>(nodes.size());
  nodes.push_back(child);
  edges.emplace((static_cast<uint64_t>(node) << 8) | byte, index);
  return index;
}

void AddedVocab::Add(Set set, std::string_view pattern, const AddedToken& token) {
  if (pattern.empty()) return;
  Trie& trie = tries_[Index(set)];
  const auto index = static_cast<int32_t>(tokens_.size());
  tokens_.push_back(token);
  trie.first_byte[static_cast<unsigned char>(pattern[0])] = true;
  int32_t node = 0;
  for (size_t i = 0;; ++i) {
    if (trie.nodes[node].tail_len > 0) {
      // Split the tail's first byte off into an ordinary node, its child.
      const Node tail = trie.nodes[node];
      trie.nodes[node] = Node{};
      Node rest{tail.token, tail.tail_off + 1, tail.tail_len - 1};
      trie.AddChild(node, static_cast<unsigned char>(trie.bytes[tail.tail_off]), rest);
    }
    if (i == pattern.size()) {
      trie.nodes[node].token = index;
      return;
    }
    const auto byte = static_cast<unsigned char>(pattern[i]);
    const int32_t child = trie.Child(node, byte);
    if (child >= 0) {
      node = child;
      continue;
    }
    // A path no other pattern takes: the rest of the pattern is one tail.
    Node leaf{index, static_cast<uint32_t>(trie.bytes.size()),
              static_cast<uint32_t>(pattern.size() - i - 1)};
    trie.bytes.append(pattern.substr(i + 1));
    trie.AddChild(node, byte, leaf);
    return;
  }
}

int32_t AddedVocab::LongestAt(const Trie& trie, std::string_view text, size_t pos,
                              size_t* end) const {
  int32_t node = 0;
  int32_t found = -1;
  for (size_t i = pos; i < text.size();) {
    node = trie.Child(node, static_cast<unsigned char>(text[i++]));
    if (node < 0) break;
    const Node& n = trie.nodes[node];
    if (n.tail_len > 0) {
      if (text.substr(i, n.tail_len) ==
          std::string_view(trie.bytes).substr(n.tail_off, n.tail_len)) {
        found = n.token;
        *end = i + n.tail_len;
      }
      break;
    }
    if (n.token >= 0) {
      found = n.token;
      *end = i;
    }
  }
  return found;
}

void AddedVocab::Split(Set set, std::string_view text, std::vector<AddedSplit>* out) const {
  out->clear();
  const Trie& trie = tries_[Index(set)];
  size_t done = 0;  // tokenizers' start_offset: the end of the last split.
  size_t pos = 0;
  size_t space_from = 1, space_to = 0;  // Empty: nothing scanned yet.
  while (pos < text.size() && trie.nodes.size() > 1) {
    if (!trie.first_byte[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    size_t stop = 0;
    int32_t index = LongestAt(trie, text, pos, &stop);
    if (index < 0) {
      ++pos;
      continue;
    }
    size_t start = pos;
    pos = stop;  // The match is consumed even when single_word drops it.
    const AddedToken& token = tokens_[index];
    if (token.single_word) {
      bool start_space = start == 0 || !EndsWithWord(text.substr(0, start));
      bool stop_space = stop == text.size() || !StartsWithWord(text.substr(stop));
      if (!start_space || !stop_space) continue;
    }
    if (token.lstrip) {
      // Spaces an earlier split already took stay there.
      start = std::max(TrailingSpaceStart(text.substr(0, start), done), done);
    }
    if (token.rstrip) {
      // [space_from, space_to) is known white space ending before a non-space
      // (or the end): reuse it rather than rescan a long run for each token.
      if (stop < space_from || stop > space_to) {
        space_from = stop;
        space_to = stop + LeadingSpaceLength(text.substr(stop));
      }
      stop = space_to;
    }
    if (done < start) out->push_back({done, start, -1});
    out->push_back({start, stop, token.id});
    done = stop;
  }
  if (done < text.size()) out->push_back({done, text.size(), -1});
}

}  // namespace tokpack
