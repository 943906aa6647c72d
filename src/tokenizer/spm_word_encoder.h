// SpmWordEncoder: a sentencepiece model's encoding of a text, word by word
// through a per-thread cache, with exactly the ids of
// SentencePieceProcessor::Encode on the whole text.
//
// Encode() normalizes the text with the model's own normalizer (as Encode
// does first), then cuts the result into words where no piece of the
// vocabulary can span the cut: before each run of "▁" (U+2581, the escaped
// space) that follows another character, where no piece has "▁" after another
// character (the usual vocabulary, trained with split_by_whitespace), or after
// each run, where no piece has a character after "▁"
// (treat_whitespace_as_suffix). Neither model walks across such a cut in
// sentencepiece 0.2.3: the unigram lattice's nodes and the BPE symbols and
// merges are all pieces (or single characters), so the whole text's result is
// its words' results side by side. What does carry across words is handled
// here: the unigram Viterbi's running float score (spm_unigram.h) and the
// merging of adjacent unknown pieces into one id (unless byte_fallback).
//
// BPE words are encoded by a second processor whose normalizer changes
// nothing (spm_model_proto.h). Unigram words run spm_unigram.h's copy of the
// Viterbi, which keeps a few words per byte as EncodeOptimized does, so words
// of any length are encoded so. Texts are encoded whole, by the processor,
// only where a BPE word is not valid UTF-8 (the identity normalizer would
// change it).
//
// The cache: direct-mapped, 2^16 entries of 64 bytes (4 MiB) per tokenizer
// per thread, for the last two tokenizers a thread used; a word and its ids
// share 52 bytes (a 6-letter word with up to 10 ids, a 20-letter one with up
// to 7). It never grows with the corpus.
//
// Thread-safe: Encode() is const.
#ifndef TOKPACK_SRC_TOKENIZER_SPM_WORD_ENCODER_H_
#define TOKPACK_SRC_TOKENIZER_SPM_WORD_ENCODER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "tokenizer/spm_unigram.h"
#include "tokpack/status.h"

namespace sentencepiece {
class SentencePieceProcessor;
}  // namespace sentencepiece

namespace tokpack {

class SpmWordEncoder {
 public:
  // `sp` is the processor loaded from `model` and must outlive the encoder.
  // nullptr where words cannot be encoded apart exactly: a model that is
  // neither unigram nor BPE, or pieces that span both kinds of cut.
  static StatusOr<std::unique_ptr<SpmWordEncoder>> Create(
      const sentencepiece::SentencePieceProcessor* sp, std::string_view model);
  ~SpmWordEncoder();

  // Sets *ids to the ids sp->Encode(text) gives.
  Status Encode(std::string_view text, std::vector<int>* ids) const;

 private:
  struct CacheEntry;
  struct ThreadState;
  static ThreadState& ThisThread();

  explicit SpmWordEncoder(const sentencepiece::SentencePieceProcessor* sp);
  Status EncodeWhole(std::string_view text, std::vector<int>* ids) const;
  // Encode() word by word; *whole: the text must be encoded whole instead.
  Status EncodeWords(std::string_view text, ThreadState* ts, std::vector<int>* ids,
                     bool* whole) const;
  // A word's ids, in its cache entry or the thread's scratch.
  struct IdRun {
    const int* ids = nullptr;
    size_t n = 0;
  };
  // `entry` is the word's cache slot (null: not cached), `hit` whether it
  // holds the word; *base is the unigram Viterbi's score before the word,
  // then after it.
  IdRun EncodeUnigramWord(std::string_view word, CacheEntry* entry, bool hit, float* base,
                          ThreadState* ts) const;
  // False where the identity normalizer would change `word`.
  StatusOr<bool> EncodeBpeWord(std::string_view word, ThreadState* ts) const;
  // The ids of a unigram path's edges, an unknown character's bytes with
  // byte_fallback (runs of unknown ids are merged as they are appended).
  void EmitPath(std::string_view word, const std::vector<SpmUnigram::Edge>& path,
                std::vector<int>* ids) const;

  const sentencepiece::SentencePieceProcessor* sp_;
  bool cut_before_space_ = true;
  bool byte_fallback_ = false;
  int unk_id_ = -1;
  std::array<int, 256> byte_ids_{};                                 // <0xXX> pieces.
  std::unique_ptr<SpmUnigram> unigram_;                             // Unigram models.
  std::unique_ptr<sentencepiece::SentencePieceProcessor> word_sp_;  // BPE models.
  const uint64_t serial_;  // Keys this instance's per-thread caches.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_SPM_WORD_ENCODER_H_
