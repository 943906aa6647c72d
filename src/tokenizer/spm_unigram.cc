#include "tokenizer/spm_unigram.h"

#include <darts.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <exception>
#include <limits>
#include <string_view>
#include <utility>

namespace tokpack {
namespace {

// unigram_model.cc: an unknown character scores the lowest NORMAL score less
// kUnkPenalty.
constexpr float kUnkPenalty = 10.0f;

// Certify() bounds the roundings of a path by one per character; words longer
// than this are not certified (nor cached: they are rare).
constexpr int kMaxCertifiedChars = 64;

}  // namespace

struct SpmUnigram::Trie {
  Darts::DoubleArray array;
};

std::unique_ptr<SpmUnigram> SpmUnigram::Create(const SpmModel& model) {
  // As unigram::Model::BuildTrie: the pieces sorted bytewise, each with its id.
  std::vector<std::pair<std::string_view, int>> pieces;
  for (size_t id = 0; id < model.pieces.size(); ++id) {
    const SpmPiece& piece = model.pieces[id];
    if (piece.type == SpmPieceType::kNormal || piece.type == SpmPieceType::kUserDefined) {
      pieces.emplace_back(piece.text, static_cast<int>(id));
    }
  }
  if (pieces.empty()) return nullptr;
  std::sort(pieces.begin(), pieces.end());
  std::vector<const char*> keys;
  std::vector<size_t> lengths;
  std::vector<int> values;
  for (const auto& [text, id] : pieces) {
    keys.push_back(text.data());
    lengths.push_back(text.size());
    values.push_back(id);
  }
  auto trie = std::make_unique<Trie>();
  // Darts-clone reports failure by throwing; tokpack's core does not throw.
  try {
    if (trie->array.build(keys.size(), keys.data(), lengths.data(), values.data()) != 0) {
      return nullptr;
    }
  } catch (const std::exception&) {
    return nullptr;
  }
  return std::unique_ptr<SpmUnigram>(new SpmUnigram(model, std::move(trie)));
}

SpmUnigram::SpmUnigram(const SpmModel& model, std::unique_ptr<Trie> trie)
    : trie_(std::move(trie)), scores_(model.pieces.size(), 0.0f), unk_id_(model.unk_id) {
  float min_score = FLT_MAX;
  for (size_t id = 0; id < model.pieces.size(); ++id) {
    const SpmPiece& piece = model.pieces[id];
    if (piece.type == SpmPieceType::kNormal) min_score = std::min(min_score, piece.score);
    // GetUserDefinedScore(): a user-defined piece beats any split of it.
    scores_[id] = piece.type == SpmPieceType::kUserDefined
                      ? static_cast<float>(0.1 * (static_cast<int>(piece.text.size()) - 1))
                      : piece.score;
  }
  unk_score_ = min_score - kUnkPenalty;
  // The unknown piece is not in the trie: its slot scores unknown characters.
  if (unk_id_ >= 0) scores_[unk_id_] = unk_score_;
}

SpmUnigram::~SpmUnigram() = default;

template <typename Visit>
void SpmUnigram::ForEachEdge(std::string_view word, Visit visit) const {
  for (size_t begin = 0; begin < word.size();) {
    const size_t one = std::min(SpmCharLen(word[begin]), word.size() - begin);
    bool covered = false;  // EncodeOptimized's has_single_node.
    size_t node_pos = 0;
    for (size_t key_pos = begin; key_pos < word.size();) {
      const int id = trie_->array.traverse(word.data(), node_pos, key_pos, key_pos + 1);
      if (id == -2) break;
      if (id < 0) continue;
      visit(Edge{static_cast<uint32_t>(begin), static_cast<uint32_t>(key_pos), id});
      covered |= key_pos - begin == one;
    }
    if (!covered) {
      visit(Edge{static_cast<uint32_t>(begin), static_cast<uint32_t>(begin + one), unk_id_});
    }
    begin += one;
  }
}

namespace {

// Appends the path ending at byte `end` whose edges' starts and ids are
// from_begin and from_id, in order.
void Backtrack(size_t end, const std::vector<int>& from_begin, const std::vector<int>& from_id,
               std::vector<SpmUnigram::Edge>* path) {
  path->clear();
  for (size_t i = end; i > 0; i = static_cast<size_t>(from_begin[i])) {
    path->push_back({static_cast<uint32_t>(from_begin[i]), static_cast<uint32_t>(i), from_id[i]});
  }
  std::reverse(path->begin(), path->end());
}

}  // namespace

void SpmUnigram::Viterbi(std::string_view word, float* score, Scratch* scratch,
                         std::vector<Edge>* path) const {
  // EncodeOptimized's best_path_ends_at, over the word's bytes: the best score
  // ending at each, and the edge that gives it (from_begin -1: none yet, its
  // "starts_at == -1"). The same operations in the same order, so the same
  // float roundings and the same winner among equal scores (the first).
  std::vector<float>& best = scratch->scores;
  std::vector<int>& from_begin = scratch->from_begin;
  std::vector<int>& from_id = scratch->from_id;
  best.assign(word.size() + 1, 0.0f);
  from_begin.assign(word.size() + 1, -1);
  from_id.resize(word.size() + 1);
  best[0] = *score;
  // No edge crosses the word's start, so the text's frontier is there.
  size_t max_frontier = 0;
  uint32_t begin = UINT32_MAX;
  float till_here = 0;
  ForEachEdge(word, [&](const Edge& e) {
    if (e.begin != begin) {
      begin = e.begin;
      till_here = best[begin];
      if (till_here < -kScoreResetThreshold || till_here > kScoreResetThreshold) {
        for (size_t i = begin; i <= max_frontier; ++i) {
          if (i == begin || from_begin[i] >= 0) best[i] -= till_here;
        }
        till_here = 0.0f;
      }
    }
    max_frontier = std::max<size_t>(max_frontier, e.end);
    const float candidate = Score(e.id) + till_here;
    if (from_begin[e.end] < 0 || candidate > best[e.end]) {
      best[e.end] = candidate;
      from_begin[e.end] = static_cast<int>(e.begin);
      from_id[e.end] = e.id;
    }
  });
  Backtrack(word.size(), from_begin, from_id, path);
  *score = best[word.size()];
}

double SpmUnigram::Certify(std::string_view word, Scratch* scratch, std::vector<Edge>* path) const {
  // The two best scores of distinct paths to each byte, in double: exact for
  // sums of a word's float scores, up to a relative 1e-15.
  const size_t size = word.size();
  std::vector<double>& exact = scratch->exact;
  std::vector<int>& from_begin = scratch->from_begin;
  std::vector<int>& from_id = scratch->from_id;
  exact.assign(2 * (size + 1), -std::numeric_limits<double>::infinity());
  from_begin.assign(size + 1, -1);
  from_id.resize(size + 1);
  double* best = exact.data();
  double* second = best + size + 1;
  best[0] = 0;
  int chars = 0;
  double span = 0;    // Bounds |score| of every path: the widest edge at each character.
  double widest = 0;  // Of the character being visited.
  uint32_t begin = UINT32_MAX;
  ForEachEdge(word, [&](const Edge& e) {
    if (e.begin != begin) {
      begin = e.begin;
      ++chars;
      span += widest;
      widest = 0;
    }
    const double s = Score(e.id);
    widest = std::max(widest, std::fabs(s));
    for (double c : {best[e.begin] + s, second[e.begin] + s}) {
      if (c > best[e.end]) {
        second[e.end] = best[e.end];
        best[e.end] = c;
        from_begin[e.end] = static_cast<int>(e.begin);
        from_id[e.end] = e.id;
      } else if (c > second[e.end]) {
        second[e.end] = c;
      }
    }
  });
  span += widest;
  Backtrack(size, from_begin, from_id, path);

  // From a starting score s, Viterbi's computed score of a path is s plus its
  // exact score plus one rounding per edge, each at most half a unit in the
  // last place (2^(e-25) for a float below 2^e in magnitude). Its choice is
  // monotone in the computed scores of the paths it compares, so it returns a
  // path whose exact score is within the roundings of two paths of the best;
  // a gap wider than that leaves only the best. Every score it computes is
  // below |s| + span + 1 (the roundings of at most kMaxCertifiedChars edges
  // sum to less than 1), so no rescaling happens inside the word while that
  // is at most kScoreResetThreshold.
  if (chars > kMaxCertifiedChars) return -1;
  const double gap = best[size] - second[size] - 1e-9 * (span + 1);
  if (!(gap > 0)) return -1;
  double binade = kScoreResetThreshold;
  if (std::isfinite(gap)) {
    int k = 0;
    const double m = std::frexp(gap / (2.0 * chars), &k);  // = m * 2^k, 0.5 <= m < 1.
    // The largest 2^e with 2^(e-25) below gap / (2 * chars).
    binade = std::min(binade, std::ldexp(1.0, (m == 0.5 ? k - 2 : k - 1) + 25));
  }
  return binade - span - 1.0;
}

}  // namespace tokpack
