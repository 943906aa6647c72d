// A loader's mixture must have one token identity (src/format/token_identity.h)
// unless allow_mixed_tokenizers, which the cursor records.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/reader/synthetic_dataset.h"
#include "tests/test_util.h"
#include "tokpack/loader.h"
#include "tokpack/manifest.h"

namespace tokpack {
namespace {

class LoaderTokenIdentityTest : public ::testing::Test {
 protected:
  // A synthetic dataset recording a tokenizer file of hash `model` and EOS `eos`.
  std::shared_ptr<Dataset> Write(const std::string& name, uint64_t model, int64_t eos) {
    Manifest m = testing::WriteSyntheticDataset(dir_.Join(name), testing::CyclingLengths(100, 40),
                                                model % 16);
    m.tokenizer.model_xxh3 = model;
    m.tokenizer.eos_id = eos;
    EXPECT_TRUE(m.Save(dir_.Join(name)).ok());
    auto ds = Dataset::Open(dir_.Join(name));
    EXPECT_TRUE(ds.ok()) << ds.status().ToString();
    return *ds;
  }
  static LoaderOptions Opts(bool allow) {
    LoaderOptions o;
    o.seq_len = 16;
    o.batch_size = 4;
    o.seed = 7;
    o.allow_mixed_tokenizers = allow;
    return o;
  }
  static void ExpectRefused(const StatusOr<std::unique_ptr<Loader>>& l, const std::string& what) {
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(l.status().message().find(what), std::string::npos) << l.status().message();
    EXPECT_NE(l.status().message().find("pass allow_mixed_tokenizers=true"), std::string::npos)
        << l.status().message();
  }
  testing::TempDir dir_;
};

TEST_F(LoaderTokenIdentityTest, AWeightedMixtureOfDifferentEosIsRefusedNamingBoth) {
  auto a = Write("a", 0x11, 2), b = Write("b", 0x11, 3);
  ExpectRefused(
      Loader::Create({{a, 1}, {b, 1}}, Opts(false)),
      "'" + a->path() + "' and '" + b->path() + "' have different tokenizers (eos_id 2 vs 3)");
}

TEST_F(LoaderTokenIdentityTest, PhasesOfDifferentTokenizersAreRefusedEvenWhereOneIsAbsent) {
  auto a = Write("a", 0x11, 2), b = Write("b", 0x22, 2), c = Write("c", 0x11, 2);
  ExpectRefused(Loader::Create({a, c, b}, {{0, {1, 1, 0}}, {10, {1, 0, 1}}}, Opts(false)),
                "'" + a->path() + "' and '" + b->path() +
                    "' have different tokenizers (tokenizer file xxh3 0x0000000000000011 vs "
                    "0x0000000000000022)");
  // Nothing recorded: a bare Megatron prefix blends with anything.
  auto bare = Dataset::Open(dir_.Join("b") + "/shard-00000");
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_FALSE((*bare)->has_manifest());
  EXPECT_TRUE(Loader::Create({{a, 1}, {*bare, 1}, {c, 1}}, Opts(false)).ok());
}

TEST_F(LoaderTokenIdentityTest, TheOverrideServesTheMixtureAndTheCursorRecordsIt) {
  auto a = Write("a", 0x11, 2), b = Write("b", 0x22, 3);
  auto mixed = Loader::Create({{a, 1}, {b, 1}}, Opts(true));
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  auto batch = (*mixed)->Next();
  ASSERT_TRUE(batch.ok() && *batch);
  const std::string state = (*mixed)->SaveState();
  EXPECT_NE(state.find("\"allow_mixed_tokenizers\":true"), std::string::npos) << state;
  auto resumed = Loader::Create({{a, 1}, {b, 1}}, Opts(true));
  ASSERT_TRUE(resumed.ok());
  ASSERT_TRUE((*resumed)->LoadState(state).ok());
  EXPECT_EQ((*resumed)->SaveState(), state);
}

TEST_F(LoaderTokenIdentityTest, AResumeWithTheOtherSettingIsRefusedNamingTheOption) {
  auto a = Write("a", 0x11, 2), b = Write("b", 0x11, 2);
  auto with = Loader::Create({{a, 1}, {b, 1}}, Opts(true));
  auto without = Loader::Create({{a, 1}, {b, 1}}, Opts(false));
  ASSERT_TRUE(with.ok() && without.ok());
  ASSERT_TRUE((*with)->Next().ok() && (*without)->Next().ok());
  const std::string plain = (*without)->SaveState();
  // Written only when true: other cursors stay as they were.
  EXPECT_EQ(plain.find("allow_mixed_tokenizers"), std::string::npos) << plain;
  Status s = (*with)->LoadState(plain);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("it was made with allow_mixed_tokenizers=false, this loader uses "
                             "allow_mixed_tokenizers=true: pass allow_mixed_tokenizers=false"),
            std::string::npos)
      << s.message();
  s = (*without)->LoadState((*with)->SaveState());
  EXPECT_NE(s.message().find("pass allow_mixed_tokenizers=true to resume it"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace tokpack
