#include "build/batch_encoder.h"

#include <simdjson.h>

#include <cstring>

#include "base/utf8.h"

namespace tokpack {
namespace {

static_assert(RawBatch::kPadding >= simdjson::SIMDJSON_PADDING,
              "records are parsed in place, so the batch pads them for simdjson");

// Scratch grown by a record larger than this is freed after it, so that one
// huge document does not pin its buffers for the thread's lifetime.
constexpr size_t kKeepScratchBytes = size_t{8} << 20;

}  // namespace

struct BatchEncoder::Json {
  simdjson::dom::parser parser;
};

BatchEncoder::BatchEncoder(const Tokenizer* tokenizer, const BuildSettings& settings,
                           TokenDtype dtype)
    : tokenizer_(tokenizer),
      settings_(settings),
      dtype_(dtype),
      json_(std::make_unique<Json>()),
      sink_([this](const int* ids, size_t n) { AppendTokens(ids, n); }) {}

BatchEncoder::~BatchEncoder() = default;

std::string BatchEncoder::ExtractText(std::string_view line, std::string_view* text) {
  // In place: the sealed batch has RawBatch::kPadding readable bytes after
  // every record.
  simdjson::dom::element doc;
  auto err = json_->parser.parse(line.data(), line.size(), false).get(doc);
  if (err != simdjson::SUCCESS) {
    return std::string("malformed JSON (") + simdjson::error_message(err) + ")";
  }
  if (!doc.is_object()) return "the line is JSON but not an object";
  const std::string& key = settings_.text_key;
  simdjson::dom::element value;
  err = (!key.empty() && key[0] == '/') ? doc.at_pointer(key).get(value) : doc[key].get(value);
  if (err != simdjson::SUCCESS) return "missing text key '" + key + "'";
  if (value.get_string().get(*text) != simdjson::SUCCESS) {
    return "text key '" + key + "' is not a string";
  }
  return std::string();
}

void BatchEncoder::ReleaseScratch() {
  json_ = std::make_unique<Json>();
  std::vector<int>().swap(ids_);
  std::string().swap(repaired_);
}

Status BatchEncoder::Encode(const RawBatch& in, EncodedBatch* out) {
  if (!in.sealed()) return InternalError("BatchEncoder: a RawBatch that is not sealed");
  out->seq = in.seq;
  out->input_bytes = in.data.size();
  out->tokens.clear();
  out->doc_tokens.clear();
  out->dropped.clear();
  out->utf8_repaired = 0;
  out->counts = EncodeCounts();
  for (size_t i = 0; i < in.records.size(); ++i) {
    const bool big = in.text(i).size() > kKeepScratchBytes;
    const bool failed = !EncodeRecord(in, i, out);
    if (big) ReleaseScratch();
    if (failed) break;  // The build fails on this record; the rest do not matter.
  }
  return Status::Ok();
}

void BatchEncoder::AppendTokens(const int* ids, size_t n) {
  const size_t old = tokens_out_->size();
  if (dtype_ == TokenDtype::kUInt16) {
    tokens_out_->resize(old + 2 * n);
    char* p = tokens_out_->data() + old;
    for (size_t i = 0; i < n; ++i) {
      const auto v = static_cast<uint16_t>(ids[i]);
      std::memcpy(p + 2 * i, &v, 2);
    }
  } else {
    tokens_out_->resize(old + 4 * n);
    std::memcpy(tokens_out_->data() + old, ids, 4 * n);
  }
  doc_tokens_ += n;
}

bool BatchEncoder::EncodeRecord(const RawBatch& in, size_t i, EncodedBatch* out) {
  const RawBatch::Record& rec = in.records[i];
  std::string_view raw = in.text(i);
  auto drop = [&](Drop why, std::string msg, StatusCode code = StatusCode::kOk) {
    out->dropped.push_back(
        {static_cast<uint32_t>(i), why, std::move(msg), code, rec.file, rec.line});
  };
  if (rec.kind == RecordKind::kBad) {
    drop(Drop::kBadLine, std::string(raw));
    return true;
  }
  if (!IsValidUtf8(raw)) {
    if (settings_.invalid_utf8 == "error") {
      drop(Drop::kBadLine, "invalid UTF-8");
      return true;
    }
    if (settings_.invalid_utf8 == "skip") {
      drop(Drop::kInvalidUtf8, "");
      return true;
    }
    // Padded like a sealed batch, to be parsed in place too.
    repaired_ = RepairUtf8(raw);
    repaired_.append(RawBatch::kPadding, ' ');
    raw = std::string_view(repaired_).substr(0, repaired_.size() - RawBatch::kPadding);
  }
  const bool repaired = raw.data() == repaired_.data();
  std::string_view text = raw;
  if (rec.kind == RecordKind::kJsonLine) {
    std::string why = ExtractText(raw, &text);
    if (!why.empty()) {
      drop(Drop::kBadLine, std::move(why));
      return true;
    }
  }
  // The ids stream from the tokenizer straight into the shard dtype.
  const TokenizerInfo& tok = tokenizer_->info();
  const size_t old = out->tokens.size();
  if (text.size() > kKeepScratchBytes) {
    // Room for the usual most tokens (one per byte), so that the buffer is
    // not grown by copying, which would briefly hold it twice. Only what is
    // written is resident.
    out->tokens.reserve(old + TokenDtypeSize(dtype_) * (text.size() + 2));
  }
  tokens_out_ = &out->tokens;
  doc_tokens_ = 0;
  if (settings_.add_bos) {
    const int bos = static_cast<int>(tok.bos_id);
    AppendTokens(&bos, 1);
  }
  const uint64_t before_text = doc_tokens_;
  EncodeCounts counts;
  if (Status s = tokenizer_->Encode(text, &ids_, &counts, &sink_); !s.ok()) {
    out->tokens.resize(old);
    drop(Drop::kFailed, s.message(), s.code());
    return false;
  }
  if (doc_tokens_ == before_text) {
    out->tokens.resize(old);
    drop(Drop::kEmpty, "");
    return true;
  }
  out->counts.unknown += counts.unknown;
  out->counts.byte_fallback += counts.byte_fallback;
  out->counts.cache_lookups += counts.cache_lookups;
  out->counts.cache_hits += counts.cache_hits;
  if (settings_.add_eos) {
    const int eos = static_cast<int>(tok.eos_id);
    AppendTokens(&eos, 1);
  }
  out->doc_tokens.push_back(static_cast<uint32_t>(doc_tokens_));
  if (repaired) ++out->utf8_repaired;
  return true;
}

}  // namespace tokpack
