// tokenizer.json loading and encoding, on small hand-made files whose ids can
// be checked by hand. (compare_reference.py checks trained models against
// tokenizers itself.)
#include <gtest/gtest.h>
#include <utf8proc.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"

namespace tokpack {
namespace {

using Ids = std::vector<int>;

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A byte-level vocabulary: every byte's stand-in character with id = byte
// value (so unmerged text encodes to its bytes), then `extra` entries (raw
// text, converted to stand-ins) from id 256 up.
std::string ByteLevelVocab(const std::vector<std::string>& extra) {
  auto stand_in = [](std::string_view raw) {
    std::string s;
    for (char c : raw) {
      uint32_t cp = ByteLevelCodepoint(static_cast<unsigned char>(c));
      if (cp < 0x80) {
        s += static_cast<char>(cp);
      } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      }
    }
    return s;
  };
  std::string out = "{";
  for (int b = 0; b < 256; ++b) {
    out +=
        JsonString(stand_in(std::string(1, static_cast<char>(b)))) + ":" + std::to_string(b) + ",";
  }
  for (size_t i = 0; i < extra.size(); ++i) {
    out += JsonString(stand_in(extra[i])) + ":" + std::to_string(256 + i) + ",";
  }
  out.back() = '}';
  return out;
}

struct Spec {
  std::string vocab = ByteLevelVocab({});
  std::string merges = "[]";
  std::string model_extra;  // e.g. ,"ignore_merges":true
  std::string normalizer = "null";
  std::string pre_tokenizer =
      R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true})";
  std::string added = "[]";
  std::string Json() const {
    return R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":)" + added +
           R"(,"normalizer":)" + normalizer + R"(,"pre_tokenizer":)" + pre_tokenizer +
           R"(,"post_processor":null,"decoder":null,"model":{"type":"BPE")" + model_extra +
           // simdjson finds the first of repeated keys: model_extra overrides.
           R"(,"dropout":null,"unk_token":null,"continuing_subword_prefix":null,)" +
           R"("end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,"vocab":)" + vocab +
           R"(,"merges":)" + merges + "}}";
  }
};

std::unique_ptr<BpeTokenizer> Load(const Spec& spec) {
  auto t = BpeTokenizer::FromHuggingFaceJson(spec.Json(), "test.json");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

Ids Encode(const BpeTokenizer& t, std::string_view text, BpeEncodeStats* stats = nullptr) {
  Ids ids = {-7};  // Encode replaces.
  Status st = t.Encode(text, &ids, stats);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return ids;
}

std::string LoadError(const Spec& spec) {
  auto t = BpeTokenizer::FromHuggingFaceJson(spec.Json(), "dir/tokenizer.json");
  EXPECT_FALSE(t.ok());
  return t.ok() ? "" : t.status().message();
}

// Character-level (no ByteLevel) model over a tiny vocabulary.
Spec CharLevel(std::string vocab, std::string merges) {
  Spec s;
  s.vocab = std::move(vocab);
  s.merges = std::move(merges);
  s.pre_tokenizer = "null";
  return s;
}

TEST(HfJsonTest, MergesByRankThenLeftmost) {
  auto t = Load(CharLevel(R"({"a":0,"b":1,"c":2,"ab":3,"bc":4,"abc":5,"aa":6})",
                          R"(["b c", "a b", "a bc", ["a", "a"]])"));
  EXPECT_EQ(Encode(*t, "abc"), Ids({5}));  // b c (rank 0) before a b (rank 1).
  EXPECT_EQ(Encode(*t, "ab"), Ids({3}));
  EXPECT_EQ(Encode(*t, "aaa"), Ids({6, 0}));  // Equal ranks: leftmost first.
  EXPECT_EQ(Encode(*t, "aaaaa"), Ids({6, 6, 0}));
  EXPECT_EQ(Encode(*t, ""), Ids());
}

TEST(HfJsonTest, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  Spec s = CharLevel(R"({"a":0,"b":1,"c":2,"ab":3,"abc":4})", R"(["a b"])");
  EXPECT_EQ(Encode(*Load(s), "abc"), Ids({3, 2}));
  s.model_extra = R"(,"ignore_merges":true)";
  EXPECT_EQ(Encode(*Load(s), "abc"), Ids({4}));
}

TEST(HfJsonTest, UnknownCharactersUnkFuseAndDrop) {
  Spec s = CharLevel(R"({"a":0,"<unk>":1})", "[]");
  BpeEncodeStats stats;
  EXPECT_EQ(Encode(*Load(s), "axya", &stats), Ids({0, 0}));  // No unk_token: dropped.
  EXPECT_EQ(stats.dropped_chars, 2);
  s.model_extra = R"(,"unk_token":"<unk>")";
  EXPECT_EQ(Encode(*Load(s), "axya", &stats), Ids({0, 1, 1, 0}));
  EXPECT_EQ(stats.unk_tokens, 2);
  s.model_extra = R"(,"unk_token":"<unk>","fuse_unk":true)";
  EXPECT_EQ(Encode(*Load(s), "axyaz", &stats), Ids({0, 1, 0, 1}));
  EXPECT_EQ(stats.unk_tokens, 2);
  EXPECT_EQ(Load(s)->unk_id(), 1);
}

TEST(HfJsonTest, ByteFallback) {
  Spec s = CharLevel(R"({"a":0,"<0xC3>":1,"<0xA9>":2,"<unk>":3})", "[]");
  s.model_extra = R"(,"unk_token":"<unk>","byte_fallback":true)";
  auto t = Load(s);
  BpeEncodeStats stats;
  EXPECT_EQ(Encode(*t, "a\xC3\xA9", &stats), Ids({0, 1, 2}));
  EXPECT_EQ(stats.byte_fallback_tokens, 2);
  EXPECT_EQ(Encode(*t, "a\xE2\x82\xAC", &stats), Ids({0, 3}));  // No <0xE2>: unk.
  EXPECT_EQ(*t->Decode({0, 1, 2}), "a\xC3\xA9");
}

TEST(HfJsonTest, ByteLevelEncodesBytesAndDecodesBack) {
  Spec s;
  s.vocab = ByteLevelVocab({"he", "hel", " w", "hello"});
  s.merges = R"(["h e", "he l", "Ġ w"])";
  auto t = Load(s);
  // "hello world": hello| world -> hel l o | w o r l d.
  EXPECT_EQ(Encode(*t, "hello world"), Ids({257, 'l', 'o', 258, 'o', 'r', 'l', 'd'}));
  EXPECT_EQ(*t->Decode(Encode(*t, "h\xC3\xA9\n\t")), "h\xC3\xA9\n\t");
  EXPECT_EQ(t->TokenId("Ġw"), 258);
  EXPECT_EQ(t->vocab_size(), 260);
  EXPECT_FALSE(t->Decode({260}).ok());
  s.model_extra = R"(,"ignore_merges":true)";
  EXPECT_EQ(Encode(*Load(s), "hello"), Ids({259}));
}

TEST(HfJsonTest, ByteLevelPrefixSpaceAndNoRegex) {
  Spec s;
  s.vocab = ByteLevelVocab({" hi", "a b"});
  s.model_extra = R"(,"ignore_merges":true)";
  s.pre_tokenizer = R"({"type":"ByteLevel","add_prefix_space":true,"use_regex":true})";
  EXPECT_EQ(Encode(*Load(s), "hi"), Ids({256}));
  EXPECT_EQ(Encode(*Load(s), " hi"), Ids({256}));  // Already starts with a space.
  s.pre_tokenizer = R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":false})";
  EXPECT_EQ(Encode(*Load(s), "a b"), Ids({257}));
  s.pre_tokenizer = R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":true})";
  EXPECT_EQ(Encode(*Load(s), "a b"), Ids({'a', ' ', 'b'}));
}

// "a-b--c" split on "-" with each behaviour; multi-byte pieces in the
// vocabulary (ignore_merges) make the pieces visible in the ids.
TEST(HfJsonTest, SplitBehaviours) {
  Spec s;
  s.vocab = ByteLevelVocab({"a-", "b-", "-b", "-c", "--"});
  s.model_extra = R"(,"ignore_merges":true)";
  auto with = [&](std::string_view behavior, bool invert) {
    s.pre_tokenizer = std::string(R"({"type":"Sequence","pretokenizers":[{"type":"Split",)") +
                      R"("pattern":{"String":"-"},"behavior":")" + std::string(behavior) +
                      R"(","invert":)" + (invert ? "true" : "false") +
                      R"(},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]})";
    return Encode(*Load(s), "a-b--c");
  };
  EXPECT_EQ(with("Isolated", false), Ids({'a', '-', 'b', '-', '-', 'c'}));
  EXPECT_EQ(with("Removed", false), Ids({'a', 'b', 'c'}));
  EXPECT_EQ(with("MergedWithPrevious", false), Ids({256, 257, '-', 'c'}));
  EXPECT_EQ(with("MergedWithNext", false), Ids({'a', 258, '-', 259}));
  EXPECT_EQ(with("Contiguous", false), Ids({'a', '-', 'b', 260, 'c'}));
  EXPECT_EQ(with("Removed", true), Ids({'-', '-', '-'}));
  // Inverted, the letters are the delimiters that merge into what precedes.
  EXPECT_EQ(with("MergedWithPrevious", true), Ids({'a', 258, '-', 259}));
}

TEST(HfJsonTest, DigitsAndRegexSplit) {
  Spec s;
  s.vocab = ByteLevelVocab({"123", "a1"});
  s.model_extra = R"(,"ignore_merges":true)";
  const std::string byte_level =
      R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":false})";
  s.pre_tokenizer = R"({"type":"Sequence","pretokenizers":[{"type":"Digits",)"
                    R"("individual_digits":false},)" +
                    byte_level + "]}";
  EXPECT_EQ(Encode(*Load(s), "x123y"), Ids({'x', 256, 'y'}));
  s.pre_tokenizer = R"({"type":"Sequence","pretokenizers":[{"type":"Digits",)"
                    R"("individual_digits":true},)" +
                    byte_level + "]}";
  EXPECT_EQ(Encode(*Load(s), "x123y"), Ids({'x', '1', '2', '3', 'y'}));
  s.pre_tokenizer = R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":)"
                    R"({"Regex":"\\p{L}\\p{N}"},"behavior":"Isolated","invert":false},)" +
                    byte_level + "]}";
  EXPECT_EQ(Encode(*Load(s), "xa1"), Ids({'x', 257}));
}

TEST(HfJsonTest, Normalizers) {
  Spec s;
  s.normalizer = R"({"type":"NFC"})";
  EXPECT_EQ(Encode(*Load(s), "e\xCC\x81"), Ids({0xC3, 0xA9}));
  s.normalizer = R"({"type":"NFD"})";
  EXPECT_EQ(Encode(*Load(s), "\xC3\xA9"), Ids({'e', 0xCC, 0x81}));
  s.normalizer = R"({"type":"NFKC"})";
  EXPECT_EQ(Encode(*Load(s), "\xEF\xAC\x81"), Ids({'f', 'i'}));  // U+FB01 LATIN SMALL LIGATURE FI.
  s.normalizer = R"({"type":"Lowercase"})";
  EXPECT_EQ(Encode(*Load(s), "AB\xC4\xB0"), Ids({'a', 'b', 'i', 0xCC, 0x87}));  // İ -> i̇.
  s.normalizer = R"({"type":"Sequence","normalizers":[{"type":"Replace","pattern":)"
                 R"({"String":" "},"content":"_"},{"type":"Prepend","prepend":">"},)"
                 R"({"type":"Replace","pattern":{"Regex":"\\d+"},"content":"#"}]})";
  s.pre_tokenizer = R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":false})";
  EXPECT_EQ(Encode(*Load(s), "a 12"), Ids({'>', 'a', '_', '#'}));
}

TEST(HfJsonTest, AddedTokens) {
  Spec s;
  s.added =
      R"([{"id":9,"content":"<|eot|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
    {"id":9,"content":"<mask>","single_word":false,"lstrip":true,"rstrip":false,"normalized":false,"special":true},
    {"id":9,"content":"<r>","single_word":false,"lstrip":false,"rstrip":true,"normalized":false,"special":true},
    {"id":9,"content":"hi","single_word":true,"lstrip":false,"rstrip":false,"normalized":true,"special":false},
    {"id":9,"content":"yes","single_word":false,"lstrip":false,"rstrip":false,"normalized":true,"special":false},
    {"id":9,"content":"NO","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":false},
    {"id":9,"content":"a","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}])";
  s.normalizer = R"({"type":"Lowercase"})";
  auto t = Load(s);
  // Ids follow tokenizers: after the vocabulary, in file order; "a" keeps its
  // vocabulary id. The file's "id" fields are not used.
  EXPECT_EQ(t->TokenId("<|eot|>"), 256);
  EXPECT_EQ(t->TokenId("NO"), 261);
  EXPECT_EQ(t->TokenId("a"), 'a');
  ASSERT_EQ(t->added_tokens().size(), 7u);
  EXPECT_EQ(t->added_tokens()[0].content, "a");
  EXPECT_TRUE(t->added_tokens()[1].special);
  EXPECT_EQ(t->vocab_size(), 262);

  EXPECT_EQ(Encode(*t, "x<|eot|>y"), Ids({'x', 256, 'y'}));
  EXPECT_EQ(Encode(*t, "x  <mask> y"), Ids({'x', 257, ' ', 'y'}));  // lstrip takes "  ".
  EXPECT_EQ(Encode(*t, "x <r>  y"), Ids({'x', ' ', 258, 'y'}));     // rstrip takes "  ".
  EXPECT_EQ(Encode(*t, "hi there"), Ids({259, ' ', 't', 'h', 'e', 'r', 'e'}));
  EXPECT_EQ(Encode(*t, "this"), Ids({'t', 'h', 'i', 's'}));   // Not a single word.
  EXPECT_EQ(Encode(*t, "YES"), Ids({260}));                   // Matched after lowercasing.
  EXPECT_EQ(Encode(*t, "NO no"), Ids({261, ' ', 'n', 'o'}));  // Raw text only.
  EXPECT_EQ(*t->Decode({'x', 256}), "x<|eot|>");
}

TEST(HfJsonTest, NormalizerRunsPerSegmentBetweenRawAddedTokens) {
  Spec s;
  s.added =
      R"([{"id":0,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}])";
  s.normalizer = R"({"type":"Prepend","prepend":"_"})";
  s.pre_tokenizer = R"({"type":"ByteLevel","add_prefix_space":true,"use_regex":true})";
  EXPECT_EQ(Encode(*Load(s), "a<s>b"), Ids({' ', '_', 'a', 256, ' ', '_', 'b'}));
}

TEST(HfJsonTest, RefusesWhatItCannotReproduce) {
  Spec s;
  s.normalizer = R"({"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"BertNormalizer"}]})";
  EXPECT_EQ(LoadError(s),
            "dir/tokenizer.json: normalizer.normalizers[1]: normalizer BertNormalizer is not "
            "supported");
  s = Spec();
  s.pre_tokenizer = R"({"type":"Metaspace","replacement":"_"})";
  EXPECT_EQ(LoadError(s),
            "dir/tokenizer.json: pre_tokenizer: pre_tokenizer Metaspace is not supported");
  s.pre_tokenizer =
      R"({"type":"Sequence","pretokenizers":[{"type":"ByteLevel"},{"type":"Digits"}]})";
  EXPECT_NE(LoadError(s).find("pre_tokenizer.pretokenizers[1]: pre_tokenizer Digits after "
                              "ByteLevel is not supported"),
            std::string::npos);
  s = Spec();
  s.model_extra = R"(,"dropout":0.1)";
  EXPECT_NE(LoadError(s).find("model.dropout: is not supported"), std::string::npos);
  s.model_extra = R"(,"dropout":0.0,"continuing_subword_prefix":"##")";
  EXPECT_NE(LoadError(s).find("model.continuing_subword_prefix: is not supported"),
            std::string::npos);
  std::string json = Spec().Json();
  json.replace(json.find(R"("type":"BPE")"), 12, R"("type":"WordPiece")");
  auto t = BpeTokenizer::FromHuggingFaceJson(json, "t.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "t.json: model.type: model type WordPiece is not supported (tokpack reads BPE "
            "tokenizer.json files)");
}

TEST(HfJsonTest, TruncationAndPaddingAreIgnoredForWholeDocuments) {
  std::string json = Spec().Json();
  auto plain = BpeTokenizer::FromHuggingFaceJson(json, "t.json");
  json.replace(json.find(R"("truncation":null)"), 17, R"("truncation":{"max_length":1})");
  json.replace(json.find(R"("padding":null)"), 14, R"("padding":{"length":64})");
  auto truncating = BpeTokenizer::FromHuggingFaceJson(json, "t.json");
  ASSERT_TRUE(plain.ok() && truncating.ok()) << truncating.status().ToString();
  std::vector<int> a, b;
  ASSERT_TRUE((*plain)->Encode("hello hello world", &a).ok());
  ASSERT_TRUE((*truncating)->Encode("hello hello world", &b).ok());
  EXPECT_GT(a.size(), 1u);
  EXPECT_EQ(a, b);
}

TEST(HfJsonTest, MalformedFilesNameFileAndPlace) {
  auto t = BpeTokenizer::FromHuggingFaceJson("{\"model\":\n  {\"type\": \"BPE\",, }}", "x.json");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("x.json: malformed JSON at line 2, column 18"),
            std::string::npos)
      << t.status().message();

  Spec s;
  s.vocab = R"({"a":0,"b":2147483648})";
  EXPECT_NE(LoadError(s).find("model.vocab.'b': is not a token id in [0, 16777215]"),
            std::string::npos)
      << LoadError(s);
  s.vocab = R"({"a":0,"b":16777216})";  // Below INT32_MAX, but not a real vocabulary.
  EXPECT_NE(LoadError(s).find("is not a token id"), std::string::npos);
  s.vocab = R"({"a":0,"b":-1})";
  EXPECT_NE(LoadError(s).find("is not a token id"), std::string::npos);
  s = CharLevel(R"({"a":0,"b":1})", R"(["a b"])");
  EXPECT_EQ(LoadError(s), "dir/tokenizer.json: model.merges[0]: token 'ab' is not in model.vocab");
  s = CharLevel(R"({"a":0,"b":1,"ab":2})", R"(["a  b"])");
  EXPECT_NE(LoadError(s).find("model.merges[0]: 'a  b' is not two tokens"), std::string::npos);
  auto missing = BpeTokenizer::FromHuggingFaceJson(R"({"normalizer":null})", "m.json");
  EXPECT_EQ(missing.status().message(), "m.json: model: is missing or not an object");
}

TEST(HfJsonTest, LongRunsAreNotQuadratic) {
  // One piece of 1 MiB of spaces (GPT-2's \s+(?!\S) takes the whole run) and
  // one of 1 MiB of letters; merges "Ġ Ġ" and "ĠĠ ĠĠ", "a a" and "aa aa".
  Spec s;
  s.vocab = ByteLevelVocab({"  ", "    ", "aa", "aaaa"});
  s.merges = R"(["Ġ Ġ", "ĠĠ ĠĠ", "a a", "aa aa"])";
  auto t = Load(s);
  const size_t n = size_t{1} << 20;
  for (char c : {' ', 'a'}) {
    uint64_t before = BpeTokenizer::MergeStepsForTesting();
    Ids ids = Encode(*t, std::string(n, c));
    EXPECT_EQ(ids.size(), n / 4);
    EXPECT_EQ(ids[0], c == ' ' ? 257 : 259);
    EXPECT_LT(BpeTokenizer::MergeStepsForTesting() - before, 4 * n);
  }
}

TEST(HfJsonTest, LongTextsAreNormalizedInPiecesExactlyAsAWhole) {
  // Pieces are cut before ASCII characters about every 1 MiB: runs of
  // composing, reordering, decomposing and compatibility characters of
  // varying lengths put the cuts everywhere among them.
  const std::vector<std::string> parts = {"e\u0301\u0323",
                                          "A\u030a",
                                          "\u1100\u1161\u11a8",
                                          "\ufb01",
                                          "\u00bd",
                                          "\u212b",
                                          "o\u0308\u0304",
                                          "\u0f73",
                                          "\u3070\u3099",
                                          "\uac00\u11a8",
                                          "\u2460",
                                          "\uff21",
                                          "x",
                                          " ",
                                          "\n"};
  std::string text;
  for (uint64_t i = 0; text.size() < (3u << 20); ++i) {
    text += parts[(i * 7 + i / 5) % parts.size()];
    if (i % 11 == 0) text += "\u0301";  // A mark right after whatever came before.
  }
  const std::pair<Normalizer::Form, int> forms[] = {
      {Normalizer::Form::kNfc, UTF8PROC_COMPOSE},
      {Normalizer::Form::kNfd, UTF8PROC_DECOMPOSE},
      {Normalizer::Form::kNfkc, UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
      {Normalizer::Form::kNfkd, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT}};
  for (const auto& [form, options] : forms) {
    Normalizer n;
    n.AddUnicodeForm(form, "test");
    std::string got;
    ASSERT_TRUE(n.Apply(text, &got).ok());
    utf8proc_uint8_t* whole = nullptr;
    const utf8proc_ssize_t len =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                     static_cast<utf8proc_ssize_t>(text.size()), &whole,
                     static_cast<utf8proc_option_t>(UTF8PROC_STABLE | options));
    ASSERT_GT(len, 0);
    const std::string want(reinterpret_cast<const char*>(whole), static_cast<size_t>(len));
    std::free(whole);
    EXPECT_TRUE(got == want) << "form " << static_cast<int>(form);
  }
}

}  // namespace
}  // namespace tokpack
