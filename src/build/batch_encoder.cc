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

// The field `key` of `doc`: a top-level member, or a JSON pointer ("/a/b").
bool Field(simdjson::dom::element doc, const std::string& key, simdjson::dom::element* value) {
  const auto err =
      (!key.empty() && key[0] == '/') ? doc.at_pointer(key).get(*value) : doc[key].get(*value);
  return err == simdjson::SUCCESS;
}

// Sets *id to the record's `key` field, a string or an integer (as decimal
// text), and returns true; false for any other value or none (the record is
// still a document: ids are looked up, not required).
bool ReadId(simdjson::dom::element doc, const std::string& key, std::string* id) {
  simdjson::dom::element value;
  if (!Field(doc, key, &value)) return false;
  std::string_view sv;
  int64_t i;
  uint64_t u;
  if (value.get_string().get(sv) == simdjson::SUCCESS) {
    id->assign(sv);
  } else if (value.get_int64().get(i) == simdjson::SUCCESS) {
    *id = std::to_string(i);
  } else if (value.get_uint64().get(u) == simdjson::SUCCESS) {
    *id = std::to_string(u);
  } else {
    return false;
  }
  return true;
}

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

std::string BatchEncoder::ExtractText(std::string_view line, std::string_view* text, bool* fatal) {
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
  if (!Field(doc, key, &value)) return "missing text key '" + key + "'";
  if (value.get_string().get(*text) != simdjson::SUCCESS) {
    return "text key '" + key + "' is not a string";
  }
  if (settings_.doc_sources) has_id_ = ReadId(doc, settings_.id_key, &id_);
  // Spans: absent or null means none.
  simdjson::dom::element loss, no_loss;
  const bool has_loss = Field(doc, settings_.loss_spans_key, &loss) && !loss.is_null();
  const bool has_no_loss = Field(doc, settings_.no_loss_spans_key, &no_loss) && !no_loss.is_null();
  has_spans_ = has_loss || has_no_loss;
  if (!has_spans_) return std::string();
  const std::string& spans_key = has_loss ? settings_.loss_spans_key : settings_.no_loss_spans_key;
  if (!settings_.loss_masks) {
    *fatal = true;
    return "the record has '" + spans_key +
           "' but the build writes no loss masks: pass --loss-masks (loss_masks=True in "
           "Python) to build masks from it";
  }
  if (has_loss && has_no_loss) {
    return "the record has both '" + settings_.loss_spans_key + "' and '" +
           settings_.no_loss_spans_key + "' (give one)";
  }
  return ReadLossSpans(has_loss ? loss : no_loss, spans_key, *text, /*inverse=*/!has_loss, &loss_);
}

void BatchEncoder::ReleaseScratch() {
  json_ = std::make_unique<Json>();
  std::vector<int>().swap(ids_);
  std::string().swap(repaired_);
  std::vector<ByteSpan>().swap(loss_);
  std::vector<TokenRange>().swap(ranges_);
  std::string().swap(flags_);
}

Status BatchEncoder::Encode(const RawBatch& in, EncodedBatch* out) {
  if (!in.sealed()) return InternalError("BatchEncoder: a RawBatch that is not sealed");
  out->seq = in.seq;
  out->input_bytes = in.data.size();
  out->tokens.clear();
  out->doc_tokens.clear();
  out->loss.clear();
  out->origins.clear();
  out->ids.clear();
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
  has_spans_ = false;
  has_id_ = rec.has_id;
  if (has_id_) id_.assign(in.id(i));
  if (rec.kind == RecordKind::kJsonLine) {
    bool fatal = false;
    std::string why = ExtractText(raw, &text, &fatal);
    if (fatal) {
      drop(Drop::kFailed, std::move(why), StatusCode::kInvalidArgument);
      return false;
    }
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
  EncodeCounts counts;
  if (has_spans_) {
    if (Status s = EncodeWithSpans(text, out, &counts); !s.ok()) {
      out->tokens.resize(old);
      drop(Drop::kFailed, "loss masks: " + s.message(), s.code());
      return false;
    }
  } else {
    if (settings_.add_bos) {
      const int bos = static_cast<int>(tok.bos_id);
      AppendTokens(&bos, 1);
    }
    const uint64_t before_text = doc_tokens_;
    if (Status s = tokenizer_->Encode(text, &ids_, &counts, &sink_); !s.ok()) {
      out->tokens.resize(old);
      drop(Drop::kFailed, s.message(), s.code());
      return false;
    }
    if (doc_tokens_ == before_text) doc_tokens_ = 0;
  }
  if (doc_tokens_ == 0) {
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
  // A masked build's record without spans: every token carries loss.
  if (settings_.loss_masks && !has_spans_) out->loss.append(doc_tokens_, 1);
  out->doc_tokens.push_back(static_cast<uint32_t>(doc_tokens_));
  if (settings_.doc_sources) {
    const auto begin = static_cast<uint32_t>(out->ids.size());
    if (has_id_) out->ids += id_;
    out->origins.push_back(
        {rec.file, rec.line, begin, static_cast<uint32_t>(out->ids.size()), has_id_});
  }
  if (repaired) ++out->utf8_repaired;
  return true;
}

Status BatchEncoder::EncodeWithSpans(std::string_view text, EncodedBatch* out,
                                     EncodeCounts* counts) {
  // The whole text at once (never its spans apart): the ids are exactly
  // those of a build without masks; only the ranges are extra.
  TOKPACK_RETURN_IF_ERROR(tokenizer_->EncodeWithOffsets(text, &ids_, &ranges_, counts));
  if (ids_.empty()) return Status::Ok();
  flags_.resize(ids_.size());
  TokenLossFlags(ranges_, loss_, text.size(), flags_.data());
  const TokenizerInfo& tok = tokenizer_->info();
  // BOS teaches nothing unless the whole document is trained on; EOS ends
  // what the last token began, so an assistant turn that ends the document
  // learns to stop.
  if (settings_.add_bos) {
    const int bos = static_cast<int>(tok.bos_id);
    AppendTokens(&bos, 1);
    out->loss += static_cast<char>(flags_.find('\0') == std::string::npos);
  }
  AppendTokens(ids_.data(), ids_.size());
  out->loss += flags_;
  if (settings_.add_eos) out->loss += flags_.back();
  return Status::Ok();
}

}  // namespace tokpack
