// BpeTokenizer::FromHuggingFaceJson: reads a tokenizer.json. Every component
// tokpack cannot reproduce exactly is refused with its field path rather than
// approximated, so that a dataset is never built with ids that differ from
// the reference.
#include <simdjson.h>

#include <cstdio>
#include <map>
#include <unordered_map>

#include "base/json_reader.h"
#include "base/quote.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/json_error.h"
#include "tokenizer/unicode.h"

namespace tokpack {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Fields are named bare ("model.vocab: ..."), as tokenizers' own messages do.
constexpr JsonReader::Style kBare = JsonReader::Style::kBare;

// A Split or Replace "pattern": {"String": s} (literal) or {"Regex": r}.
Status ReadPattern(const JsonReader& f, std::unique_ptr<Regex>* out) {
  JsonReader p;
  TOKPACK_RETURN_IF_ERROR(f.Object("pattern", &p));
  std::string text;
  std::string regex;
  if (p.IsSet("String")) {
    TOKPACK_RETURN_IF_ERROR(p.Get("String", &text));
    if (text.empty()) return p.Error("String", "an empty pattern is not supported");
    regex = Regex::Escape(text);
  } else if (p.IsSet("Regex")) {
    TOKPACK_RETURN_IF_ERROR(p.Get("Regex", &regex));
  } else {
    return p.SelfError("has neither String nor Regex");
  }
  auto compiled = Regex::Compile(regex, RegexDialect::kOniguruma);
  if (!compiled.ok()) return p.SelfError(compiled.status().message());
  *out = std::move(compiled).value();
  return Status::Ok();
}

Status ReadNormalizer(element e, const std::string& path, const std::string& source,
                      Normalizer* out) {
  if (e.is_null()) return Status::Ok();
  JsonReader f;
  TOKPACK_RETURN_IF_ERROR(JsonReader::Of(e, path, source, kBare, &f));
  std::string type;
  TOKPACK_RETURN_IF_ERROR(f.Get("type", &type));
  const std::string step = path + " (" + Clipped(type) + ")";
  if (type == "NFC") {
    out->AddUnicodeForm(Normalizer::Form::kNfc, step);
  } else if (type == "NFD") {
    out->AddUnicodeForm(Normalizer::Form::kNfd, step);
  } else if (type == "NFKC") {
    out->AddUnicodeForm(Normalizer::Form::kNfkc, step);
  } else if (type == "NFKD") {
    out->AddUnicodeForm(Normalizer::Form::kNfkd, step);
  } else if (type == "Lowercase") {
    out->AddLowercase(step);
  } else if (type == "Prepend") {
    std::string text;
    TOKPACK_RETURN_IF_ERROR(f.Get("prepend", &text));
    out->AddPrepend(std::move(text), step);
  } else if (type == "Replace") {
    std::unique_ptr<Regex> pattern;
    TOKPACK_RETURN_IF_ERROR(ReadPattern(f, &pattern));
    std::string content;
    TOKPACK_RETURN_IF_ERROR(f.Get("content", &content));
    out->AddReplace(std::move(pattern), std::move(content), step);
  } else if (type == "Sequence") {
    array items;
    TOKPACK_RETURN_IF_ERROR(f.Array("normalizers", &items));
    size_t i = 0;
    for (element item : items) {
      TOKPACK_RETURN_IF_ERROR(ReadNormalizer(
          item, f.Path("normalizers") + "[" + std::to_string(i++) + "]", source, out));
    }
  } else {
    return f.SelfError("normalizer " + Clipped(type) + " is not supported");
  }
  return Status::Ok();
}

StatusOr<SplitBehavior> ReadBehavior(const JsonReader& f) {
  std::string b;
  TOKPACK_RETURN_IF_ERROR(f.Get("behavior", &b));
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  return f.Error("behavior", "unknown split behavior " + Quoted(b));
}

Status ReadPreTokenizer(element e, const std::string& path, const std::string& source,
                        std::vector<PreTokenizerStage>* stages, ByteLevelStage* byte_level) {
  if (e.is_null()) return Status::Ok();
  JsonReader f;
  TOKPACK_RETURN_IF_ERROR(JsonReader::Of(e, path, source, kBare, &f));
  std::string type;
  TOKPACK_RETURN_IF_ERROR(f.Get("type", &type));
  if (type == "Sequence") {
    array items;
    TOKPACK_RETURN_IF_ERROR(f.Array("pretokenizers", &items));
    size_t i = 0;
    for (element item : items) {
      TOKPACK_RETURN_IF_ERROR(
          ReadPreTokenizer(item, f.Path("pretokenizers") + "[" + std::to_string(i++) + "]", source,
                           stages, byte_level));
    }
    return Status::Ok();
  }
  if (type != "Split" && type != "Digits" && type != "ByteLevel") {
    return f.SelfError("pre_tokenizer " + Clipped(type) + " is not supported");
  }
  if (byte_level->present) {
    // After ByteLevel the text is in GPT-2's stand-in characters; splitting
    // those is a different thing than splitting the text.
    return f.SelfError("pre_tokenizer " + type + " after ByteLevel is not supported");
  }
  if (type == "ByteLevel") {
    byte_level->present = true;
    TOKPACK_RETURN_IF_ERROR(f.GetOr("add_prefix_space", true, &byte_level->add_prefix_space));
    bool use_regex = true;
    TOKPACK_RETURN_IF_ERROR(f.GetOr("use_regex", true, &use_regex));
    if (use_regex) {
      TOKPACK_ASSIGN_OR_RETURN(byte_level->regex,
                               Regex::Compile(kByteLevelPattern, RegexDialect::kOniguruma));
    }
    return Status::Ok();
  }
  PreTokenizerStage stage;
  if (type == "Digits") {
    stage.kind = PreTokenizerStage::Kind::kDigits;
    bool individual = false;
    TOKPACK_RETURN_IF_ERROR(f.GetOr("individual_digits", false, &individual));
    stage.behavior = individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous;
  } else {
    std::unique_ptr<Regex> regex;
    TOKPACK_RETURN_IF_ERROR(ReadPattern(f, &regex));
    stage.regex = std::move(regex);
    TOKPACK_ASSIGN_OR_RETURN(stage.behavior, ReadBehavior(f));
    TOKPACK_RETURN_IF_ERROR(f.GetOr("invert", false, &stage.invert));
  }
  stages->push_back(std::move(stage));
  return Status::Ok();
}

Status RefuseIfSet(const JsonReader& f, std::string_view key, const std::string& why) {
  if (!f.IsSet(key)) return Status::Ok();
  std::string_view s;
  if (f.Value(key).get_string().get(s) == simdjson::SUCCESS && s.empty()) return Status::Ok();
  return f.Error(key, "is not supported (" + why + ")");
}

// The inverse of GPT-2's byte -> character map, for code points below 0x144.
std::vector<int> ByteLevelInverse() {
  std::vector<int> inverse(0x144, -1);
  for (int b = 0; b < 256; ++b) inverse[ByteLevelCodepoint(static_cast<unsigned char>(b))] = b;
  return inverse;
}

// A byte-level vocabulary string as raw bytes; false if a character is not
// one of the 256 stand-ins (such a token cannot come out of byte-level BPE).
bool ByteLevelToBytes(std::string_view s, const std::vector<int>& inverse, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size();) {
    size_t len = 0;
    uint32_t cp = DecodeUtf8(s, i, &len);
    i += len;
    if (cp >= inverse.size() || inverse[cp] < 0) return false;
    *out += static_cast<char>(inverse[cp]);
  }
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromHuggingFaceJson(std::string_view json,
                                                                          const std::string& name) {
  simdjson::dom::parser parser;
  element root_element;
  auto error = parser.parse(json.data(), json.size(), true).get(root_element);
  if (error != simdjson::SUCCESS) {
    return InvalidArgumentError(name + ": malformed JSON at " +
                                DescribeOffset(json, JsonErrorOffset(json)) + ": " +
                                simdjson::error_message(error));
  }
  object root_object;
  if (root_element.get_object().get(root_object) != simdjson::SUCCESS) {
    return InvalidArgumentError(name + ": is not a JSON object");
  }
  const JsonReader root(root_object, "", name, kBare);
  // "truncation" and "padding" are ignored: a packer encodes whole documents,
  // so the reference is tokenizers with no_truncation() and no_padding().
  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer());
  if (root.IsSet("normalizer")) {
    TOKPACK_RETURN_IF_ERROR(
        ReadNormalizer(root.Value("normalizer"), "normalizer", name, &t->normalizer_));
  }
  if (root.IsSet("pre_tokenizer")) {
    TOKPACK_RETURN_IF_ERROR(ReadPreTokenizer(root.Value("pre_tokenizer"), "pre_tokenizer", name,
                                             &t->stages_, &t->byte_level_stage_));
  }
  t->byte_level_ = t->byte_level_stage_.present;

  JsonReader model;
  TOKPACK_RETURN_IF_ERROR(root.Object("model", &model));
  if (model.IsSet("type")) {
    std::string type;
    TOKPACK_RETURN_IF_ERROR(model.Get("type", &type));
    if (type != "BPE") {
      return model.Error("type", "model type " + Clipped(type) +
                                     " is not supported (tokpack reads BPE tokenizer.json files)");
    }
  }
  if (model.IsSet("dropout")) {
    double dropout = 0;
    if (model.Value("dropout").get_double().get(dropout) != simdjson::SUCCESS) {
      return model.Error("dropout", "is not a number");
    }
    if (dropout != 0) {
      return model.Error("dropout", "is not supported (BPE dropout makes encoding random)");
    }
  }
  TOKPACK_RETURN_IF_ERROR(RefuseIfSet(model, "continuing_subword_prefix", "not byte-level BPE"));
  TOKPACK_RETURN_IF_ERROR(RefuseIfSet(model, "end_of_word_suffix", "not byte-level BPE"));
  TOKPACK_RETURN_IF_ERROR(model.GetOr("fuse_unk", false, &t->fuse_unk_));
  TOKPACK_RETURN_IF_ERROR(model.GetOr("byte_fallback", false, &t->byte_fallback_));
  TOKPACK_RETURN_IF_ERROR(model.GetOr("ignore_merges", false, &t->ignore_merges_));

  // Vocabulary.
  JsonReader vocab;
  TOKPACK_RETURN_IF_ERROR(model.Object("vocab", &vocab));
  const std::vector<int> inverse = ByteLevelInverse();
  std::string bytes;
  for (auto [key, value] : vocab.obj()) {
    int64_t id = -1;
    if (value.get_int64().get(id) != simdjson::SUCCESS || id < 0 || id > kMaxTokenId) {
      return vocab.Error(Quoted(key), "is not a token id in [0, " + std::to_string(kMaxTokenId) +
                                          "]: " + simdjson::minify(value).substr(0, 40));
    }
    const int i = static_cast<int>(id);
    t->literal_vocab_.Insert(key, i);
    if (!t->byte_level_) {
      t->vocab_.Insert(key, i);
      t->SetIdBytes(i, std::string(key));
    } else if (ByteLevelToBytes(key, inverse, &bytes)) {
      t->vocab_.Insert(bytes, i);
      if (bytes.size() == 1) t->byte_ids_[static_cast<unsigned char>(bytes[0])] = i;
      t->SetIdBytes(i, bytes);
    } else {
      t->SetIdBytes(i, std::string(key));
    }
  }
  const size_t model_vocab_size = t->literal_vocab_.size();
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    t->fallback_ids_[b] = t->literal_vocab_.Find(hex);
    if (t->byte_fallback_ && t->fallback_ids_[b] >= 0) {
      t->SetIdBytes(t->fallback_ids_[b], std::string(1, static_cast<char>(b)));
    }
  }
  if (model.IsSet("unk_token")) {
    TOKPACK_RETURN_IF_ERROR(model.Get("unk_token", &t->unk_token_));
    t->has_unk_token_ = true;
    t->unk_id_ = t->literal_vocab_.Find(t->unk_token_);
  }

  // Merges: "a b" strings (older files; "#version" lines skipped) or [a, b].
  array merges;
  TOKPACK_RETURN_IF_ERROR(model.Array("merges", &merges));
  int32_t rank = 0;
  size_t index = 0;
  for (element m : merges) {
    const std::string where = model.Path("merges") + "[" + std::to_string(index++) + "]";
    std::string_view a, b, line;
    array pair;
    if (m.get_string().get(line) == simdjson::SUCCESS) {
      if (line.substr(0, 8) == "#version") continue;
      size_t space = line.find(' ');
      if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos) {
        return InvalidArgumentError(name + ": " + where + ": " + Quoted(line) +
                                    " is not two tokens separated by one space");
      }
      a = line.substr(0, space);
      b = line.substr(space + 1);
    } else if (m.get_array().get(pair) != simdjson::SUCCESS || pair.size() != 2 ||
               pair.at(0).get_string().get(a) != simdjson::SUCCESS ||
               pair.at(1).get_string().get(b) != simdjson::SUCCESS) {
      return InvalidArgumentError(name + ": " + where + ": is not a string or a pair of strings");
    }
    const std::string merged = std::string(a) + std::string(b);
    int ids[3] = {t->literal_vocab_.Find(a), t->literal_vocab_.Find(b),
                  t->literal_vocab_.Find(merged)};
    std::string_view names[3] = {a, b, merged};
    for (int k = 0; k < 3; ++k) {
      if (ids[k] < 0) {
        return InvalidArgumentError(name + ": " + where + ": token " + Quoted(names[k]) +
                                    " is not in model.vocab");
      }
    }
    t->merges_.Insert(ids[0], ids[1], MergeRule{rank++, ids[2]});
  }

  // Added tokens, with tokenizers' id assignment: an added token keeps the id
  // its text has in the vocabulary or among earlier added tokens, else takes
  // the next id after the vocabulary (the file's "id" only draws a warning).
  std::unordered_map<std::string, int> added_ids;
  struct Added {
    AddedToken token;
    size_t index;  // In the file's added_tokens, for errors.
  };
  std::map<int, Added> by_id;
  int next_id = static_cast<int>(model_vocab_size);
  if (root.IsSet("added_tokens")) {
    array tokens;
    TOKPACK_RETURN_IF_ERROR(root.Array("added_tokens", &tokens));
    if (tokens.size() > kMaxAddedTokens) {
      return root.Error("added_tokens", "has " + std::to_string(tokens.size()) +
                                            " tokens, more than the " +
                                            std::to_string(kMaxAddedTokens) + " tokpack reads");
    }
    size_t i = 0;
    size_t total_bytes = 0;
    for (element e : tokens) {
      JsonReader f;
      TOKPACK_RETURN_IF_ERROR(
          JsonReader::Of(e, "added_tokens[" + std::to_string(i) + "]", name, kBare, &f));
      std::string_view content;
      TOKPACK_RETURN_IF_ERROR(f.Get("content", &content));
      total_bytes += content.size();
      if (content.size() > kMaxAddedTokenBytes) {
        return f.Error("content",
                       "is " + std::to_string(content.size()) + " bytes, more than the " +
                           std::to_string(kMaxAddedTokenBytes) + " an added token may have");
      }
      if (total_bytes > kMaxAddedTokensBytes) {
        return f.Error("content", "takes the added tokens' contents past " +
                                      std::to_string(kMaxAddedTokensBytes) + " bytes in all");
      }
      AddedToken token;
      token.content.assign(content);
      TOKPACK_RETURN_IF_ERROR(f.GetOr("single_word", false, &token.single_word));
      TOKPACK_RETURN_IF_ERROR(f.GetOr("lstrip", false, &token.lstrip));
      TOKPACK_RETURN_IF_ERROR(f.GetOr("rstrip", false, &token.rstrip));
      TOKPACK_RETURN_IF_ERROR(f.GetOr("normalized", true, &token.normalized));
      TOKPACK_RETURN_IF_ERROR(f.GetOr("special", false, &token.special));
      if (token.content.empty()) {
        ++i;
        continue;
      }
      auto it = added_ids.find(token.content);
      int id = it != added_ids.end() ? it->second : t->literal_vocab_.Find(token.content);
      if (id < 0) id = next_id++;
      if (id > kMaxTokenId) {
        return f.SelfError("would get id " + std::to_string(id) + ", above " +
                           std::to_string(kMaxTokenId));
      }
      token.id = id;
      added_ids[token.content] = id;
      by_id[id] = Added{std::move(token), i++};
    }
  }
  for (const auto& [id, added] : by_id) {
    const AddedToken& token = added.token;
    t->literal_vocab_.Insert(token.content, id);
    t->SetIdBytes(id, token.content);
    if (token.normalized) {
      const std::string where = name + ": added_tokens[" + std::to_string(added.index) + "]";
      std::string pattern;
      if (Status st = t->normalizer_.Apply(token.content, &pattern); !st.ok()) {
        return InvalidArgumentError(where + ": " + st.message());
      }
      if (pattern.empty()) {
        // tokenizers then matches the empty string at every position: the
        // normalized text is cut between every two characters (so no merge
        // joins them), and with lstrip or rstrip white space becomes this
        // token. tokpack does not reproduce that.
        return InvalidArgumentError(where + ": the normalizer makes " + Quoted(token.content) +
                                    " (normalized: true) empty, which tokenizers matches "
                                    "between every two characters; tokpack refuses it");
      }
      t->added_.Add(AddedVocab::Set::kNormalized, pattern, token);
    } else {
      t->added_.Add(AddedVocab::Set::kRaw, token.content, token);
    }
    t->added_tokens_.push_back(token);
  }
  return t;
}

}  // namespace tokpack
