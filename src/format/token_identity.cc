#include "format/token_identity.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tokpack {
namespace {

// The parts of the identity a manifest records, as bits.
constexpr unsigned kTokenizer = 1;
constexpr unsigned kVocab = 2;
constexpr unsigned kSettings = 4;

unsigned KnownFields(const Manifest& m) {
  return (m.tokenizer.model_xxh3 != 0 ? kTokenizer : 0) |
         (m.tokenizer.vocab_size >= 0 ? kVocab : 0) |
         (m.provenance.kind != "import" ? kSettings : 0);
}

std::string Id(int64_t id) { return id < 0 ? "none" : std::to_string(id); }

std::string Bool(bool b) { return b ? "true" : "false"; }

std::string SpecialToken(const std::vector<std::pair<std::string, int64_t>>& tokens, size_t i) {
  if (i >= tokens.size()) return "none";
  return "'" + tokens[i].first + "' " + std::to_string(tokens[i].second);
}

// Appends "what x vs y" to *out when x and y differ.
void Compare(const std::string& what, const std::string& x, const std::string& y,
             std::vector<std::string>* out) {
  if (x != y) out->push_back(what + " " + x + " vs " + y);
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// "different tokenizers (...)", "different BOS/EOS settings (...)", both
// joined by "and", or empty when a and b agree in the fields both know.
std::string Differences(const Manifest& a, const Manifest& b, Unknown unknown) {
  const unsigned both =
      (KnownFields(a) & KnownFields(b)) | (unknown == Unknown::kDiffers ? kTokenizer | kVocab : 0);
  const TokenizerInfo& s = a.tokenizer;
  const TokenizerInfo& t = b.tokenizer;
  std::vector<std::string> tokenizer;
  if (both & kTokenizer) {
    Compare("tokenizer file xxh3", "0x" + HashToHex(s.model_xxh3), "0x" + HashToHex(t.model_xxh3),
            &tokenizer);
  }
  if (both & kVocab) {
    Compare("vocab_size", std::to_string(s.vocab_size), std::to_string(t.vocab_size), &tokenizer);
  }
  if (both & kTokenizer) {
    // One file read with another split pattern, other special tokens or
    // another EOS/BOS/pad choice gives other ids.
    Compare("pattern", "'" + s.pattern + "'", "'" + t.pattern + "'", &tokenizer);
    size_t i = 0;
    while (i < s.special_tokens.size() && i < t.special_tokens.size() &&
           s.special_tokens[i] == t.special_tokens[i]) {
      ++i;
    }
    Compare("special token " + std::to_string(i), SpecialToken(s.special_tokens, i),
            SpecialToken(t.special_tokens, i), &tokenizer);
    Compare("eos_id", Id(s.eos_id), Id(t.eos_id), &tokenizer);
    Compare("bos_id", Id(s.bos_id), Id(t.bos_id), &tokenizer);
    Compare("pad_id", Id(s.pad_id), Id(t.pad_id), &tokenizer);
  }
  std::vector<std::string> settings;
  if (both & kSettings) {
    const BuildSettings& x = a.provenance.settings;
    const BuildSettings& y = b.provenance.settings;
    Compare("add_bos", Bool(x.add_bos), Bool(y.add_bos), &settings);
    Compare("add_eos", Bool(x.add_eos), Bool(y.add_eos), &settings);
  }
  std::string out;
  if (!tokenizer.empty()) out = "different tokenizers (" + Join(tokenizer) + ")";
  if (!settings.empty()) {
    out += (out.empty() ? "" : " and ") + std::string("different BOS/EOS settings (") +
           Join(settings) + ")";
  }
  return out;
}

}  // namespace

Status CheckTokenIdentity(const std::vector<NamedManifest>& datasets, Unknown unknown) {
  // Between them, the first dataset to know each field: a dataset that
  // agrees with all of them agrees with every one before it.
  std::vector<const NamedManifest*> firsts;
  unsigned known = 0;
  for (const NamedManifest& d : datasets) {
    for (const NamedManifest* first : firsts) {
      const std::string differences = Differences(*first->manifest, *d.manifest, unknown);
      if (!differences.empty()) {
        return InvalidArgumentError("'" + std::string(first->name) + "' and '" +
                                    std::string(d.name) + "' have " + differences);
      }
    }
    // Strict, every dataset is compared with the first for the tokenizer.
    const unsigned fields =
        KnownFields(*d.manifest) | (unknown == Unknown::kDiffers ? kTokenizer | kVocab : 0);
    if (fields & ~known) {
      firsts.push_back(&d);
      known |= fields;
    }
  }
  return Status::Ok();
}

}  // namespace tokpack
