// spm_model_proto: a hand-built ModelProto's fields as sentencepiece reads
// them, the identity-normalizer copy, and refusal of truncated bytes.
#include "tokenizer/spm_model_proto.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace tokpack {
namespace {

// Length-delimited field `number` holding `payload`.
std::string Field(int number, const std::string& payload) {
  return std::string(1, static_cast<char>(number << 3 | 2)) + static_cast<char>(payload.size()) +
         payload;
}

TEST(SpmModelProtoTest, ReadsTypesScoresAndTrainerFlags) {
  const float score = -2.5f;
  std::string score_bytes(4, '\0');
  std::memcpy(score_bytes.data(), &score, 4);
  const std::string model = Field(1, Field(1, "<unk>") + std::string("\x18\x02", 2)) +
                            Field(1, Field(1, "ab") + "\x15" + score_bytes) +
                            Field(1, Field(1, std::string("\0", 1)) + std::string("\x18\x01", 2)) +
                            Field(2, std::string("\x18\x02", 2) +
                                         std::string("\x98\x02\x01", 3)) +  // BPE, byte_fallback.
                            Field(3, Field(1, "nmt_nfkc"));
  StatusOr<SpmModel> m = ReadSpmModel(model);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->type, SpmModelType::kBpe);
  EXPECT_TRUE(m->byte_fallback);
  EXPECT_EQ(m->unk_id, 0);
  ASSERT_EQ(m->pieces.size(), 3u);
  EXPECT_EQ(m->pieces[1].text, "ab");
  EXPECT_EQ(m->pieces[1].score, score);
  EXPECT_EQ(m->pieces[1].type, SpmPieceType::kNormal);
  // As sentencepiece loads it with byte_fallback (its issue 1308).
  EXPECT_EQ(m->pieces[2].type, SpmPieceType::kUnused);

  StatusOr<std::string> identity = WithIdentityNormalizer(model);
  ASSERT_TRUE(identity.ok());
  EXPECT_EQ(identity->find("nmt_nfkc"), std::string::npos);
  EXPECT_NE(identity->find("identity"), std::string::npos);
  EXPECT_EQ(identity->substr(0, model.size() - 12), model.substr(0, model.size() - 12));

  EXPECT_FALSE(ReadSpmModel(model.substr(0, model.size() - 3)).ok());
  EXPECT_FALSE(WithIdentityNormalizer(model.substr(0, 9)).ok());
}

}  // namespace
}  // namespace tokpack
