// SpmUnigram: sentencepiece's unigram Viterbi (unigram_model.cc,
// Model::EncodeOptimized, release 0.2.3) run over one word at a time with the
// same float arithmetic, so that the words of a text, encoded in order from
// the score the text before them reached, give the whole text's path.
//
// Why not the processor, word by word: the Viterbi adds piece scores to the
// best score of the text so far, in float. Two segmentations of a word with
// (nearly) the same score, such as "l"+"ll" and "ll"+"l", then compare by how
// their sums round at that magnitude, so a word encoded alone (from 0) can
// come out differently than inside its text. Words are independent otherwise:
// no piece spans the cut between two (spm_word_encoder.h), so every path
// passes through each cut.
//
// For the cache, Certify() computes a word's best path exactly and how far
// the runner-up trails it, which bounds the magnitudes of the starting score
// below which the rounding cannot change the choice; past that bound, or
// where two paths tie, Viterbi() runs the word from the actual score.
//
// Thread-safe: all methods are const; scratch space is the caller's.
#ifndef TOKPACK_SRC_TOKENIZER_SPM_UNIGRAM_H_
#define TOKPACK_SRC_TOKENIZER_SPM_UNIGRAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "tokenizer/spm_model_proto.h"

namespace tokpack {

// The length of the character starting with byte `c`, by its lead byte
// alone, as sentencepiece steps through text (string_util::OneCharLen).
inline size_t SpmCharLen(char c) {
  return "\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[static_cast<unsigned char>(c) >> 4];
}

class SpmUnigram {
 public:
  // A lattice edge: a piece (or an unknown character) over [begin, end) of a
  // word, in bytes.
  struct Edge {
    uint32_t begin;
    uint32_t end;
    int id;  // The model's unknown id (-1 where it has none) for an unknown character.
  };

  // EncodeOptimized rescales its scores once the best score so far exceeds
  // this magnitude (kScoreResetThreshold).
  static constexpr float kScoreResetThreshold = 100000.0f;

  // Reusable buffers of Viterbi() and Certify(), one per thread: a few words
  // per byte of the word, as EncodeOptimized keeps per byte of the text.
  struct Scratch {
    std::vector<float> scores;
    std::vector<double> exact;
    std::vector<int> from_begin;
    std::vector<int> from_id;
  };

  // nullptr where the model has no piece to build a trie of (then texts are
  // encoded whole).
  static std::unique_ptr<SpmUnigram> Create(const SpmModel& model);
  ~SpmUnigram();

  // The score EncodeOptimized gives an edge of piece `id` (the unknown id's:
  // an unknown character's).
  float Score(int id) const { return id >= 0 ? scores_[id] : unk_score_; }

  // EncodeOptimized's Viterbi over `word`, whose first character's best score
  // is *score (the whole text's so far): sets *path to the best path and
  // *score to the best score at the word's end.
  void Viterbi(std::string_view word, float* score, Scratch* scratch,
               std::vector<Edge>* path) const;

  // Sets *path to the word's best path in exact arithmetic and returns the
  // bound: from a starting score of magnitude below it, Viterbi() takes this
  // path without rescaling. Negative where no starting score is safe (a tie,
  // or a word too long to bound).
  double Certify(std::string_view word, Scratch* scratch, std::vector<Edge>* path) const;

 private:
  struct Trie;  // Darts::DoubleArray, kept out of this header.

  SpmUnigram(const SpmModel& model, std::unique_ptr<Trie> trie);

  // Calls visit(edge) for each edge of the lattice of `word` in the order
  // EncodeOptimized visits them: character by character, the pieces that
  // start there by increasing length (walking the same kind of trie,
  // Darts-clone's double array, of the same pieces less the UNUSED ones it
  // skips), then an unknown edge over the character where no piece covers
  // exactly it.
  template <typename Visit>
  void ForEachEdge(std::string_view word, Visit visit) const;

  std::unique_ptr<Trie> trie_;  // NORMAL and USER_DEFINED pieces -> id.
  std::vector<float> scores_;   // By id: the score EncodeOptimized gives the piece.
  int unk_id_;
  float unk_score_ = 0;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_SPM_UNIGRAM_H_
