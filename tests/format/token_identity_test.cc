#include "format/token_identity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tokpack {
namespace {

// A built dataset's manifest with a cl100k-like tokenizer.
Manifest Built() {
  Manifest m;
  m.provenance.kind = "build";
  m.tokenizer.type = "tiktoken";
  m.tokenizer.model_xxh3 = 0x1f2e3d4c5b6a7988;
  m.tokenizer.vocab_size = 100277;
  m.tokenizer.eos_id = 100257;
  m.tokenizer.pattern = "\\s+";
  m.tokenizer.special_tokens = {{"<|endoftext|>", 100257}};
  return m;
}

// A bare Megatron prefix's manifest: nothing of the identity is known.
Manifest Bare() {
  Manifest m;
  m.provenance.kind = "import";
  return m;
}

Status Check(const std::vector<const Manifest*>& manifests) {
  static const char* const kNames[] = {"a", "b", "c", "d"};
  std::vector<NamedManifest> named;
  for (size_t i = 0; i < manifests.size(); ++i) named.push_back({kNames[i], manifests[i]});
  return CheckTokenIdentity(named);
}

std::string Refusal(const std::vector<const Manifest*>& manifests) {
  Status s = Check(manifests);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  return s.message();
}

TEST(TokenIdentity, TheSameTokenizerAndSettingsPass) {
  const Manifest a = Built(), b = Built();
  EXPECT_TRUE(Check({&a, &b, &a}).ok());
  EXPECT_TRUE(Check({}).ok());
}

TEST(TokenIdentity, ARefusalNamesBothDatasetsAndEveryDifferenceWithBothValues) {
  const Manifest a = Built();
  Manifest b = Built();
  b.tokenizer.model_xxh3 = 0x9c8b7a6958473625;
  b.tokenizer.eos_id = 1;
  EXPECT_EQ(Refusal({&a, &b}),
            "'a' and 'b' have different tokenizers (tokenizer file xxh3 0x1f2e3d4c5b6a7988 vs "
            "0x9c8b7a6958473625, eos_id 100257 vs 1)");
  b = Built();
  b.tokenizer.vocab_size = 129280;
  b.tokenizer.bos_id = 0;
  b.tokenizer.pad_id = 5;
  EXPECT_EQ(Refusal({&a, &b}),
            "'a' and 'b' have different tokenizers (vocab_size 100277 vs 129280, bos_id none vs "
            "0, pad_id none vs 5)");
}

TEST(TokenIdentity, OneFileReadWithAnotherPatternOrOtherSpecialTokensDiffers) {
  const Manifest a = Built();
  Manifest b = Built();
  b.tokenizer.pattern = "\\w+";
  b.tokenizer.special_tokens.push_back({"<|fim|>", 100258});
  EXPECT_EQ(Refusal({&a, &b}),
            "'a' and 'b' have different tokenizers (pattern '\\s+' vs '\\w+', special token 1 "
            "none vs '<|fim|>' 100258)");
}

TEST(TokenIdentity, BosEosSettingsDifferUnlessADatasetIsAnImport) {
  const Manifest a = Built();
  Manifest b = Built();
  b.provenance.settings.add_eos = false;
  b.tokenizer.eos_id = 7;
  EXPECT_EQ(Refusal({&a, &b}),
            "'a' and 'b' have different tokenizers (eos_id 100257 vs 7) and different BOS/EOS "
            "settings (add_eos true vs false)");
  b = Built();
  b.provenance.settings.add_bos = true;
  EXPECT_EQ(Refusal({&a, &b}),
            "'a' and 'b' have different BOS/EOS settings (add_bos false vs true)");
  // An import does not know how its ids were made.
  b.provenance.kind = "import";
  EXPECT_TRUE(Check({&a, &b}).ok());
}

TEST(TokenIdentity, FieldsUnknownOnEitherSideAreNotCompared) {
  const Manifest a = Built(), bare = Bare();
  EXPECT_TRUE(Check({&a, &bare}).ok());
  EXPECT_TRUE(Check({&bare, &a}).ok());
  // A vocab size without a tokenizer: only the vocab size is compared.
  Manifest sized = Bare();
  sized.tokenizer.vocab_size = 100277;
  sized.tokenizer.eos_id = 3;
  EXPECT_TRUE(Check({&a, &sized}).ok());
  sized.tokenizer.vocab_size = 60000;
  EXPECT_EQ(Refusal({&a, &sized}),
            "'a' and 'b' have different tokenizers (vocab_size 100277 vs 60000)");
  // A tokenizer without a vocab size.
  Manifest unsized = Built();
  unsized.tokenizer.vocab_size = -1;
  EXPECT_TRUE(Check({&unsized, &a}).ok());
}

TEST(TokenIdentity, AnUnknownDatasetBetweenTwoDifferentOnesHidesNothing) {
  const Manifest bare = Bare(), a = Built();
  Manifest b = Built();
  b.tokenizer.eos_id = 1;
  EXPECT_EQ(Refusal({&bare, &a, &bare, &b}),
            "'b' and 'd' have different tokenizers (eos_id 100257 vs 1)");
  // Each field against the first dataset that knows it.
  Manifest sized = Bare();
  sized.tokenizer.vocab_size = 100277;
  Manifest other = Bare();
  other.tokenizer.vocab_size = 50000;
  EXPECT_EQ(Refusal({&bare, &sized, &a, &other}),
            "'b' and 'd' have different tokenizers (vocab_size 100277 vs 50000)");
}

// A merge writes one tokenizer for all its parts: one that records none
// differs from one that does (a mixture lets it blend).
TEST(TokenIdentity, AMergeRefusesAPartWithoutTheTokenizerTheOthersRecord) {
  const Manifest built = Built(), bare = Bare();
  std::vector<NamedManifest> named = {{"a", &built}, {"b", &bare}};
  EXPECT_TRUE(CheckTokenIdentity(named).ok());
  Status strict = CheckTokenIdentity(named, Unknown::kDiffers);
  ASSERT_EQ(strict.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(strict.message().find("'a' and 'b' have different tokenizers (tokenizer file xxh3"),
            std::string::npos)
      << strict.message();
  const Manifest other_bare = Bare();
  named = {{"a", &bare}, {"b", &other_bare}};
  EXPECT_TRUE(CheckTokenIdentity(named, Unknown::kDiffers).ok()) << "two imports merge";
}

}  // namespace
}  // namespace tokpack
