// Tokenizer: a loaded tokenizer file, the one a dataset is built with (every
// tokpack dataset keeps a copy). Its kind is told from the file's content,
// not its name; each kind encodes to exactly the ids of its reference library
// (a sentencepiece .model as SentencePieceProcessor::Encode, a tokenizer.json
// as tokenizers' encode(text, add_special_tokens=False).ids, a tiktoken ranks
// file as tiktoken's encode_ordinary, ...: the kinds are the rows of
// src/tokenizer/tokenizer_kinds.cc, and docs/tokenizers.md lists them).
// Encode() and Decode() are const and safe to call from many threads at once.
#ifndef TOKPACK_TOKENIZER_H_
#define TOKPACK_TOKENIZER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokpack/manifest.h"
#include "tokpack/status.h"

namespace tokpack {

// What a tokenizer file does not say about itself. Empty fields mean: what
// the file (or, for a tokenizer.json, the tokenizer_config.json beside it)
// defines.
struct TokenizerOptions {
  // tiktoken files only (required there): the split regex, or the name of a
  // preset (src/tokenizer/pattern_presets.cc, `tokpack build --help`), most of
  // which also bring their special tokens.
  std::string pattern;
  // tiktoken files only: special tokens as (text, id), added to a preset's.
  std::vector<std::pair<std::string, int64_t>> special_tokens;
  // The text of the token that ends (begins) each document, e.g.
  // "<|endoftext|>"; it must be a token of the file.
  std::string eos_token;
  std::string bos_token;
};

// What one Encode() call did: tokens that do not carry their text exactly,
// and how often the piece cache spared the encoder its work.
struct EncodeCounts {
  int64_t unknown = 0;        // The unknown token: the text is lost.
  int64_t byte_fallback = 0;  // Byte tokens (<0xXX>): the text is kept as bytes.
  int64_t cache_lookups = 0;  // Pieces looked up in the per-thread piece cache,
  int64_t cache_hits = 0;     // and those found there.
};

// Where a token's text lies in the text it was encoded from: bytes [begin,
// end). Empty for a token that no byte of the text gave (sentencepiece's
// dummy-prefix or later byte-fallback pieces of one character).
struct TokenRange {
  uint32_t begin = 0;
  uint32_t end = 0;
};

class Tokenizer {
 public:
  // Loads the tokenizer file at `path`; errors name the file and, for a
  // tokenizer.json, the unsupported component or bad field.
  static StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& path,
                                                   const TokenizerOptions& options = {});
  // Loads a dataset's copy, already read into `bytes` (`path` names it in
  // errors), as its manifest recorded it (`recorded`: kind, pattern, special
  // tokens, BOS/EOS). DataLoss unless the bytes have the recorded hash,
  // checked before they are parsed; reads no other file.
  static StatusOr<std::unique_ptr<Tokenizer>> FromRecorded(const std::string& bytes,
                                                           const std::string& path,
                                                           const TokenizerInfo& recorded);
  ~Tokenizer();

  // Receives token ids in order, a run at a time (valid during the call only).
  using IdSink = std::function<void(const int* ids, size_t n)>;

  // Replaces *ids with the token ids of `text` (valid UTF-8). `counts`, if
  // given, is overwritten with this call's unknown and byte-fallback tokens.
  // With a `sink`, the ids go to it instead, in runs, and *ids is only the
  // buffer of the current run (empty on return): tokenizer.json and tiktoken
  // files hand over runs of ~16K ids as they are made, so a long text's ids
  // are never all held; sentencepiece hands over one run. ResourceExhausted
  // if memory runs out (encoding needs a few times the text's size,
  // sentencepiece 25 to 45 times); after an error some runs may have gone.
  Status Encode(std::string_view text, std::vector<int>* ids, EncodeCounts* counts = nullptr,
                const IdSink* sink = nullptr) const;
  // As Encode() (the same ids, never those of pieces of the text encoded
  // apart), and *ranges gets each token's bytes in `text`, so that marks on
  // the text (loss spans) can be carried to tokens. The BPE kinds take the
  // ranges from the tokens' bytes, which must spell `text` exactly; a
  // tokenizer whose normalizer or prefix space changes this text is
  // FailedPrecondition, naming the byte where they part (never wrong ranges).
  // sentencepiece takes them from its own alignment of the normalized text
  // (SentencePieceText's begin/end). `text` is below 4 GiB.
  Status EncodeWithOffsets(std::string_view text, std::vector<int>* ids,
                           std::vector<TokenRange>* ranges, EncodeCounts* counts = nullptr) const;
  // Text of `ids` (special tokens as their text).
  StatusOr<std::string> Decode(const std::vector<int>& ids) const;

  // Kind, vocab size, special ids, model hash, the name its copy takes in a
  // dataset (`file`), and for tiktoken the pattern and special tokens.
  const TokenizerInfo& info() const { return info_; }

 private:
  Tokenizer();
  // Load() from bytes already read; `read_config`: whether a tokenizer.json
  // takes its special tokens from the tokenizer_config.json beside `path`.
  static StatusOr<std::unique_ptr<Tokenizer>> FromBytes(const std::string& bytes,
                                                        const std::string& path,
                                                        const TokenizerOptions& o,
                                                        bool read_config);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  TokenizerInfo info_;
};

}  // namespace tokpack

#endif  // TOKPACK_TOKENIZER_H_
