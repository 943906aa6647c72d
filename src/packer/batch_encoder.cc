#include "packer/batch_encoder.h"

#include <simdjson.h>

#include <cstring>

#include "common/utf8.h"

namespace tokpack {

struct BatchEncoder::Json {
  simdjson::dom::parser parser;
  std::string scratch;  // The line plus simdjson's required padding.
};

BatchEncoder::BatchEncoder(const Tokenizer* tokenizer, const BuildSettings& settings,
                           TokenDtype dtype)
    : tokenizer_(tokenizer), settings_(settings), dtype_(dtype), json_(std::make_unique<Json>()) {}

BatchEncoder::~BatchEncoder() = default;

std::string BatchEncoder::ExtractText(std::string_view line, std::string_view* text) {
  json_->scratch.assign(line);
  json_->scratch.append(simdjson::SIMDJSON_PADDING, ' ');
  simdjson::dom::element doc;
  auto err = json_->parser.parse(json_->scratch.data(), line.size(), false).get(doc);
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

Status BatchEncoder::Encode(const RawBatch& in, EncodedBatch* out) {
  out->seq = in.seq;
  out->tokens.clear();
  out->doc_tokens.clear();
  out->dropped.clear();
  out->utf8_repaired = 0;
  out->lossy = EncodeCounts();
  const TokenizerInfo& tok = tokenizer_->info();
  for (size_t i = 0; i < in.records.size(); ++i) {
    const RawBatch::Record& rec = in.records[i];
    std::string_view raw = in.text(i);
    auto drop = [&](Drop why, std::string msg) {
      out->dropped.push_back({static_cast<uint32_t>(i), why, std::move(msg), rec.file, rec.line});
    };
    if (rec.kind == RecordKind::kBad) {
      drop(Drop::kBadLine, std::string(raw));
      continue;
    }
    if (!IsValidUtf8(raw)) {
      if (settings_.invalid_utf8 == "error") {
        drop(Drop::kBadLine, "invalid UTF-8");
        continue;
      }
      if (settings_.invalid_utf8 == "skip") {
        drop(Drop::kInvalidUtf8, "");
        continue;
      }
      repaired_ = RepairUtf8(raw);
      raw = repaired_;
    }
    const bool repaired = raw.data() == repaired_.data();
    std::string_view text = raw;
    if (rec.kind == RecordKind::kJsonLine) {
      std::string why = ExtractText(raw, &text);
      if (!why.empty()) {
        drop(Drop::kBadLine, std::move(why));
        continue;
      }
    }
    ids_.clear();
    EncodeCounts lossy;
    TOKPACK_RETURN_IF_ERROR(tokenizer_->Encode(text, &ids_, &lossy));
    if (ids_.empty()) {
      drop(Drop::kEmpty, "");
      continue;
    }
    out->lossy.unknown += lossy.unknown;
    out->lossy.byte_fallback += lossy.byte_fallback;
    if (settings_.add_bos) ids_.insert(ids_.begin(), static_cast<int>(tok.bos_id));
    if (settings_.add_eos) ids_.push_back(static_cast<int>(tok.eos_id));
    const size_t old = out->tokens.size();
    if (dtype_ == TokenDtype::kUInt16) {
      out->tokens.resize(old + 2 * ids_.size());
      char* p = out->tokens.data() + old;
      for (int id : ids_) {
        uint16_t v = static_cast<uint16_t>(id);
        std::memcpy(p, &v, 2);
        p += 2;
      }
    } else {
      out->tokens.resize(old + 4 * ids_.size());
      std::memcpy(out->tokens.data() + old, ids_.data(), 4 * ids_.size());
    }
    out->doc_tokens.push_back(static_cast<uint32_t>(ids_.size()));
    if (repaired) ++out->utf8_repaired;
  }
  return Status::Ok();
}

}  // namespace tokpack
