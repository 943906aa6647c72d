#include "tokenizer/spm_word_encoder.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>

#include "base/utf8.h"
#include "tokenizer/flat_map.h"

namespace tokpack {
namespace {

constexpr std::string_view kSpace = "\xe2\x96\x81";  // U+2581, sentencepiece's escaped space.

constexpr size_t kCacheEntries = size_t{1} << 16;  // 4 MiB per tokenizer per thread.
constexpr size_t kCacheSlots = 2;                  // Tokenizers a thread caches at once.
// Scratch buffers larger than this are freed after each text.
constexpr size_t kKeepScratchBytes = size_t{8} << 20;

std::atomic<uint64_t> next_serial{1};

// Which cut between words no piece spans (see the header): true: before a run
// of spaces; false: after one; none: neither. Pieces that text can hold are
// NORMAL, USER_DEFINED and UNUSED ones (BPE merges through UNUSED pieces);
// CONTROL, UNKNOWN and BYTE pieces are never matched in text. A piece whose
// last character is cut short could end inside a character of the text, so
// it rules out both.
std::optional<bool> ChooseCut(const SpmModel& model) {
  bool before = true, after = true;
  for (const SpmPiece& piece : model.pieces) {
    if (piece.type != SpmPieceType::kNormal && piece.type != SpmPieceType::kUserDefined &&
        piece.type != SpmPieceType::kUnused) {
      continue;
    }
    const std::string_view s = piece.text;
    bool prev_space = false;
    for (size_t i = 0; i < s.size();) {
      const size_t len = SpmCharLen(s[i]);
      if (len > s.size() - i) return std::nullopt;
      const bool space = s.compare(i, len, kSpace) == 0;
      if (i > 0 && space && !prev_space) before = false;
      if (i > 0 && !space && prev_space) after = false;
      prev_space = space;
      i += len;
    }
  }
  if (before) return true;
  if (after) return false;
  return std::nullopt;
}

// Steps through normalized text word by word, character by character as
// sentencepiece steps (so a cut is where its walk has a character start).
class WordCutter {
 public:
  WordCutter(std::string_view text, bool before_space) : text_(text), before_(before_space) {}

  bool Next(std::string_view* word) {
    if (pos_ >= text_.size()) return false;
    const size_t start = pos_;
    bool prev_space = false;
    while (pos_ < text_.size()) {
      const auto c = static_cast<unsigned char>(text_[pos_]);
      const bool space = c == 0xe2 && text_.compare(pos_, kSpace.size(), kSpace) == 0;
      if (pos_ > start && space != prev_space && space == before_) break;
      prev_space = space;
      pos_ += c < 0x80 ? 1 : std::min(SpmCharLen(text_[pos_]), text_.size() - pos_);
    }
    *word = text_.substr(start, pos_ - start);
    return true;
  }

 private:
  std::string_view text_;
  bool before_;
  size_t pos_ = 0;
};

// The largest float not above `x`: a bound that must not grow.
float FloatBelow(double x) {
  const auto f = static_cast<float>(x);
  return f > x ? std::nextafter(f, -INFINITY) : f;
}

template <typename T>
void FreeIfLarge(T* buffer) {
  if (buffer->capacity() * sizeof(typename T::value_type) > kKeepScratchBytes) T().swap(*buffer);
}

}  // namespace

// One word and its ids, one cache line: the word's bytes, then its ids from
// the next 4-byte boundary, in `data`. For a unigram word, also the bound
// below which its path holds (SpmUnigram::Certify; negative: never, run the
// Viterbi); the ids are then its path's edges, whose scores carry the
// Viterbi's score on.
struct SpmWordEncoder::CacheEntry {
  uint32_t hash;  // The word's HashBytes, truncated: a quick mismatch.
  float limit;
  uint8_t key_len;  // 0: empty (words are never empty).
  uint8_t n_ids;
  int32_t data[13];

  static size_t IdsOffset(size_t key_len) { return (key_len + 3) / 4; }
  static bool Fits(size_t key_len, size_t n_ids) {
    return IdsOffset(key_len) + n_ids <= std::size(CacheEntry{}.data);
  }
  // Words this long with one id still fit.
  static constexpr size_t kMaxKey = sizeof(data) - sizeof(int32_t);

  char* key() { return reinterpret_cast<char*>(data); }
  int32_t* ids() { return data + IdsOffset(key_len); }
};

struct SpmWordEncoder::ThreadState {
  static_assert(sizeof(CacheEntry) == 64, "one cache line");

  struct Slot {
    uint64_t owner = 0;  // Serial of the encoder whose words these are; 0: none.
    std::unique_ptr<CacheEntry[]> entries;
  };
  std::array<Slot, kCacheSlots> slots;
  size_t next_victim = 0;
  CacheEntry* cache = nullptr;  // The current encoder's.
  std::string normalized;
  std::vector<int> word_ids;
  std::vector<SpmUnigram::Edge> path;
  SpmUnigram::Scratch scratch;

  void Select(uint64_t serial) {
    for (Slot& s : slots) {
      if (s.owner == serial) {
        cache = s.entries.get();
        return;
      }
    }
    Slot& s = slots[next_victim++ % kCacheSlots];
    if (!s.entries) s.entries.reset(new CacheEntry[kCacheEntries]);
    std::memset(static_cast<void*>(s.entries.get()), 0, sizeof(CacheEntry) * kCacheEntries);
    s.owner = serial;
    cache = s.entries.get();
  }

  // Frees what a huge text grew, so that one does not pin it for the thread's
  // lifetime.
  void Trim() {
    FreeIfLarge(&normalized);
    FreeIfLarge(&word_ids);
    FreeIfLarge(&path);
    FreeIfLarge(&scratch.scores);
    FreeIfLarge(&scratch.exact);
    FreeIfLarge(&scratch.from_begin);
    FreeIfLarge(&scratch.from_id);
  }
};

SpmWordEncoder::ThreadState& SpmWordEncoder::ThisThread() {
  thread_local ThreadState state;
  return state;
}

SpmWordEncoder::SpmWordEncoder(const sentencepiece::SentencePieceProcessor* sp)
    : sp_(sp), serial_(next_serial.fetch_add(1)) {}

SpmWordEncoder::~SpmWordEncoder() = default;

StatusOr<std::unique_ptr<SpmWordEncoder>> SpmWordEncoder::Create(
    const sentencepiece::SentencePieceProcessor* sp, std::string_view model) {
  TOKPACK_ASSIGN_OR_RETURN(SpmModel m, ReadSpmModel(model));
  const std::optional<bool> cut = ChooseCut(m);
  if (m.type == SpmModelType::kOther || !cut) return std::unique_ptr<SpmWordEncoder>();
  std::unique_ptr<SpmWordEncoder> e(new SpmWordEncoder(sp));
  e->cut_before_space_ = *cut;
  e->byte_fallback_ = m.byte_fallback;
  e->unk_id_ = m.unk_id;
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof(piece), "<0x%02X>", b);  // sentencepiece's ByteToPiece().
    e->byte_ids_[b] = sp->PieceToId(piece);
  }
  if (m.type == SpmModelType::kUnigram) {
    e->unigram_ = SpmUnigram::Create(m);
    if (!e->unigram_) return std::unique_ptr<SpmWordEncoder>();
    return e;
  }
  TOKPACK_ASSIGN_OR_RETURN(const std::string identity, WithIdentityNormalizer(model));
  e->word_sp_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
  if (auto st = e->word_sp_->LoadFromSerializedProto(identity); !st.ok()) {
    return InternalError("sentencepiece did not load the model with an identity normalizer (" +
                         st.ToString() + ")");
  }
  return e;
}

Status SpmWordEncoder::EncodeWhole(std::string_view text, std::vector<int>* ids) const {
  // Abseil's string_view is its own class in Debian's build, not std's.
  auto st = sp_->Encode(absl::string_view(text.data(), text.size()), ids);
  if (!st.ok()) return InternalError("sentencepiece Encode failed: " + st.ToString());
  return Status::Ok();
}

Status SpmWordEncoder::Encode(std::string_view text, std::vector<int>* ids) const {
  ThreadState& ts = ThisThread();
  ts.Select(serial_);
  bool whole = false;
  const Status st = EncodeWords(text, &ts, ids, &whole);
  ts.Trim();
  if (st.ok() && whole) return EncodeWhole(text, ids);
  return st;
}

Status SpmWordEncoder::EncodeWords(std::string_view text, ThreadState* tsp, std::vector<int>* ids,
                                   bool* whole) const {
  ThreadState& ts = *tsp;
  ids->clear();
  auto st = sp_->Normalize(absl::string_view(text.data(), text.size()), &ts.normalized);
  if (!st.ok()) return InternalError("sentencepiece Normalize failed: " + st.ToString());
  float base = 0;         // The unigram Viterbi's score at the current word's start.
  bool prev_unk = false;  // The last piece was unknown: a next one adds no id.
  WordCutter words(ts.normalized, cut_before_space_);
  for (std::string_view word; words.Next(&word);) {
    const uint64_t hash = HashBytes(word);
    CacheEntry* entry = nullptr;
    bool hit = false;
    if (word.size() <= CacheEntry::kMaxKey) {
      entry = &ts.cache[hash & (kCacheEntries - 1)];
      hit = entry->hash == static_cast<uint32_t>(hash) && entry->key_len == word.size() &&
            std::memcmp(entry->key(), word.data(), word.size()) == 0;
      if (!hit) {
        entry->key_len = 0;  // Until it holds this word.
        entry->hash = static_cast<uint32_t>(hash);
        std::memcpy(entry->key(), word.data(), word.size());
      }
    }
    IdRun run;
    if (unigram_) {
      run = EncodeUnigramWord(word, entry, hit, &base, &ts);
    } else if (hit) {
      run = {entry->ids(), entry->n_ids};
    } else {
      TOKPACK_ASSIGN_OR_RETURN(const bool encoded, EncodeBpeWord(word, &ts));
      if (!encoded) {
        *whole = true;
        return Status::Ok();
      }
      run = {ts.word_ids.data(), ts.word_ids.size()};
      if (entry && CacheEntry::Fits(word.size(), run.n)) {
        entry->key_len = static_cast<uint8_t>(word.size());
        entry->n_ids = static_cast<uint8_t>(run.n);
        std::copy(run.ids, run.ids + run.n, entry->ids());
      }
    }
    // EncodeOptimized merges a run of unknown pieces into one id (without
    // byte_fallback), across words too.
    for (size_t i = 0; i < run.n; ++i) {
      const bool unk = run.ids[i] == unk_id_ && !byte_fallback_;
      if (!unk || !prev_unk) ids->push_back(run.ids[i]);
      prev_unk = unk;
    }
  }
  return Status::Ok();
}

SpmWordEncoder::IdRun SpmWordEncoder::EncodeUnigramWord(std::string_view word, CacheEntry* entry,
                                                        bool hit, float* base,
                                                        ThreadState* ts) const {
  if (hit && std::fabs(*base) < entry->limit) {
    const int32_t* cached = entry->ids();
    for (uint8_t i = 0; i < entry->n_ids; ++i) *base = unigram_->Score(cached[i]) + *base;
    return {cached, entry->n_ids};
  }
  double limit = -1;
  if (entry && !hit) {
    limit = unigram_->Certify(word, &ts->scratch, &ts->path);
    const std::vector<SpmUnigram::Edge>& path = ts->path;
    // Cached as certain with its edges' ids, which give their scores: not
    // where an unknown character stands for its bytes (byte_fallback).
    const bool certain =
        limit >= 0 && CacheEntry::Fits(word.size(), path.size()) &&
        (!byte_fallback_ ||
         std::none_of(path.begin(), path.end(), [&](const auto& e) { return e.id == unk_id_; }));
    entry->key_len = static_cast<uint8_t>(word.size());
    entry->limit = certain ? FloatBelow(limit) : -1.0f;
    entry->n_ids = static_cast<uint8_t>(certain ? path.size() : 0);
    for (size_t i = 0; i < entry->n_ids; ++i) entry->ids()[i] = path[i].id;
  }
  if (std::fabs(*base) < limit) {
    for (const SpmUnigram::Edge& e : ts->path) *base = unigram_->Score(e.id) + *base;
  } else {
    unigram_->Viterbi(word, base, &ts->scratch, &ts->path);
  }
  EmitPath(word, ts->path, &ts->word_ids);
  return {ts->word_ids.data(), ts->word_ids.size()};
}

StatusOr<bool> SpmWordEncoder::EncodeBpeWord(std::string_view word, ThreadState* ts) const {
  // The identity normalizer leaves valid UTF-8 as it is (it has no character
  // map and does nothing to whitespace; user-defined symbols pass whole) and
  // replaces invalid bytes, which a character map's output may hold.
  if (!IsValidUtf8(word)) return false;
  auto st = word_sp_->Encode(absl::string_view(word.data(), word.size()), &ts->word_ids);
  if (!st.ok()) return InternalError("sentencepiece Encode failed: " + st.ToString());
  return true;
}

void SpmWordEncoder::EmitPath(std::string_view word, const std::vector<SpmUnigram::Edge>& path,
                              std::vector<int>* ids) const {
  ids->clear();
  for (const SpmUnigram::Edge& e : path) {
    if (e.id == unk_id_ && byte_fallback_) {
      for (size_t i = e.begin; i < e.end; ++i) {
        ids->push_back(byte_ids_[static_cast<unsigned char>(word[i])]);
      }
    } else {
      ids->push_back(e.id);
    }
  }
}

}  // namespace tokpack
