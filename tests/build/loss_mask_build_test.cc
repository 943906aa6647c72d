// Builds with loss masks: records' spans become the exact bits of each
// shard's .mask (straddling tokens, multi-byte characters, BOS/EOS, records
// without spans, no_loss_spans), the ids stay those of a build without
// masks, and broken spans are bad records.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "format/loss_mask.h"
#include "tests/test_util.h"
#include "tokpack/builder.h"
#include "tokpack/dataset_ops.h"

namespace tokpack {
namespace {

using testing::ReadFileOrDie;
using testing::TempDir;
using testing::WriteStringToFile;

// Bits 0..n-1 of a mask file as '0'/'1'.
std::string Bits(const std::string& mask, uint64_t n) {
  std::string out;
  for (uint64_t i = 0; i < n; ++i) {
    out += MaskBit(reinterpret_cast<const uint8_t*>(mask.data()), i) ? '1' : '0';
  }
  return out;
}

class LossMaskBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Every byte is a token; "ab" and "cd" are merged. With gpt2's split,
    // "abcd é!" is the pieces "abcd", " é", "!", so its tokens are
    //   ab | cd | ' ' | C3 | A9 | !     (bytes [0,2) [2,4) [4,5) [5,6) [6,7) [7,8))
    // over the characters a b c d ' ' é ! (é is bytes 5..6).
    WriteStringToFile(dir_.Join("t.tiktoken"), testing::TiktokenRanks({"ab", "cd"}));
  }
  BuildOptions Options(const std::string& jsonl) {
    WriteStringToFile(dir_.Join("in.jsonl"), jsonl);
    BuildOptions o;
    o.inputs = {dir_.Join("in.jsonl")};
    o.output = dir_.Join("out");
    o.tokenizer_model = dir_.Join("t.tiktoken");
    o.tokenizer_options.pattern = "gpt2";
    o.tokenizer_options.special_tokens = {{"<|endoftext|>", 258}};
    o.settings.loss_masks = true;
    o.threads = 2;
    o.force = true;
    return o;
  }
  std::string MaskBits(const BuildSummary& s) {
    EXPECT_EQ(s.manifest.shards.size(), 1u);
    const ShardInfo& shard = s.manifest.shards[0];
    EXPECT_TRUE(shard.has_mask);
    return Bits(ReadFileOrDie(dir_.Join("out/" + shard.path + ".mask")), shard.tokens);
  }
  TempDir dir_;
};

TEST_F(LossMaskBuildTest, SpansBecomeExactBits) {
  const std::string text = R"("abcd \u00e9!")";
  BuildOptions o = Options(
      // b and é: "ab" straddles the span's start, both bytes of é carry it;
      // EOS takes the bit of "!" (0).
      R"({"text": )" + text +
      R"(, "loss_spans": [[1, 2], [5, 6]]})"
      "\n"
      // The last character: EOS after it carries loss too.
      R"({"text": )" +
      text +
      R"(, "loss_spans": [[6, 7]]})"
      "\n"
      // No spans: every token.
      R"({"text": )" +
      text +
      "}\n"
      // The inverse: everything after "abcd".
      R"({"text": )" +
      text +
      R"(, "no_loss_spans": [[0, 4]]})"
      "\n"
      // An empty list: nothing, and null: no spans (everything).
      R"({"text": )" +
      text +
      R"(, "loss_spans": []})"
      "\n"
      R"({"text": )" +
      text +
      R"(, "loss_spans": null})"
      "\n");
  StatusOr<BuildSummary> s = Build(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(MaskBits(*s),
            "1001100"
            "0000011"
            "1111111"
            "0011111"
            "0000000"
            "1111111");
  EXPECT_EQ(s->manifest.shards[0].trainable_tokens, 3u + 2 + 7 + 5 + 0 + 7);
  EXPECT_TRUE(s->manifest.HasLossMasks());
  EXPECT_TRUE(s->manifest.provenance.settings.loss_masks);

  // The ids are those of a build without masks (spans removed).
  const std::string tokens = ReadFileOrDie(dir_.Join("out/shard-00000.bin"));
  std::string plain;
  for (int i = 0; i < 6; ++i) plain += R"({"text": )" + text + "}\n";
  o = Options(plain);
  o.settings.loss_masks = false;
  ASSERT_TRUE(Build(o).ok());
  EXPECT_EQ(ReadFileOrDie(dir_.Join("out/shard-00000.bin")), tokens);
  EXPECT_FALSE(testing::Exists(dir_.Join("out/shard-00000.mask")));
}

TEST_F(LossMaskBuildTest, BosCarriesLossOnlyWhereEveryTokenDoes) {
  BuildOptions o = Options(R"({"text": "abcd", "loss_spans": [[0, 2]]})"
                           "\n"
                           R"({"text": "abcd", "loss_spans": [[0, 4]]})"
                           "\n");
  o.tokenizer_options.bos_token = "<|endoftext|>";
  o.settings.add_bos = true;
  StatusOr<BuildSummary> s = Build(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // BOS ab cd EOS.
  EXPECT_EQ(MaskBits(*s),
            "0100"
            "1111");
}

TEST_F(LossMaskBuildTest, SpansWithoutLossMasksAreAnErrorNamingTheOption) {
  BuildOptions o = Options("{\"text\": \"ab\"}\n{\"text\": \"ab\", \"loss_spans\": [[0, 1]]}\n");
  o.settings.loss_masks = false;
  o.settings.skip_bad_lines = true;  // Not a bad line: the build is wrong, not the record.
  Status s = Build(o).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("in.jsonl:2: the record has 'loss_spans' but the build writes no "
                             "loss masks: pass --loss-masks"),
            std::string::npos)
      << s.message();
}

TEST_F(LossMaskBuildTest, BrokenSpansAreBadLinesNamingFileLineAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("loss_spans": [[0, 9]])", "loss_spans[0]: end 9 is past the text's 4 characters"},
      {R"("loss_spans": [[2, 1]])", "loss_spans[0]: [2, 1] is not a range"},
      {R"("loss_spans": [[-1, 1]])", "loss_spans[0]: [-1, 1] is not a range"},
      {R"("loss_spans": [[0, 2], [1, 3]])", "loss_spans[1]: start 1 is before the end 2"},
      {R"("loss_spans": [[0, 1.5]])", "loss_spans[0] is not a pair of integers"},
      {R"("loss_spans": [[0]])", "loss_spans[0] is not a pair of integers"},
      {R"("loss_spans": "0-2")", "loss_spans is not an array"},
      {R"("loss_spans": [[0, 1]], "no_loss_spans": [[1, 2]])",
       "the record has both 'loss_spans' and"},
      {R"("no_loss_spans": [[3, 2]])", "no_loss_spans[0]: [3, 2] is not a range"},
  };
  for (const auto& [field, want] : cases) {
    BuildOptions o = Options("{\"text\": \"abcd\"}\n{\"text\": \"abcd\", " + field + "}\n");
    Status s = Build(o).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << field;
    EXPECT_NE(s.message().find("in.jsonl:2: " + want), std::string::npos)
        << field << ": " << s.message();
    // Skipped and counted with --skip-bad-lines.
    o.settings.skip_bad_lines = true;
    StatusOr<BuildSummary> skipped = Build(o);
    ASSERT_TRUE(skipped.ok()) << field << ": " << skipped.status().ToString();
    EXPECT_EQ(skipped->manifest.provenance.counts.bad_lines, 1u) << field;
    EXPECT_EQ(skipped->manifest.TotalDocuments(), 1u) << field;
  }
}

TEST_F(LossMaskBuildTest, ATokenizerThatChangesTheTextIsRefusedNotGuessed) {
  // A tokenizer.json that lowercases: "AB" is encoded as "ab", whose tokens
  // do not spell the record's text, so no mask could be right.
  std::string vocab = "{";
  for (int b = 0x21; b < 0x7f; ++b) {
    if (b == '"' || b == '\\') continue;
    vocab += "\"" + std::string(1, static_cast<char>(b)) + "\":" + std::to_string(b) + ",";
  }
  vocab.back() = '}';
  WriteStringToFile(
      dir_.Join("lower.json"),
      R"({"added_tokens":[{"id":200,"content":"</s>","special":true,"single_word":false,"lstrip":false,"rstrip":false,"normalized":false}],)"
      R"("normalizer":{"type":"Lowercase"},"pre_tokenizer":null,)"
      R"("model":{"type":"BPE","unk_token":null,"vocab":)" +
          vocab + R"(,"merges":[]}})");
  BuildOptions o = Options(R"({"text": "ab", "loss_spans": [[0, 1]]})"
                           "\n"
                           R"({"text": "AB", "loss_spans": [[0, 1]]})"
                           "\n");
  o.tokenizer_model = dir_.Join("lower.json");
  o.tokenizer_options = TokenizerOptions();
  Status s = Build(o).status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("in.jsonl:2: loss masks: token offsets: the tokens do not spell "
                             "the text at byte 0"),
            std::string::npos)
      << s.message();
}

TEST_F(LossMaskBuildTest, MergeKeepsMasksAndRefusesMixingAndVerifyChecksThem) {
  BuildOptions o = Options(R"({"text": "abcd", "loss_spans": [[0, 2]]})"
                           "\n");
  o.output = dir_.Join("masked");
  ASSERT_TRUE(Build(o).ok());
  o.output = dir_.Join("masked2");
  ASSERT_TRUE(Build(o).ok());
  o = Options("{\"text\": \"abcd\"}\n");
  o.settings.loss_masks = false;
  o.output = dir_.Join("plain");
  ASSERT_TRUE(Build(o).ok());

  StatusOr<Manifest> merged =
      MergeDatasets(dir_.Join("merged"), {dir_.Join("masked"), dir_.Join("masked2")}, false, {});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_TRUE(merged->HasLossMasks());
  EXPECT_EQ(merged->TrainableTokens(), 2u * 1);  // "ab" of each; EOS follows "cd" (0).
  StatusOr<VerifyReport> report = VerifyDataset(dir_.Join("merged"), {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->problems.empty()) << report->problems[0];

  Status mixed =
      MergeDatasets(dir_.Join("mixed"), {dir_.Join("masked"), dir_.Join("plain")}, false, {})
          .status();
  EXPECT_EQ(mixed.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.message().find("has loss masks and"), std::string::npos) << mixed.message();

  // A flipped bit: the checksum and the count both say so.
  std::string mask = ReadFileOrDie(dir_.Join("masked/shard-00000.mask"));
  mask[0] ^= 0x04;
  WriteStringToFile(dir_.Join("masked/shard-00000.mask"), mask);
  report = VerifyDataset(dir_.Join("masked"), {});
  ASSERT_TRUE(report.ok());
  std::string all;
  for (const auto& p : report->problems) all += p + "\n";
  EXPECT_NE(all.find("shard-00000.mask: chunk 0"), std::string::npos) << all;
  EXPECT_NE(all.find("2 tokens carry loss, manifest says 1"), std::string::npos) << all;
  // A set unused bit (3 tokens: bits 3..7 unused).
  mask[0] = static_cast<char>(0x01 | 0x80);
  WriteStringToFile(dir_.Join("masked/shard-00000.mask"), mask);
  report = VerifyDataset(dir_.Join("masked"), {});
  ASSERT_TRUE(report.ok());
  all.clear();
  for (const auto& p : report->problems) all += p + "\n";
  EXPECT_NE(all.find("unused bits are not 0"), std::string::npos) << all;
}

}  // namespace
}  // namespace tokpack
