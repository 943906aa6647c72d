#include "tokpack/tokenizer.h"

#include <sentencepiece_processor.h>
#include <simdjson.h>

#include <cstdint>
#include <initializer_list>
#include <new>
#include <vector>

#include "base/chunk_hasher.h"
#include "base/quote.h"
#include "base/file_system.h"
#include "tokenizer/spm_word_encoder.h"
#include "tokenizer/tokenizer_kind.h"
#include "tokenizer/bpe_tokenizer.h"

namespace tokpack {

struct Tokenizer::Impl {
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp;
  // Encodes sp's texts word by word through a cache; null where the model's
  // words cannot be encoded apart exactly (then sp encodes whole texts).
  std::unique_ptr<SpmWordEncoder> sp_words;
  // sentencepiece: what each id is, for EncodeCounts, looked up once at load
  // rather than asked of the model per token on the encoding hot path.
  enum PieceKind : uint8_t { kNormal, kUnknown, kByte };
  std::vector<PieceKind> sp_kinds;
  std::unique_ptr<BpeTokenizer> bpe;
};

Tokenizer::Tokenizer() : impl_(std::make_unique<Impl>()) {}
Tokenizer::~Tokenizer() = default;

namespace {

// The special tokens named by the tokenizer_config.json beside a
// tokenizer.json, as Hugging Face model repositories ship it (each a string
// or {"content": ...}). Empty where there is no such file or field; an error
// naming the file where there is one that cannot be read as a file (a FIFO,
// a device, a directory, over kMaxTokenizerConfigBytes), since the EOS a
// build appends would otherwise change silently.
struct ConfigTokens {
  std::string eos, bos, pad;
};

StatusOr<ConfigTokens> ReadConfigTokens(const std::string& tokenizer_json_path) {
  ConfigTokens tokens;
  const size_t slash = tokenizer_json_path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? std::string(".") : tokenizer_json_path.substr(0, slash);
  StatusOr<std::string> text = ReadSmallFile(JoinPath(dir, "tokenizer_config.json"),
                                             kMaxTokenizerConfigBytes, "a tokenizer_config.json");
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) return tokens;
  if (!text.ok()) {
    return text.status().WithContext("the EOS and BOS tokens of tokenizer '" + tokenizer_json_path +
                                     "'");
  }
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(*text).get(root) != simdjson::SUCCESS) return tokens;
  for (auto [field, out] : {std::pair{"eos_token", &tokens.eos},
                            {"bos_token", &tokens.bos},
                            {"pad_token", &tokens.pad}}) {
    std::string_view value;
    if (root[field].get_string().get(value) == simdjson::SUCCESS ||
        root[field]["content"].get_string().get(value) == simdjson::SUCCESS) {
      out->assign(value);
    }
  }
  return tokens;
}

// The first of `names` that is a token of `bpe`, or -1.
int64_t FirstKnown(const BpeTokenizer& bpe, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (int id = bpe.TokenId(name); id >= 0) return id;
  }
  return -1;
}

// The id of the token named by `chosen` (an option or the config), else the
// first well-known name the vocabulary has. `what` names the role in errors.
StatusOr<int64_t> SpecialId(const BpeTokenizer& bpe, const std::string& path,
                            const std::string& chosen, const char* what,
                            std::initializer_list<const char*> well_known) {
  if (chosen.empty()) return FirstKnown(bpe, well_known);
  const int id = bpe.TokenId(chosen);
  if (id < 0) {
    return InvalidArgumentError("tokenizer '" + path + "' has no token " + Quoted(chosen) +
                                " to use as " + what);
  }
  return int64_t{id};
}

Status LoadSentencepiece(const std::string& path, const std::string& bytes,
                         const TokenizerOptions& o, sentencepiece::SentencePieceProcessor* sp,
                         TokenizerInfo* info) {
  auto st = sp->LoadFromSerializedProto(bytes);
  if (!st.ok()) {
    return InvalidArgumentError("'" + path + "' is not a sentencepiece model (" + st.ToString() +
                                ")");
  }
  if (!o.pattern.empty() || !o.special_tokens.empty()) {
    return InvalidArgumentError("tokenizer '" + path +
                                "' is a sentencepiece model: a split pattern and special "
                                "tokens apply to tiktoken files only");
  }
  info->type = "sentencepiece";
  info->file = "tokenizer.model";
  info->vocab_size = sp->GetPieceSize();
  info->bos_id = sp->bos_id();
  info->eos_id = sp->eos_id();
  info->pad_id = sp->pad_id();
  info->unk_id = sp->unk_id();
  for (auto [name, id] : {std::pair{&o.eos_token, &info->eos_id}, {&o.bos_token, &info->bos_id}}) {
    if (name->empty()) continue;
    *id = sp->PieceToId(*name);
    if (*id == sp->unk_id() && *name != sp->IdToPiece(sp->unk_id())) {
      return InvalidArgumentError("tokenizer '" + path + "' has no piece " + Quoted(*name));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path,
                                                     const TokenizerOptions& o) {
  TOKPACK_ASSIGN_OR_RETURN(std::string bytes,
                           ReadSmallFile(path, kMaxTokenizerBytes, "a tokenizer file"));
  return FromBytes(bytes, path, o, /*read_config=*/true);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromBytes(const std::string& bytes,
                                                          const std::string& path,
                                                          const TokenizerOptions& o,
                                                          bool read_config) {
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  TokenizerInfo& info = t->info_;
  info.model_xxh3 = Xxh3(bytes);
  switch (DetectTokenizerKind(bytes)) {
    case TokenizerKind::kSentencepiece: {
      t->impl_->sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
      TOKPACK_RETURN_IF_ERROR(LoadSentencepiece(path, bytes, o, t->impl_->sp.get(), &info));
      TOKPACK_ASSIGN_OR_RETURN(t->impl_->sp_words,
                               SpmWordEncoder::Create(t->impl_->sp.get(), bytes));
      for (int id = 0; id < t->impl_->sp->GetPieceSize(); ++id) {
        t->impl_->sp_kinds.push_back(t->impl_->sp->IsUnknown(id) ? Impl::kUnknown
                                     : t->impl_->sp->IsByte(id)  ? Impl::kByte
                                                                 : Impl::kNormal);
      }
      return t;
    }
    case TokenizerKind::kHuggingFaceJson: {
      if (!o.pattern.empty() || !o.special_tokens.empty()) {
        return InvalidArgumentError("tokenizer '" + path +
                                    "' is a tokenizer.json, which defines its own pre-tokenizer "
                                    "and special tokens: --pattern and --special apply to "
                                    "tiktoken files only");
      }
      TOKPACK_ASSIGN_OR_RETURN(t->impl_->bpe, BpeTokenizer::FromHuggingFaceJson(bytes, path));
      const BpeTokenizer& bpe = *t->impl_->bpe;
      info.type = "huggingface";
      info.file = "tokenizer.json";
      info.vocab_size = bpe.vocab_size();
      info.unk_id = bpe.unk_id();
      ConfigTokens config;
      if (read_config) {
        TOKPACK_ASSIGN_OR_RETURN(config, ReadConfigTokens(path));
      }
      const std::string& eos = o.eos_token.empty() ? config.eos : o.eos_token;
      const std::string& bos = o.bos_token.empty() ? config.bos : o.bos_token;
      TOKPACK_ASSIGN_OR_RETURN(info.eos_id, SpecialId(bpe, path, eos, "EOS",
                                                      {"<|endoftext|>", "<|end_of_text|>", "</s>",
                                                       "<eos>", "<｜end▁of▁sentence｜>"}));
      TOKPACK_ASSIGN_OR_RETURN(
          info.bos_id, SpecialId(bpe, path, bos, "BOS",
                                 {"<|begin_of_text|>", "<s>", "<bos>", "<｜begin▁of▁sentence｜>"}));
      TOKPACK_ASSIGN_OR_RETURN(info.pad_id, SpecialId(bpe, path, config.pad, "PAD", {}));
      return t;
    }
    case TokenizerKind::kTiktoken: {
      TOKPACK_ASSIGN_OR_RETURN(TiktokenSetup setup, ResolveTiktokenOptions(path, o));
      TOKPACK_ASSIGN_OR_RETURN(t->impl_->bpe,
                               BpeTokenizer::FromTiktoken(bytes, setup.options, path));
      const BpeTokenizer& bpe = *t->impl_->bpe;
      info.type = "tiktoken";
      info.file = "tokenizer.tiktoken";
      info.vocab_size = bpe.vocab_size();
      info.pattern = setup.options.pattern;
      info.special_tokens.assign(setup.options.special_tokens.begin(),
                                 setup.options.special_tokens.end());
      TOKPACK_ASSIGN_OR_RETURN(info.eos_id, SpecialId(bpe, path, setup.eos, "EOS", {}));
      TOKPACK_ASSIGN_OR_RETURN(info.bos_id, SpecialId(bpe, path, setup.bos, "BOS", {}));
      return t;
    }
    case TokenizerKind::kUnknown:
      break;
  }
  return InvalidArgumentError("'" + path +
                              "' is not a tokenizer file tokpack reads: expected a "
                              "sentencepiece .model, a Hugging Face tokenizer.json or a "
                              "tiktoken ranks file (lines of base64 token and rank)");
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromRecorded(const std::string& bytes,
                                                             const std::string& path,
                                                             const TokenizerInfo& recorded) {
  // The hash first: nothing of an unverified file is parsed.
  if (Xxh3(bytes) != recorded.model_xxh3) {
    return DataLossError("tokenizer '" + path + "' does not match the hash its manifest records (" +
                         HashToHex(recorded.model_xxh3) + ")");
  }
  TokenizerOptions o;
  if (recorded.type == "tiktoken") {
    o.pattern = recorded.pattern;
    o.special_tokens = recorded.special_tokens;
  }
  // The recorded ids are the dataset's: no tokenizer_config.json is read.
  TOKPACK_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> t,
                           FromBytes(bytes, path, o, /*read_config=*/false));
  if (!recorded.type.empty() && t->info_.type != recorded.type) {
    return DataLossError("tokenizer '" + path + "' is a " + t->info_.type +
                         " file; its manifest records " + Quoted(recorded.type));
  }
  // The ids chosen at build time (by option or config) are the dataset's.
  t->info_.bos_id = recorded.bos_id;
  t->info_.eos_id = recorded.eos_id;
  t->info_.pad_id = recorded.pad_id;
  return t;
}

Status Tokenizer::Encode(std::string_view text, std::vector<int>* ids, EncodeCounts* counts,
                         const IdSink* sink) const {
  auto encode = [&]() -> Status {
    if (impl_->bpe) {
      BpeEncodeStats stats;
      TOKPACK_RETURN_IF_ERROR(impl_->bpe->Encode(text, ids, counts ? &stats : nullptr, sink));
      if (counts) {
        counts->unknown = stats.unk_tokens + stats.dropped_chars;
        counts->byte_fallback = stats.byte_fallback_tokens;
        counts->cache_lookups = stats.cache_lookups;
        counts->cache_hits = stats.cache_hits;
      }
      return Status::Ok();
    }
    if (impl_->sp_words) {
      TOKPACK_RETURN_IF_ERROR(impl_->sp_words->Encode(text, ids));
    } else {
      // Abseil's string_view is its own class in Debian's build, not std's.
      auto st = impl_->sp->Encode(absl::string_view(text.data(), text.size()), ids);
      if (!st.ok()) return InternalError("sentencepiece Encode failed: " + st.ToString());
    }
    if (counts) {
      *counts = EncodeCounts();
      for (int id : *ids) {
        const Impl::PieceKind kind = impl_->sp_kinds[static_cast<size_t>(id)];
        counts->unknown += kind == Impl::kUnknown;
        counts->byte_fallback += kind == Impl::kByte;
      }
    }
    if (sink && !ids->empty()) {
      (*sink)(ids->data(), ids->size());
      ids->clear();
    }
    return Status::Ok();
  };
  // Encoding allocates in proportion to the text (sentencepiece many times
  // over), and an allocation that fails throws: keep it inside the core.
  try {
    return encode();
  } catch (const std::bad_alloc&) {
    ids->clear();
    return Status(StatusCode::kResourceExhausted,
                  "out of memory tokenizing a text of " + std::to_string(text.size()) +
                      " bytes (--max-document-bytes bounds the size of a text)");
  }
}

StatusOr<std::string> Tokenizer::Decode(const std::vector<int>& ids) const {
  for (int id : ids) {
    if (id < 0 || id >= info_.vocab_size) {
      return OutOfRangeError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                             std::to_string(info_.vocab_size));
    }
  }
  if (impl_->bpe) return impl_->bpe->Decode(ids);
  std::string text;
  auto st = impl_->sp->Decode(ids, &text);
  if (!st.ok()) return InternalError("sentencepiece Decode failed: " + st.ToString());
  return text;
}

}  // namespace tokpack
