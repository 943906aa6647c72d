#include "tokpack/manifest.h"

#include <simdjson.h>
#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "base/file_system.h"
#include "base/json_reader.h"
#include "format/dataset_path.h"
#include "format/idx_file.h"
#include "format/loss_mask.h"
#include "tokpack/json_writer.h"

namespace tokpack {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

// `s` for an error message: control characters escaped, at most 200 bytes.
std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 200)) {
    if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 200) out += "...";
  return out;
}

// A path of a dataset member: CheckDatasetPath's rule (empty allowed only
// with `allow_empty`).
Status GetDatasetPath(const JsonReader& r, std::string_view key, bool allow_empty,
                      std::string* out) {
  TOKPACK_RETURN_IF_ERROR(r.Get(key, out));
  if (allow_empty && out->empty()) return Status::Ok();
  Status s = CheckDatasetPath(*out);
  if (s.ok()) return s;
  return r.Error(key, "('" + Printable(*out) + "') " + s.message());
}

// `s` as a hash of field `key` of `r` (which may carry an index).
Status ParseHash(const JsonReader& r, std::string_view key, const std::string& s, uint64_t* out) {
  if (s.size() != 16 || s.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return r.Error(key, "is not 16 lowercase hex digits");
  }
  *out = std::strtoull(s.c_str(), nullptr, 16);
  return Status::Ok();
}

Status GetHash(const JsonReader& r, std::string_view key, uint64_t* out) {
  std::string s;
  TOKPACK_RETURN_IF_ERROR(r.Get(key, &s));
  return ParseHash(r, key, s, out);
}

Status ReadDigest(const JsonReader& r, std::string_view key, uint64_t chunk_bytes,
                  FileDigest* out) {
  JsonReader f;
  TOKPACK_RETURN_IF_ERROR(r.Object(key, &f));
  TOKPACK_RETURN_IF_ERROR(f.Get("bytes", &out->bytes));
  simdjson::dom::array arr;
  TOKPACK_RETURN_IF_ERROR(f.Array("xxh3_64", &arr));
  size_t i = 0;
  for (element e : arr) {
    std::string_view sv;
    const std::string key_i = "xxh3_64[" + std::to_string(i++) + "]";
    if (e.get_string().get(sv) != simdjson::SUCCESS) return f.Error(key_i, "is not a string");
    uint64_t h;
    TOKPACK_RETURN_IF_ERROR(ParseHash(f, key_i, std::string(sv), &h));
    out->chunk_xxh3.push_back(h);
  }
  // Without overflow: chunk_bytes is at most kMaxChunkBytes, bytes anything.
  const uint64_t want = out->bytes / chunk_bytes + (out->bytes % chunk_bytes != 0 ? 1 : 0);
  if (out->chunk_xxh3.size() != want) {
    return f.Error("xxh3_64", "has " + std::to_string(out->chunk_xxh3.size()) +
                                  " checksums, expected " + std::to_string(want) + " for " +
                                  std::to_string(out->bytes) + " bytes");
  }
  return Status::Ok();
}

Status ReadSettings(const JsonReader& p, BuildSettings* s) {
  JsonReader r;
  TOKPACK_RETURN_IF_ERROR(p.Object("settings", &r));
  TOKPACK_RETURN_IF_ERROR(r.Get("text_key", &s->text_key));
  TOKPACK_RETURN_IF_ERROR(r.Get("input_format", &s->input_format));
  TOKPACK_RETURN_IF_ERROR(r.Get("text_per_line", &s->text_per_line));
  TOKPACK_RETURN_IF_ERROR(r.Get("bos", &s->add_bos));
  TOKPACK_RETURN_IF_ERROR(r.Get("eos", &s->add_eos));
  TOKPACK_RETURN_IF_ERROR(r.Get("invalid_utf8", &s->invalid_utf8));
  TOKPACK_RETURN_IF_ERROR(r.Get("skip_bad_lines", &s->skip_bad_lines));
  TOKPACK_RETURN_IF_ERROR(r.Get("shard_tokens", &s->shard_tokens));
  // Written by builds with document sources only.
  TOKPACK_RETURN_IF_ERROR(r.GetOr("doc_sources", false, &s->doc_sources));
  if (s->doc_sources) TOKPACK_RETURN_IF_ERROR(r.Get("id_key", &s->id_key));
  // Written by builds with loss masks only.
  TOKPACK_RETURN_IF_ERROR(r.GetOr("loss_masks", false, &s->loss_masks));
  if (!s->loss_masks) return Status::Ok();
  TOKPACK_RETURN_IF_ERROR(r.Get("loss_spans_key", &s->loss_spans_key));
  return r.Get("no_loss_spans_key", &s->no_loss_spans_key);
}

void WriteInput(JsonWriter* w, const InputRecord& in) {
  w->BeginObject();
  w->String("path", in.path);
  w->UInt("bytes", in.bytes);
  if (!in.whole_file()) {
    w->UInt("row_group_begin", in.row_group_begin);
    w->UInt("row_group_end", in.row_group_end);
  }
  w->EndObject();
}

Status ReadInput(const JsonReader& in, std::string_view source, InputRecord* rec) {
  TOKPACK_RETURN_IF_ERROR(in.Get("path", &rec->path));
  TOKPACK_RETURN_IF_ERROR(in.Get("bytes", &rec->bytes));
  if (in.Has("row_group_begin") || in.Has("row_group_end")) {
    uint64_t begin = 0, end = 0;
    TOKPACK_RETURN_IF_ERROR(in.Get("row_group_begin", &begin));
    TOKPACK_RETURN_IF_ERROR(in.Get("row_group_end", &end));
    if (begin >= end || end > UINT32_MAX) {
      return InvalidArgumentError(std::string(source) + ": input '" + rec->path +
                                  "': row groups [" + std::to_string(begin) + ", " +
                                  std::to_string(end) + ") are not a range");
    }
    rec->row_group_begin = static_cast<uint32_t>(begin);
    rec->row_group_end = static_cast<uint32_t>(end);
  }
  return Status::Ok();
}

// One input as the side file's line: one-line JSON ending in "\n".
std::string InputLine(const InputRecord& in) {
  JsonWriter w(JsonWriter::Layout::kOneLine);
  WriteInput(&w, in);
  return w.str();
}

// provenance.input_counts: optional, one object per input.
Status ReadInputCounts(const JsonReader& r, Provenance* p) {
  if (!r.Has("input_counts")) return Status::Ok();
  simdjson::dom::array arr;
  TOKPACK_RETURN_IF_ERROR(r.Array("input_counts", &arr));
  for (element e : arr) {
    if (p->input_counts.size() == p->InputTotal()) break;  // Too many: refused below.
    object o;
    if (e.get_object().get(o) != simdjson::SUCCESS) {
      return r.Error("input_counts", "holds a non-object");
    }
    JsonReader in(o, "provenance.input_counts[]", r.source());
    InputCounts c;
    TOKPACK_RETURN_IF_ERROR(in.Get("documents", &c.documents));
    TOKPACK_RETURN_IF_ERROR(in.Get("skipped_empty", &c.skipped_empty));
    TOKPACK_RETURN_IF_ERROR(in.Get("bad_lines", &c.bad_lines));
    TOKPACK_RETURN_IF_ERROR(in.Get("skipped_invalid_utf8", &c.skipped_invalid_utf8));
    p->input_counts.push_back(c);
  }
  // simdjson's size() saturates, so the entries are counted as read.
  uint64_t entries = 0;
  for (element e : arr) {
    (void)e;
    ++entries;
  }
  if (entries != p->InputTotal()) {
    return r.Error("input_counts", "has " + std::to_string(entries) + " entries for " +
                                       std::to_string(p->InputTotal()) + " inputs");
  }
  return Status::Ok();
}

Status ReadProvenance(const JsonReader& root, Provenance* p) {
  JsonReader r;
  TOKPACK_RETURN_IF_ERROR(root.Object("provenance", &r));
  TOKPACK_RETURN_IF_ERROR(r.Get("tool", &p->tool));
  TOKPACK_RETURN_IF_ERROR(r.Get("version", &p->version));
  TOKPACK_RETURN_IF_ERROR(r.Get("kind", &p->kind));
  JsonReader part;
  TOKPACK_RETURN_IF_ERROR(r.Object("part", &part));
  TOKPACK_RETURN_IF_ERROR(part.Get("index", &p->part_index));
  TOKPACK_RETURN_IF_ERROR(part.Get("count", &p->part_count));
  // Merge indexes by these: an untrusted manifest must not steer it out of range.
  if (p->part_count < 1 || p->part_count > (1 << 20) || p->part_index < 0 ||
      p->part_index >= p->part_count) {
    return InvalidArgumentError(
        std::string(root.source()) + ": provenance.part is " + std::to_string(p->part_index) + "/" +
        std::to_string(p->part_count) + ", not i/N with 0 <= i < N <= 1048576");
  }
  TOKPACK_RETURN_IF_ERROR(ReadSettings(r, &p->settings));
  simdjson::dom::array arr;
  TOKPACK_RETURN_IF_ERROR(r.Array("inputs", &arr));
  if (r.Has("input_count")) {
    TOKPACK_RETURN_IF_ERROR(r.Get("input_count", &p->input_count));
    TOKPACK_RETURN_IF_ERROR(GetHash(r, "inputs_xxh3", &p->inputs_xxh3));
  }
  if (r.Has("inputs_file")) {
    TOKPACK_RETURN_IF_ERROR(GetDatasetPath(r, "inputs_file", false, &p->inputs_file));
  }
  for (element e : arr) {
    object o;
    if (e.get_object().get(o) != simdjson::SUCCESS) {
      return InvalidArgumentError(std::string(root.source()) +
                                  ": provenance.inputs holds a non-object");
    }
    JsonReader in(o, "provenance.inputs[]", root.source());
    InputRecord rec;
    TOKPACK_RETURN_IF_ERROR(ReadInput(in, root.source(), &rec));
    p->inputs.push_back(std::move(rec));
  }
  TOKPACK_RETURN_IF_ERROR(r.Array("sources", &arr));
  for (element e : arr) {
    std::string_view sv;
    if (e.get_string().get(sv) != simdjson::SUCCESS) {
      return InvalidArgumentError(std::string(root.source()) +
                                  ": provenance.sources holds a non-string");
    }
    p->sources.emplace_back(sv);
  }
  JsonReader c;
  TOKPACK_RETURN_IF_ERROR(r.Object("counts", &c));
  TOKPACK_RETURN_IF_ERROR(c.Get("documents", &p->counts.documents));
  TOKPACK_RETURN_IF_ERROR(c.Get("tokens", &p->counts.tokens));
  TOKPACK_RETURN_IF_ERROR(c.Get("skipped_empty", &p->counts.skipped_empty));
  TOKPACK_RETURN_IF_ERROR(c.Get("bad_lines", &p->counts.bad_lines));
  TOKPACK_RETURN_IF_ERROR(c.Get("utf8_repaired", &p->counts.utf8_repaired));
  TOKPACK_RETURN_IF_ERROR(c.Get("skipped_invalid_utf8", &p->counts.skipped_invalid_utf8));
  // Written since tokenizers other than sentencepiece arrived; absent before.
  for (auto [key, out] : {std::pair{"unknown_tokens", &p->counts.unknown_tokens},
                          std::pair{"byte_fallback_tokens", &p->counts.byte_fallback_tokens}}) {
    if (c.Has(key)) TOKPACK_RETURN_IF_ERROR(c.Get(key, out));
  }
  return ReadInputCounts(r, p);
}

// A shard's optional loss mask: its digest, sized for the shard's tokens,
// and its count of set bits, at most the tokens.
Status ReadMask(const JsonReader& s, uint64_t chunk_bytes, ShardInfo* info) {
  if (!s.Has("mask")) return Status::Ok();
  info->has_mask = true;
  TOKPACK_RETURN_IF_ERROR(ReadDigest(s, "mask", chunk_bytes, &info->mask));
  if (info->mask.bytes != MaskBytes(info->tokens)) {
    return s.Error("mask", "has " + std::to_string(info->mask.bytes) + " bytes, but " +
                               std::to_string(info->tokens) + " tokens need " +
                               std::to_string(MaskBytes(info->tokens)));
  }
  TOKPACK_RETURN_IF_ERROR(s.Get("trainable_tokens", &info->trainable_tokens));
  if (info->trainable_tokens > info->tokens) {
    return s.Error("trainable_tokens", "is " + std::to_string(info->trainable_tokens) +
                                           ", more than the shard's " +
                                           std::to_string(info->tokens) + " tokens");
  }
  return Status::Ok();
}

// A shard's optional document sources: the digest, and the offset of its
// input indices (checked against the inputs once provenance is read).
Status ReadSources(const JsonReader& s, uint64_t chunk_bytes, ShardInfo* info) {
  if (!s.Has("sources")) return Status::Ok();
  info->has_sources = true;
  TOKPACK_RETURN_IF_ERROR(ReadDigest(s, "sources", chunk_bytes, &info->sources));
  if (!s.Has("sources_input_offset")) return Status::Ok();
  return s.Get("sources_input_offset", &info->sources_input_offset);
}

void WriteDigest(JsonWriter* w, std::string_view key, const FileDigest& d) {
  w->BeginObject(key);
  w->UInt("bytes", d.bytes);
  std::vector<std::string> hex;
  hex.reserve(d.chunk_xxh3.size());
  for (uint64_t h : d.chunk_xxh3) hex.push_back(HashToHex(h));
  w->InlineStringArray("xxh3_64", hex);
  w->EndObject();
}

}  // namespace

std::string_view TokenDtypeName(TokenDtype dtype) {
  return dtype == TokenDtype::kUInt16 ? "uint16" : "int32";
}

int TokenDtypeSize(TokenDtype dtype) { return dtype == TokenDtype::kUInt16 ? 2 : 4; }

TokenDtype DtypeForVocab(int64_t vocab_size) {
  return vocab_size <= 65535 ? TokenDtype::kUInt16 : TokenDtype::kInt32;
}

uint64_t InputListHash(const std::vector<InputRecord>& inputs) {
  std::vector<std::string> lines;
  for (const InputRecord& in : inputs) lines.push_back(InputLine(in));
  std::sort(lines.begin(), lines.end());
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const std::string& l : lines) XXH3_64bits_update(state, l.data(), l.size());
  const uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return h;
}

std::string InputListFile(const std::vector<InputRecord>& inputs) {
  std::string out;
  for (const InputRecord& in : inputs) out += InputLine(in);
  return out;
}

Status ReadInputList(std::string_view text, std::string_view source, Provenance* p) {
  std::vector<InputRecord> inputs;
  simdjson::dom::parser parser;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string line(text.substr(start, end - start));
    const std::string where = std::string(source) + ":" + std::to_string(inputs.size() + 1);
    object o;
    if (parser.parse(line).get_object().get(o) != simdjson::SUCCESS) {
      return InvalidArgumentError(where + ": not a JSON object");
    }
    JsonReader in(o, "", where);
    InputRecord rec;
    TOKPACK_RETURN_IF_ERROR(ReadInput(in, where, &rec));
    inputs.push_back(std::move(rec));
    start = end + 1;
  }
  if (inputs.size() != p->input_count || InputListHash(inputs) != p->inputs_xxh3) {
    return DataLossError(std::string(source) + ": lists " + std::to_string(inputs.size()) +
                         " inputs with hash " + HashToHex(InputListHash(inputs)) +
                         "; the manifest says " + std::to_string(p->input_count) + " with " +
                         HashToHex(p->inputs_xxh3));
  }
  p->inputs = std::move(inputs);
  return Status::Ok();
}

bool Manifest::HasSources() const { return !shards.empty() && shards.front().has_sources; }
bool Manifest::HasLossMasks() const { return !shards.empty() && shards.front().has_mask; }

uint64_t Manifest::TrainableTokens() const {
  uint64_t n = 0;
  for (const auto& s : shards) n += s.has_mask ? s.trainable_tokens : s.tokens;
  return n;
}

uint64_t Manifest::TotalTokens() const {
  uint64_t n = 0;
  for (const auto& s : shards) n += s.tokens;
  return n;
}

uint64_t Manifest::TotalDocuments() const {
  uint64_t n = 0;
  for (const auto& s : shards) n += s.documents;
  return n;
}

uint64_t Manifest::Fingerprint() const {
  // Little-endian u64 fields in a fixed order; see docs/format.md.
  std::string buf = "tokpack-fingerprint-v1";
  auto put = [&buf](uint64_t v) { buf.append(reinterpret_cast<const char*>(&v), 8); };
  put(static_cast<uint64_t>(dtype));
  put(chunk_bytes);
  put(shards.size());
  for (const ShardInfo& s : shards) {
    put(s.tokens);
    put(s.documents);
    for (const FileDigest* d : {&s.bin, &s.idx}) {
      put(d->bytes);
      for (uint64_t h : d->chunk_xxh3) put(h);
    }
  }
  return XXH3_64bits(buf.data(), buf.size());
}

std::string Manifest::ToJson() const {
  JsonWriter w;
  w.BeginObject();
  w.String("format", "tokpack-dataset");
  w.Int("format_version", format_version);
  w.String("fingerprint", HashToHex(Fingerprint()));
  w.String("dtype", TokenDtypeName(dtype));
  w.Int("dtype_code", static_cast<int>(dtype));
  w.UInt("total_tokens", TotalTokens());
  w.UInt("total_documents", TotalDocuments());
  w.UInt("chunk_bytes", chunk_bytes);
  w.BeginObject("tokenizer");
  w.String("type", tokenizer.type);
  w.String("file", tokenizer.file);
  w.String("xxh3_64", HashToHex(tokenizer.model_xxh3));
  w.Int("vocab_size", tokenizer.vocab_size);
  w.Int("bos_id", tokenizer.bos_id);
  w.Int("eos_id", tokenizer.eos_id);
  w.Int("pad_id", tokenizer.pad_id);
  w.Int("unk_id", tokenizer.unk_id);
  if (!tokenizer.pattern.empty()) w.String("pattern", tokenizer.pattern);
  if (!tokenizer.special_tokens.empty()) {
    w.BeginArray("special_tokens");
    for (const auto& [text, id] : tokenizer.special_tokens) {
      w.BeginObject();
      w.String("text", text);
      w.Int("id", id);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  w.BeginArray("shards");
  for (const ShardInfo& s : shards) {
    w.BeginObject();
    w.String("path", s.path);
    w.UInt("tokens", s.tokens);
    w.UInt("documents", s.documents);
    WriteDigest(&w, "bin", s.bin);
    WriteDigest(&w, "idx", s.idx);
    if (s.has_mask) {
      WriteDigest(&w, "mask", s.mask);
      w.UInt("trainable_tokens", s.trainable_tokens);
    }
    if (s.has_sources) {
      WriteDigest(&w, "sources", s.sources);
      if (s.sources_input_offset != 0) w.UInt("sources_input_offset", s.sources_input_offset);
    }
    w.EndObject();
  }
  w.EndArray();
  const Provenance& p = provenance;
  w.BeginObject("provenance");
  w.String("tool", p.tool);
  w.String("version", p.version);
  w.String("kind", p.kind);
  w.BeginObject("part");
  w.Int("index", p.part_index);
  w.Int("count", p.part_count);
  w.EndObject();
  w.BeginObject("settings");
  w.String("text_key", p.settings.text_key);
  w.String("input_format", p.settings.input_format);
  w.Bool("text_per_line", p.settings.text_per_line);
  w.Bool("bos", p.settings.add_bos);
  w.Bool("eos", p.settings.add_eos);
  w.String("invalid_utf8", p.settings.invalid_utf8);
  w.Bool("skip_bad_lines", p.settings.skip_bad_lines);
  w.UInt("shard_tokens", p.settings.shard_tokens);
  if (p.settings.doc_sources) {
    w.Bool("doc_sources", true);
    w.String("id_key", p.settings.id_key);
  }
  // Only where on, so that a build without masks writes what it always did.
  if (p.settings.loss_masks) {
    w.Bool("loss_masks", true);
    w.String("loss_spans_key", p.settings.loss_spans_key);
    w.String("no_loss_spans_key", p.settings.no_loss_spans_key);
  }
  w.EndObject();
  const bool listed_apart = !p.inputs_file.empty();
  const bool side_file = listed_apart || p.inputs.size() > Provenance::kMaxListedInputs;
  w.BeginArray("inputs");
  if (!side_file) {
    for (const InputRecord& in : p.inputs) WriteInput(&w, in);
  }
  w.EndArray();
  w.UInt("input_count", listed_apart ? p.input_count : p.inputs.size());
  w.String("inputs_xxh3", HashToHex(listed_apart ? p.inputs_xxh3 : InputListHash(p.inputs)));
  if (side_file) {
    w.String("inputs_file", listed_apart ? p.inputs_file : Provenance::kInputsFileName);
  }
  w.BeginArray("sources");
  for (const std::string& s : p.sources) w.String(s);
  w.EndArray();
  w.BeginObject("counts");
  w.UInt("documents", p.counts.documents);
  w.UInt("tokens", p.counts.tokens);
  w.UInt("skipped_empty", p.counts.skipped_empty);
  w.UInt("bad_lines", p.counts.bad_lines);
  w.UInt("utf8_repaired", p.counts.utf8_repaired);
  w.UInt("skipped_invalid_utf8", p.counts.skipped_invalid_utf8);
  w.UInt("unknown_tokens", p.counts.unknown_tokens);
  w.UInt("byte_fallback_tokens", p.counts.byte_fallback_tokens);
  w.EndObject();
  if (!p.input_counts.empty()) {
    w.BeginArray("input_counts");
    for (const InputCounts& c : p.input_counts) {
      w.BeginObject();
      w.UInt("documents", c.documents);
      w.UInt("skipped_empty", c.skipped_empty);
      w.UInt("bad_lines", c.bad_lines);
      w.UInt("skipped_invalid_utf8", c.skipped_invalid_utf8);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  w.EndObject();
  return w.str();
}

StatusOr<Manifest> Manifest::Parse(std::string_view json, std::string_view source) {
  simdjson::dom::parser parser;
  element root;
  auto err = parser.parse(json.data(), json.size()).get(root);
  if (err != simdjson::SUCCESS) {
    return InvalidArgumentError(std::string(source) + ": not valid JSON (" +
                                simdjson::error_message(err) + ")");
  }
  object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) {
    return InvalidArgumentError(std::string(source) + ": top level is not a JSON object");
  }
  JsonReader r(obj, "", source);
  Manifest m;
  std::string format;
  TOKPACK_RETURN_IF_ERROR(r.Get("format", &format));
  if (format != "tokpack-dataset") {
    return InvalidArgumentError(std::string(source) + ": 'format' is '" + format +
                                "', not 'tokpack-dataset'");
  }
  TOKPACK_RETURN_IF_ERROR(r.Get("format_version", &m.format_version));
  if (m.format_version != kFormatVersion) {
    return InvalidArgumentError(
        std::string(source) + ": format_version " + std::to_string(m.format_version) +
        " is not supported by this tokpack (reads version " + std::to_string(kFormatVersion) + ")");
  }
  int code = 0;
  TOKPACK_RETURN_IF_ERROR(r.Get("dtype_code", &code));
  if (code != static_cast<int>(TokenDtype::kUInt16) &&
      code != static_cast<int>(TokenDtype::kInt32)) {
    return InvalidArgumentError(std::string(source) + ": unsupported dtype_code " +
                                std::to_string(code) + " (8 = uint16, 4 = int32)");
  }
  m.dtype = static_cast<TokenDtype>(code);
  std::string dtype_name;
  TOKPACK_RETURN_IF_ERROR(r.Get("dtype", &dtype_name));
  if (dtype_name != TokenDtypeName(m.dtype)) {
    return InvalidArgumentError(std::string(source) + ": dtype '" + dtype_name +
                                "' contradicts dtype_code " + std::to_string(code));
  }
  TOKPACK_RETURN_IF_ERROR(r.Get("chunk_bytes", &m.chunk_bytes));
  TOKPACK_RETURN_IF_ERROR(CheckChunkBytes(m.chunk_bytes).WithContext(std::string(source)));
  JsonReader t;
  TOKPACK_RETURN_IF_ERROR(r.Object("tokenizer", &t));
  TOKPACK_RETURN_IF_ERROR(t.Get("type", &m.tokenizer.type));
  TOKPACK_RETURN_IF_ERROR(GetDatasetPath(t, "file", /*allow_empty=*/true, &m.tokenizer.file));
  TOKPACK_RETURN_IF_ERROR(GetHash(t, "xxh3_64", &m.tokenizer.model_xxh3));
  // A copy without a hash could not be checked before it is loaded.
  if (!m.tokenizer.file.empty() && m.tokenizer.model_xxh3 == 0) {
    return t.Error("xxh3_64", "is 0000000000000000 (unknown), but '" + t.Path("file") +
                                  "' names a tokenizer copy: a copy must carry its hash");
  }
  TOKPACK_RETURN_IF_ERROR(t.Get("vocab_size", &m.tokenizer.vocab_size));
  TOKPACK_RETURN_IF_ERROR(t.Get("bos_id", &m.tokenizer.bos_id));
  TOKPACK_RETURN_IF_ERROR(t.Get("eos_id", &m.tokenizer.eos_id));
  TOKPACK_RETURN_IF_ERROR(t.Get("pad_id", &m.tokenizer.pad_id));
  TOKPACK_RETURN_IF_ERROR(t.Get("unk_id", &m.tokenizer.unk_id));
  // pattern and special_tokens are present for tiktoken tokenizers only.
  if (t.Has("pattern")) TOKPACK_RETURN_IF_ERROR(t.Get("pattern", &m.tokenizer.pattern));
  if (t.Has("special_tokens")) {
    simdjson::dom::array specials;
    TOKPACK_RETURN_IF_ERROR(t.Array("special_tokens", &specials));
    size_t k = 0;
    for (element e : specials) {
      const std::string where = t.Path("special_tokens[" + std::to_string(k++) + "]");
      object so;
      if (e.get_object().get(so) != simdjson::SUCCESS) {
        return InvalidArgumentError(std::string(source) + ": " + where + " is not an object");
      }
      JsonReader st(so, where, source);
      std::pair<std::string, int64_t> token;
      TOKPACK_RETURN_IF_ERROR(st.Get("text", &token.first));
      TOKPACK_RETURN_IF_ERROR(st.Get("id", &token.second));
      m.tokenizer.special_tokens.push_back(std::move(token));
    }
  }

  simdjson::dom::array shards;
  TOKPACK_RETURN_IF_ERROR(r.Array("shards", &shards));
  size_t i = 0;
  uint64_t total_bytes = 0;  // Of all shard files: at most kMaxTotalBytes.
  for (element e : shards) {
    std::string where = "shards[" + std::to_string(i++) + "]";
    object so;
    if (e.get_object().get(so) != simdjson::SUCCESS) {
      return InvalidArgumentError(std::string(source) + ": " + where + " is not an object");
    }
    JsonReader s(so, where, source);
    ShardInfo info;
    TOKPACK_RETURN_IF_ERROR(GetDatasetPath(s, "path", /*allow_empty=*/false, &info.path));
    TOKPACK_RETURN_IF_ERROR(s.Get("tokens", &info.tokens));
    TOKPACK_RETURN_IF_ERROR(s.Get("documents", &info.documents));
    TOKPACK_RETURN_IF_ERROR(ReadDigest(s, "bin", m.chunk_bytes, &info.bin));
    TOKPACK_RETURN_IF_ERROR(ReadDigest(s, "idx", m.chunk_bytes, &info.idx));
    uint64_t bin_bytes = 0;
    if (__builtin_mul_overflow(info.tokens, uint64_t(TokenDtypeSize(m.dtype)), &bin_bytes) ||
        info.bin.bytes != bin_bytes) {
      return InvalidArgumentError(std::string(source) + ": " + where + " has " +
                                  std::to_string(info.tokens) + " tokens but bin.bytes " +
                                  std::to_string(info.bin.bytes));
    }
    // Imported Megatron indexes may hold several sequences per document, so
    // only the lower bound of one document entry per sequence is certain.
    uint64_t min_idx = 0;
    if (__builtin_mul_overflow(info.documents, uint64_t{12}, &min_idx) ||
        __builtin_add_overflow(min_idx, uint64_t{34 + 8}, &min_idx) || info.idx.bytes < min_idx) {
      return InvalidArgumentError(std::string(source) + ": " + where + " has " +
                                  std::to_string(info.documents) + " documents but idx.bytes " +
                                  std::to_string(info.idx.bytes));
    }
    TOKPACK_RETURN_IF_ERROR(ReadMask(s, m.chunk_bytes, &info));
    TOKPACK_RETURN_IF_ERROR(ReadSources(s, m.chunk_bytes, &info));
    if (i > 1 && info.has_sources != m.shards.front().has_sources) {
      return s.Error("sources",
                     "is given for some shards and not others: a dataset has document "
                     "sources on every shard or on none");
    }
    if (i > 1 && info.has_mask != m.shards.front().has_mask) {
      return s.Error("mask",
                     "is given for some shards and not others: a dataset has loss "
                     "masks on every shard or on none");
    }
    // Bounds every sum over shards of sizes, tokens and documents, which
    // readers then take without checks.
    if (__builtin_add_overflow(total_bytes, info.bin.bytes, &total_bytes) ||
        __builtin_add_overflow(total_bytes, info.idx.bytes, &total_bytes) ||
        __builtin_add_overflow(total_bytes, info.mask.bytes, &total_bytes) ||
        __builtin_add_overflow(total_bytes, info.sources.bytes, &total_bytes) ||
        total_bytes > kMaxTotalBytes) {
      return InvalidArgumentError(std::string(source) + ": the shard files up to " + where +
                                  " add up to more than " + std::to_string(kMaxTotalBytes) +
                                  " bytes");
    }
    m.shards.push_back(std::move(info));
  }
  TOKPACK_RETURN_IF_ERROR(ReadProvenance(r, &m.provenance));
  for (size_t k = 0; k < m.shards.size(); ++k) {
    if (m.shards[k].sources_input_offset > m.provenance.InputTotal()) {
      return InvalidArgumentError(std::string(source) + ": shards[" + std::to_string(k) +
                                  "].sources_input_offset is past the " +
                                  std::to_string(m.provenance.InputTotal()) + " inputs");
    }
  }

  uint64_t total = 0;
  TOKPACK_RETURN_IF_ERROR(r.Get("total_tokens", &total));
  if (total != m.TotalTokens()) {
    return InvalidArgumentError(std::string(source) +
                                ": total_tokens does not equal the sum over shards");
  }
  TOKPACK_RETURN_IF_ERROR(r.Get("total_documents", &total));
  if (total != m.TotalDocuments()) {
    return InvalidArgumentError(std::string(source) +
                                ": total_documents does not equal the sum over shards");
  }
  uint64_t fp = 0;
  TOKPACK_RETURN_IF_ERROR(GetHash(r, "fingerprint", &fp));
  if (fp != m.Fingerprint()) {
    return DataLossError(std::string(source) + ": fingerprint " + HashToHex(fp) +
                         " does not match its contents (" + HashToHex(m.Fingerprint()) +
                         "); the manifest was edited or damaged");
  }
  return m;
}

Status CheckChunkBytes(uint64_t chunk_bytes) {
  if (chunk_bytes < Manifest::kMinChunkBytes || chunk_bytes > Manifest::kMaxChunkBytes) {
    return InvalidArgumentError("chunk_bytes " + std::to_string(chunk_bytes) + " is not in " +
                                std::to_string(Manifest::kMinChunkBytes) + ".." +
                                std::to_string(Manifest::kMaxChunkBytes) + " (1 GiB)");
  }
  return Status::Ok();
}

StatusOr<Manifest> Manifest::Load(const std::string& dir) {
  const std::string path = JoinPath(dir, kFileName);
  StatusOr<std::string> text = ReadDatasetFile(dir, kFileName, kMaxJsonBytes, Links::kFollow);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      const std::string prefix = StripShardExtension(dir);
      if (FileSize(prefix + ".idx").ok()) {
        return NotFoundError("'" + dir +
                             "' is a bare Megatron prefix: it has no manifest.json (tokpack "
                             "import writes one)");
      }
      if (FileSize(dir).status().code() == StatusCode::kNotFound) {
        return NotFoundError(dir + " does not exist");
      }
      return NotFoundError("'" + dir +
                           "' has no manifest.json: not a tokpack dataset, or its build "
                           "did not finish");
    }
    return text.status();
  }
  return Parse(*text, path);
}

Status Manifest::Save(const std::string& dir, const std::string& name) const {
  return WriteFileAtomically(PosixFileSystem(), dir, name, ToJson());
}

}  // namespace tokpack
