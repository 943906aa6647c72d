// BpeTokenizer: byte-level BPE as Hugging Face tokenizers and tiktoken run it,
// loaded from a tokenizer.json or a tiktoken ranks file, encoding to exactly
// the ids of the reference implementations:
//   tokenizer.json: tokenizers' Tokenizer.encode(text, add_special_tokens=False).ids
//   tiktoken:       tiktoken's Encoding.encode_ordinary(text), given the same
//                   ranks, split pattern and special tokens.
//
// Encode() runs, for tokenizer.json: added tokens that are not normalized are
// split out of the raw text; each remaining segment is normalized and the
// normalized added tokens are split out of it; the pre-tokenizers cut the
// rest into pieces; and each piece is merged by BPE. For tiktoken: the split
// pattern's matches are the pieces (special tokens in the text are ordinary
// text). Pieces are merged with the same algorithm (bpe_merge.h); tiktoken's
// rank of a byte string is modelled as a merge table over all token pairs
// that concatenate to a token, with whole-piece lookup first (ignore_merges).
//
// Thread-safe: all methods are const and may run on many threads at once.
// Each thread keeps a cache of recent pieces (piece_cache.h: 4 MiB, for each
// of the last two tokenizers it used, so at most 8 MiB per thread), so the
// hot path takes no lock and allocates nothing for cached pieces.
//
// Exactness was checked against tokenizers 0.23 and tiktoken 0.14 with
// tests/tokenizer/compare_reference.py. Known differences, all confined to
// characters assigned in recent Unicode versions: the references' Unicode
// data is not utf8proc 2.8's (Unicode 15) or PCRE2 10.42's (Unicode 14).
// Over every code point: NFC/NFD agree everywhere; NFKC/NFKD differ on 134
// code points that tokenizers' older tables leave alone (e.g. U+32FF, Unicode
// 12.1 and later); Lowercase differs on 55 Unicode 16 letters; \p{L}/\p{N}
// differ on scripts newer than Unicode 14 (e.g. Garay, U+10D40..). Oniguruma
// syntax that PCRE2 lacks (e.g. nested classes) is refused at load.
#ifndef TOKPACK_SRC_TOKENIZER_BPE_TOKENIZER_H_
#define TOKPACK_SRC_TOKENIZER_BPE_TOKENIZER_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/added_vocab.h"
#include "tokenizer/flat_map.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/piece_cache.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokpack/status.h"

namespace tokpack {

// The largest token id tokpack accepts. Real vocabularies are dense and far
// smaller; the bound keeps a file with one huge id from sizing the decode
// table to billions of entries.
inline constexpr int kMaxTokenId = (1 << 24) - 1;

// Options a tiktoken ranks file does not carry itself.
struct TiktokenOptions {
  // A regex (fancy-regex syntax) or a preset name (see SplitPatternFor).
  std::string pattern;
  // (text, id) pairs, e.g. {"<|endoftext|>", 100257}. Encode() does not match
  // them in text (encode_ordinary); TokenId() and Decode() know them.
  std::vector<std::pair<std::string, int>> special_tokens;
};

// What one Encode() call produced that does not carry its text exactly.
struct BpeEncodeStats {
  int64_t unk_tokens = 0;            // The model's unk token: the text is lost.
  int64_t byte_fallback_tokens = 0;  // <0xXX> tokens: the text is kept as bytes.
  int64_t dropped_chars = 0;         // Characters with no token, fallback or unk:
                                     // tokenizers drops them silently.
  int64_t cache_lookups = 0;         // Pieces looked up in the piece cache,
  int64_t cache_hits = 0;            // and those it had.
};

class BpeTokenizer {
 public:
  // `json` is the file's contents; `name` (its path) prefixes every error,
  // which also names the field path, e.g. "pre_tokenizer.pretokenizers[0]".
  static StatusOr<std::unique_ptr<BpeTokenizer>> FromHuggingFaceJson(std::string_view json,
                                                                     const std::string& name);
  // `ranks` holds lines "base64(token bytes) rank"; the rank is the id.
  static StatusOr<std::unique_ptr<BpeTokenizer>> FromTiktoken(std::string_view ranks,
                                                              const TiktokenOptions& options,
                                                              const std::string& name);
  ~BpeTokenizer();
  BpeTokenizer(const BpeTokenizer&) = delete;
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

  // Receives ids in order, a run at a time (valid during the call only).
  using IdSink = std::function<void(const int* ids, size_t n)>;

  // Replaces *ids with the ids of `text`, which must be valid UTF-8. `stats`,
  // if given, receives this call's counts (it is overwritten, not added to).
  // With a `sink`, the ids are handed to it in runs of about kSinkRun as
  // pieces are merged, and *ids is only the buffer of the current run (empty
  // on return): a long text's ids are never all held at once.
  Status Encode(std::string_view text, std::vector<int>* ids, BpeEncodeStats* stats = nullptr,
                const IdSink* sink = nullptr) const;
  static constexpr size_t kSinkRun = size_t{1} << 14;

  // The bytes of `ids` concatenated: added and special tokens as their text,
  // vocabulary tokens as their bytes (byte-level tokens mapped back to raw
  // bytes; <0xXX> byte-fallback tokens as the byte). Equals tiktoken's
  // decode_bytes, and tokenizers' decode(ids, skip_special_tokens=False) for
  // byte-level files except that the bytes are not repaired to valid UTF-8.
  StatusOr<std::string> Decode(const std::vector<int>& ids) const;

  // What Decode() gives for one id that is in the vocabulary.
  std::string_view TokenBytes(int id) const { return id_bytes_[static_cast<size_t>(id)]; }

  // Max id + 1 over the vocabulary and the added/special tokens.
  int vocab_size() const { return vocab_size_; }
  // The id of an added/special token or, failing that, of a vocabulary entry,
  // by its text as the file writes it (tokenizer.json: as in model.vocab, e.g.
  // "Ġthe" for byte-level files; tiktoken: the raw bytes). -1 if none.
  int TokenId(std::string_view token_text) const;
  // The model's unk token id (tokenizer.json model.unk_token), or -1.
  int unk_id() const { return unk_id_; }
  // Added tokens of a tokenizer.json (both special and not) or the special
  // tokens of a tiktoken file, by increasing id. tokenizer.json files do not
  // say reliably which is BOS or EOS: the caller picks by content.
  const std::vector<AddedToken>& added_tokens() const { return added_tokens_; }
  // "huggingface" or "tiktoken".
  std::string_view format() const { return tiktoken_ ? "tiktoken" : "huggingface"; }

  // Merge-loop iterations this thread has run, over all tokenizers: lets tests
  // assert that a long piece is merged in O(n log n), not O(n^2).
  static uint64_t MergeStepsForTesting();

 private:
  BpeTokenizer();
  struct ThreadState;
  static ThreadState& ThisThread();
  Status EncodeText(std::string_view text, ThreadState* ts, std::vector<int>* ids,
                    BpeEncodeStats* stats) const;
  Status EncodeSegment(std::string_view segment, ThreadState* ts, std::vector<int>* ids,
                       BpeEncodeStats* stats) const;
  Status RunStage(size_t stage, std::string_view piece, ThreadState* ts, std::vector<int>* ids,
                  BpeEncodeStats* stats) const;
  Status EncodeFinal(std::string_view piece, ThreadState* ts, std::vector<int>* ids,
                     BpeEncodeStats* stats) const;
  Status EncodePiece(std::string_view piece, ThreadState* ts, std::vector<int>* ids,
                     BpeEncodeStats* stats) const;
  // Encodes the matches of `scanner` in `text` (all of them pieces), a batch
  // at a time.
  Status ScanPieces(const SplitScanner& scanner, std::string_view text, ThreadState* ts,
                    std::vector<int>* ids, BpeEncodeStats* stats) const;
  // Whether a piece of `size` bytes goes through the piece cache: not a
  // one-byte piece of a byte-level model (its byte's token), nor one longer
  // than the cache's keys.
  bool Cacheable(size_t size) const {
    return size <= PieceCache::kMaxBytes && !(size == 1 && byte_level_);
  }
  // A piece: its byte's token, else from the cache under `key` (unless
  // null), else EncodeUncached().
  Status EncodeKeyed(std::string_view piece, const PieceCache::Key* key, ThreadState* ts,
                     std::vector<int>* ids, BpeEncodeStats* stats) const;
  // A piece the cache lacks: merged, and stored under `key` unless null.
  Status EncodeUncached(std::string_view piece, const PieceCache::Key* key, ThreadState* ts,
                        std::vector<int>* ids, BpeEncodeStats* stats) const;
  // Whether the last pre-tokenizer stage's pieces go to BPE as they are.
  bool FinalStageIsPiece() const {
    return !byte_level_stage_.present ||
           (!byte_level_stage_.add_prefix_space && byte_level_stage_.regex == nullptr);
  }
  Status AddUnknownUnit(std::string_view unit, std::vector<int>* symbols, int* pending_unk,
                        BpeEncodeStats* stats) const;
  // Records what Decode() gives for `id` (and grows vocab_size_).
  void SetIdBytes(int id, std::string bytes);

  const uint64_t serial_;  // Keys this instance's per-thread piece caches.
  bool tiktoken_ = false;

  // Model. In byte-level mode (ByteLevel pre-tokenizer, or tiktoken) pieces
  // are raw bytes and vocab_ is keyed by raw bytes; otherwise pieces are
  // characters and vocab_ holds the file's strings.
  bool byte_level_ = false;
  bool ignore_merges_ = false;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  std::string unk_token_;  // Empty: none.
  bool has_unk_token_ = false;
  int unk_id_ = -1;
  BytesToIdMap vocab_;
  // The file's strings, for TokenId(). tiktoken: its special tokens only (a
  // rank's string is its bytes, vocab_'s key, so TokenId() looks there next).
  BytesToIdMap literal_vocab_;
  PairMap merges_;
  std::array<int, 256> byte_ids_{};      // Byte-level: id of each single byte, or -1.
  std::array<int, 256> fallback_ids_{};  // Id of "<0xXX>", or -1.
  std::vector<std::string> id_bytes_;    // Decode table; empty string + !has_id_: none.
  std::vector<bool> has_id_;
  int vocab_size_ = 0;

  // Pipeline.
  AddedVocab added_;
  std::vector<AddedToken> added_tokens_;
  Normalizer normalizer_;
  std::vector<PreTokenizerStage> stages_;
  ByteLevelStage byte_level_stage_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_BPE_TOKENIZER_H_
