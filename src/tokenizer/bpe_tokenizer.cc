#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>

#include "base/quote.h"
#include "base/utf8.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/piece_cache.h"
#include "tokenizer/unicode.h"

namespace tokpack {
namespace {

// Merge buffers larger than this are freed after use.
constexpr size_t kKeepScratchSymbols = size_t{1} << 20;
// Text buffers and split lists larger than this are freed after each text.
constexpr size_t kKeepScratchBytes = size_t{8} << 20;

template <typename T>
void FreeIfLarge(T* buffer) {
  if (buffer->capacity() * sizeof(typename T::value_type) > kKeepScratchBytes) T().swap(*buffer);
}
constexpr size_t kCacheSlots = 2;  // Tokenizers a thread caches at once.

struct OwnedCache {
  uint64_t owner = 0;  // Serial of the tokenizer whose pieces these are; 0: none.
  PieceCache cache;
};
// Pieces a scanner hands over at once: their cache slots are prefetched together.
constexpr size_t kScanBatch = 32;

std::atomic<uint64_t> next_serial{1};

}  // namespace

struct BpeTokenizer::ThreadState {
  std::array<OwnedCache, kCacheSlots> caches;
  size_t next_victim = 0;
  PieceCache* cache = nullptr;  // The current tokenizer's.
  std::vector<int> symbols;
  MergeScratch merge;
  std::vector<AddedSplit> raw_splits, normalized_splits;
  std::string normalized, prefixed, unit;
  std::vector<std::vector<SplitEvent>> events;                // Per stage.
  std::vector<std::vector<std::pair<size_t, size_t>>> spans;  // Per stage.
  const IdSink* sink = nullptr;  // Of the Encode() call running, if it streams.

  // Hands the ids so far to the sink once there are at least `min` of them.
  void Flush(std::vector<int>* ids, size_t min) {
    if (sink == nullptr || ids->empty() || ids->size() < min) return;
    (*sink)(ids->data(), ids->size());
    ids->clear();
  }

  void Select(uint64_t serial) {
    for (OwnedCache& c : caches) {
      if (c.owner == serial) {
        cache = &c.cache;
        return;
      }
    }
    OwnedCache& c = caches[next_victim++ % kCacheSlots];
    c.cache.Clear();
    c.owner = serial;
    cache = &c.cache;
  }

  // Frees what a huge text grew, so that one does not pin its buffers for the
  // thread's lifetime.
  void Trim() {
    FreeIfLarge(&raw_splits);
    FreeIfLarge(&normalized_splits);
    FreeIfLarge(&normalized);
    FreeIfLarge(&prefixed);
    for (auto& e : events) FreeIfLarge(&e);
    for (auto& s : spans) FreeIfLarge(&s);
  }
};

BpeTokenizer::ThreadState& BpeTokenizer::ThisThread() {
  thread_local ThreadState state;
  return state;
}

uint64_t BpeTokenizer::MergeStepsForTesting() { return ThisThread().merge.steps; }

BpeTokenizer::BpeTokenizer() : serial_(next_serial.fetch_add(1)) {
  byte_ids_.fill(-1);
  fallback_ids_.fill(-1);
}
BpeTokenizer::~BpeTokenizer() = default;

Status BpeTokenizer::Encode(std::string_view text, std::vector<int>* ids, BpeEncodeStats* stats,
                            const IdSink* sink) const {
  ids->clear();
  BpeEncodeStats local;
  if (stats == nullptr) stats = &local;
  *stats = BpeEncodeStats();
  if (!IsValidUtf8(text)) return InvalidArgumentError("text to encode is not valid UTF-8");
  if (text.empty()) return Status::Ok();
  ThreadState& ts = ThisThread();
  ts.Select(serial_);
  if (ts.events.size() < stages_.size()) {
    ts.events.resize(stages_.size());
    ts.spans.resize(stages_.size());
  }
  ts.sink = sink;
  Status status = EncodeText(text, &ts, ids, stats);
  if (status.ok()) ts.Flush(ids, 1);
  ts.sink = nullptr;
  ts.Trim();
  return status;
}

Status BpeTokenizer::EncodeText(std::string_view text, ThreadState* ts, std::vector<int>* ids,
                                BpeEncodeStats* stats) const {
  if (tiktoken_ || added_.empty(AddedVocab::Set::kRaw)) {
    return EncodeSegment(text, ts, ids, stats);
  }
  added_.Split(AddedVocab::Set::kRaw, text, &ts->raw_splits);
  for (const AddedSplit& s : ts->raw_splits) {
    if (s.id >= 0) {
      ids->push_back(s.id);
    } else {
      TOKPACK_RETURN_IF_ERROR(EncodeSegment(text.substr(s.start, s.end - s.start), ts, ids, stats));
    }
  }
  return Status::Ok();
}

Status BpeTokenizer::EncodeSegment(std::string_view segment, ThreadState* ts, std::vector<int>* ids,
                                   BpeEncodeStats* stats) const {
  std::string_view text = segment;
  if (!normalizer_.empty()) {
    TOKPACK_RETURN_IF_ERROR(normalizer_.Apply(segment, &ts->normalized));
    text = ts->normalized;
  }
  if (text.empty()) return Status::Ok();
  if (added_.empty(AddedVocab::Set::kNormalized)) return RunStage(0, text, ts, ids, stats);
  added_.Split(AddedVocab::Set::kNormalized, text, &ts->normalized_splits);
  for (const AddedSplit& s : ts->normalized_splits) {
    if (s.id >= 0) {
      ids->push_back(s.id);
    } else {
      TOKPACK_RETURN_IF_ERROR(RunStage(0, text.substr(s.start, s.end - s.start), ts, ids, stats));
    }
  }
  return Status::Ok();
}

Status BpeTokenizer::RunStage(size_t stage, std::string_view piece, ThreadState* ts,
                              std::vector<int>* ids, BpeEncodeStats* stats) const {
  if (stage == stages_.size()) return EncodeFinal(piece, ts, ids, stats);
  const PreTokenizerStage& st = stages_[stage];
  if (st.kind == PreTokenizerStage::Kind::kSplit && st.regex->scanner() != nullptr &&
      stage + 1 == stages_.size() && FinalStageIsPiece() &&
      (st.behavior == SplitBehavior::kIsolated ||
       (st.behavior == SplitBehavior::kRemoved && st.invert))) {
    // The scanner's matches tile the piece and every one is kept.
    return ScanPieces(*st.regex->scanner(), piece, ts, ids, stats);
  }
  if (st.kind == PreTokenizerStage::Kind::kSplit &&
      (st.behavior == SplitBehavior::kIsolated || st.behavior == SplitBehavior::kRemoved)) {
    // These behaviours never join parts: stream them (the common case, and
    // tiktoken's), without the event list the folds need.
    const bool removed = st.behavior == SplitBehavior::kRemoved;
    Status status;
    size_t prev = 0;
    auto emit = [&](size_t s, size_t e, bool is_match) {
      if (s >= e || !status.ok() || (removed && is_match)) return;
      status = RunStage(stage + 1, piece.substr(s, e - s), ts, ids, stats);
    };
    TOKPACK_RETURN_IF_ERROR(st.regex->ForEachMatch(piece, [&](size_t s, size_t e) {
      emit(prev, s, st.invert);
      emit(s, e, !st.invert);
      prev = e;
    }));
    emit(prev, piece.size(), st.invert);
    return status;
  }
  if (st.kind == PreTokenizerStage::Kind::kDigits) {
    // Streamed too, so a long run of digits needs no per-digit event list.
    // Contiguous: cut where numeric and non-numeric characters meet;
    // Isolated: also between two numeric characters.
    const bool isolated = st.behavior == SplitBehavior::kIsolated;
    size_t start = 0;
    bool prev_numeric = false;
    for (size_t i = 0; i < piece.size();) {
      size_t len = 0;
      const bool numeric = IsNumeric(DecodeUtf8(piece, i, &len));
      if (i > start && (numeric != prev_numeric || (numeric && isolated))) {
        TOKPACK_RETURN_IF_ERROR(
            RunStage(stage + 1, piece.substr(start, i - start), ts, ids, stats));
        start = i;
      }
      prev_numeric = numeric;
      i += len;
    }
    if (start < piece.size()) {
      TOKPACK_RETURN_IF_ERROR(RunStage(stage + 1, piece.substr(start), ts, ids, stats));
    }
    return Status::Ok();
  }
  std::vector<SplitEvent>& events = ts->events[stage];
  std::vector<std::pair<size_t, size_t>>& spans = ts->spans[stage];
  TOKPACK_RETURN_IF_ERROR(st.Events(piece, &events));
  spans.clear();
  ApplySplitBehavior(events, st.behavior, &spans);
  for (const auto& [start, end] : spans) {
    TOKPACK_RETURN_IF_ERROR(RunStage(stage + 1, piece.substr(start, end - start), ts, ids, stats));
  }
  return Status::Ok();
}

Status BpeTokenizer::EncodeFinal(std::string_view piece, ThreadState* ts, std::vector<int>* ids,
                                 BpeEncodeStats* stats) const {
  if (!byte_level_stage_.present) return EncodePiece(piece, ts, ids, stats);
  std::string_view p = piece;
  if (byte_level_stage_.add_prefix_space && p[0] != ' ') {
    ts->prefixed.assign(" ");
    ts->prefixed.append(piece);
    p = ts->prefixed;
  }
  if (byte_level_stage_.regex == nullptr) return EncodePiece(p, ts, ids, stats);
  if (byte_level_stage_.regex->scanner() != nullptr) {
    return ScanPieces(*byte_level_stage_.regex->scanner(), p, ts, ids, stats);
  }
  // Isolated: matches and the text between them are pieces alike.
  Status status;
  size_t prev = 0;
  auto emit = [&](size_t s, size_t e) {
    if (s < e && status.ok()) status = EncodePiece(p.substr(s, e - s), ts, ids, stats);
  };
  TOKPACK_RETURN_IF_ERROR(byte_level_stage_.regex->ForEachMatch(p, [&](size_t s, size_t e) {
    emit(prev, s);
    emit(s, e);
    prev = e;
  }));
  emit(prev, p.size());
  return status;
}

Status BpeTokenizer::AddUnknownUnit(std::string_view unit, std::vector<int>* symbols,
                                    int* pending_unk, BpeEncodeStats* stats) const {
  // tokenizers' merge_word: byte fallback first (which, as there, does not
  // flush a pending unk), then unk (fused with a pending one if fuse_unk),
  // else the character is dropped.
  if (byte_fallback_) {
    bool all = true;
    for (char c : unit) all = all && fallback_ids_[static_cast<unsigned char>(c)] >= 0;
    if (all) {
      for (char c : unit) symbols->push_back(fallback_ids_[static_cast<unsigned char>(c)]);
      stats->byte_fallback_tokens += static_cast<int64_t>(unit.size());
      return Status::Ok();
    }
  }
  if (!has_unk_token_) {
    ++stats->dropped_chars;
    return Status::Ok();
  }
  if (unk_id_ < 0) {
    return InvalidArgumentError("model.unk_token " + Quoted(unk_token_) +
                                " is needed but is not in model.vocab");
  }
  if (*pending_unk && !fuse_unk_) {
    symbols->push_back(unk_id_);
    ++stats->unk_tokens;
  }
  *pending_unk = 1;
  return Status::Ok();
}

Status BpeTokenizer::ScanPieces(const SplitScanner& scanner, std::string_view text, ThreadState* ts,
                                std::vector<int>* ids, BpeEncodeStats* stats) const {
  size_t ends[kScanBatch];
  PieceCache::Key keys[kScanBatch];
  const char* const end = text.data() + text.size();
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = scanner.Scan(text, pos, ends, kScanBatch);
    // Compute the batch's keys and prefetch their slots, so that the lookups
    // below do not wait on memory one piece at a time.
    for (size_t k = 0, s = pos; k < n; s = ends[k++]) {
      if (!Cacheable(ends[k] - s)) continue;
      keys[k] = PieceCache::KeyOf(text.data() + s, ends[k] - s, end);
      ts->cache->Prefetch(keys[k]);
    }
    ts->Flush(ids, kSinkRun);
    // Room for the batch's cached ids, so that appending them never grows.
    const size_t room = kScanBatch * PieceCache::kMaxIds;
    if (ids->capacity() - ids->size() < room) ids->reserve(2 * ids->capacity() + room);
    for (size_t k = 0, s = pos; k < n; s = ends[k++]) {
      const std::string_view piece = text.substr(s, ends[k] - s);
      TOKPACK_RETURN_IF_ERROR(
          EncodeKeyed(piece, Cacheable(piece.size()) ? &keys[k] : nullptr, ts, ids, stats));
    }
    pos = ends[n - 1];
  }
  return Status::Ok();
}

Status BpeTokenizer::EncodePiece(std::string_view piece, ThreadState* ts, std::vector<int>* ids,
                                 BpeEncodeStats* stats) const {
  // Every piece passes here or through ScanPieces: where a streaming Encode()
  // hands a run on.
  ts->Flush(ids, kSinkRun);
  if (!Cacheable(piece.size())) return EncodeKeyed(piece, nullptr, ts, ids, stats);
  if (ids->capacity() - ids->size() < PieceCache::kMaxIds) ids->reserve(2 * ids->capacity() + 16);
  const PieceCache::Key key =
      PieceCache::KeyOf(piece.data(), piece.size(), piece.data() + piece.size());
  return EncodeKeyed(piece, &key, ts, ids, stats);
}

Status BpeTokenizer::EncodeKeyed(std::string_view piece, const PieceCache::Key* key,
                                 ThreadState* ts, std::vector<int>* ids,
                                 BpeEncodeStats* stats) const {
  if (piece.size() == 1 && byte_level_) {
    // A one-byte piece is its byte's token (a merge needs two symbols): no
    // hashing. Punctuation and spaces make these common.
    const int id = byte_ids_[static_cast<unsigned char>(piece[0])];
    if (id >= 0) {
      ids->push_back(id);
      return Status::Ok();
    }
  }
  if (key != nullptr) {
    ++stats->cache_lookups;
    if (ts->cache->Lookup(*key, ids)) {
      ++stats->cache_hits;
      return Status::Ok();
    }
  }
  return EncodeUncached(piece, key, ts, ids, stats);
}

Status BpeTokenizer::EncodeUncached(std::string_view piece, const PieceCache::Key* key,
                                    ThreadState* ts, std::vector<int>* ids,
                                    BpeEncodeStats* stats) const {
  auto remember = [&](const int* begin, size_t n) {
    if (key != nullptr) ts->cache->Store(*key, begin, n);
  };
  if (ignore_merges_) {
    int id = vocab_.Find(piece);
    if (id >= 0) {
      ids->push_back(id);
      remember(&id, 1);
      return Status::Ok();
    }
  }
  std::vector<int>& symbols = ts->symbols;
  symbols.clear();
  bool clean = true;  // Only pieces without unknowns are cached, so stats stay exact.
  int pending_unk = 0;
  auto known = [&](int id) {
    if (pending_unk) {
      symbols.push_back(unk_id_);
      ++stats->unk_tokens;
      pending_unk = 0;
    }
    symbols.push_back(id);
  };
  if (byte_level_) {
    for (char c : piece) {
      auto b = static_cast<unsigned char>(c);
      if (byte_ids_[b] >= 0) {
        known(byte_ids_[b]);
        continue;
      }
      clean = false;
      if (tiktoken_) {
        static const char kHex[] = "0123456789abcdef";
        return InvalidArgumentError(std::string("the tiktoken file has no rank for byte 0x") +
                                    kHex[b >> 4] + kHex[b & 15]);
      }
      // The unit tokenizers sees is the byte's stand-in character.
      ts->unit.clear();
      AppendUtf8(ByteLevelCodepoint(b), &ts->unit);
      TOKPACK_RETURN_IF_ERROR(AddUnknownUnit(ts->unit, &symbols, &pending_unk, stats));
    }
  } else {
    for (size_t i = 0; i < piece.size();) {
      size_t len = 0;
      DecodeUtf8(piece, i, &len);
      std::string_view unit = piece.substr(i, len);
      i += len;
      int id = vocab_.Find(unit);
      if (id >= 0) {
        known(id);
        continue;
      }
      clean = false;
      TOKPACK_RETURN_IF_ERROR(AddUnknownUnit(unit, &symbols, &pending_unk, stats));
    }
  }
  if (pending_unk) {
    symbols.push_back(unk_id_);
    ++stats->unk_tokens;
  }
  MergeSymbols(merges_, &symbols, &ts->merge);
  ids->insert(ids->end(), symbols.begin(), symbols.end());
  if (clean) remember(symbols.data(), symbols.size());
  if (symbols.capacity() > kKeepScratchSymbols) {
    // A huge piece (a long run without boundaries) grew the buffers to
    // hundreds of MB; do not hold that for the thread's lifetime.
    std::vector<int>().swap(symbols);
    const uint64_t steps = ts->merge.steps;
    ts->merge = MergeScratch();
    ts->merge.steps = steps;
  }
  return Status::Ok();
}

StatusOr<std::string> BpeTokenizer::Decode(const std::vector<int>& ids) const {
  std::string out;
  for (int id : ids) {
    if (id < 0 || id >= vocab_size_ || !has_id_[id]) {
      return OutOfRangeError("token id " + std::to_string(id) + " is not in the vocabulary (size " +
                             std::to_string(vocab_size_) + ")");
    }
    out += id_bytes_[id];
  }
  return out;
}

int BpeTokenizer::TokenId(std::string_view token_text) const {
  const int id = literal_vocab_.Find(token_text);
  return id >= 0 || !tiktoken_ ? id : vocab_.Find(token_text);
}

void BpeTokenizer::SetIdBytes(int id, std::string bytes) {
  if (static_cast<size_t>(id) >= id_bytes_.size()) {
    id_bytes_.resize(static_cast<size_t>(id) + 1);
    has_id_.resize(static_cast<size_t>(id) + 1, false);
  }
  id_bytes_[id] = std::move(bytes);
  has_id_[id] = true;
  vocab_size_ = static_cast<int>(id_bytes_.size());
}

}  // namespace tokpack
