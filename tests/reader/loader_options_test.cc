// LoaderOptions' table: one declaration per option, checked wherever a value
// comes from (Set, SetText, a hand-filled struct through Validate).
#include <gtest/gtest.h>

#include <set>

#include "tokpack/loader.h"

namespace tokpack {
namespace {

TEST(LoaderOptions, DescribeListsEveryOptionWithItsDefaultAndDoc) {
  std::set<std::string> names;
  for (const OptionInfo& info : LoaderOptions::Describe()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name << " declared twice";
    EXPECT_FALSE(info.doc.empty()) << info.name;
  }
  const auto find = [](const std::string& name) {
    for (const OptionInfo& info : LoaderOptions::Describe()) {
      if (info.name == name) return info;
    }
    return OptionInfo{};
  };
  EXPECT_EQ(find("seq_len").default_text, "2048");
  EXPECT_EQ(find("shuffle").default_text, "auto");
  EXPECT_EQ(find("shuffle").choices,
            (std::vector<std::string>{"auto", "full", "window", "block", "none"}));
  EXPECT_EQ(find("window_chunks").default_text, "0");
  EXPECT_EQ(find("device").default_text, "cpu");
  EXPECT_EQ(find("document_boundaries").type, OptionType::kBool);
  EXPECT_EQ(OptionFlag(find("max_steps")), "--max-steps");
}

TEST(LoaderOptions, SetChecksTypeRangeAndChoiceNamingTheOption) {
  LoaderOptions o;
  EXPECT_TRUE(o.Set("seq_len", int64_t{128}).ok());
  EXPECT_EQ(o.seq_len, 128);
  EXPECT_TRUE(o.Set("seed", uint64_t{UINT64_MAX}).ok());
  EXPECT_EQ(o.seed, UINT64_MAX);
  EXPECT_TRUE(o.Set("shuffle", std::string("block")).ok());
  EXPECT_EQ(o.shuffle, ShuffleMode::kBlock);
  const auto refused = [&](const std::string& name, const OptionValue& v, const std::string& want) {
    Status s = o.Set(name, v);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  };
  refused("seq_len", int64_t{0}, "seq_len");
  refused("seq_len", std::string("8"), "seq_len must be an integer");
  refused("prefetch", int64_t{65}, "prefetch");
  refused("seed", int64_t{-1}, "seed must not be negative");
  refused("shuffle", std::string("fast"),
          "shuffle must be one of 'auto', 'full', 'window', 'block', 'none'");
  refused("dtype", std::string("float32"), "dtype");
  refused("document_boundaries", int64_t{1}, "must be a bool");
  refused("seq_lne", int64_t{8}, "did you mean 'seq_len'");
  EXPECT_EQ(o.seq_len, 128);  // Nothing refused was applied.
}

TEST(LoaderOptions, SetTextParsesFlagsAndToJsonWritesEveryOption) {
  LoaderOptions o;
  EXPECT_TRUE(o.SetText("batch_size", "16").ok());
  EXPECT_TRUE(o.SetText("document_boundaries", "true").ok());
  EXPECT_TRUE(o.SetText("device", "cuda:1").ok());
  EXPECT_FALSE(o.SetText("batch_size", "16x").ok());
  EXPECT_FALSE(o.SetText("epochs", "-1").ok());
  EXPECT_FALSE(o.SetText("seed", " -1").ok());  // strtoull would wrap it.
  EXPECT_FALSE(o.SetText("batch_size", " 16").ok());
  const std::string json = o.ToJson();
  EXPECT_NE(json.find("\"batch_size\": 16"), std::string::npos) << json;
  EXPECT_NE(json.find("\"device\": \"cuda:1\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"document_boundaries\": true"), std::string::npos) << json;
}

TEST(LoaderOptions, OneDeviceParserRefusesWhatIsNotADevice) {
  EXPECT_EQ(Device::Parse("cpu")->ToString(), "cpu");
  EXPECT_EQ(Device::Parse("cuda")->ToString(), "cuda:0");
  EXPECT_EQ(Device::Parse("cuda:3")->index, 3);
  for (const char* bad : {"cuda:x", "cuda:", "cuda:-1", "gpu", "CUDA", "cuda:0 ", "cuda:99999"}) {
    EXPECT_EQ(Device::Parse(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(LoaderOptions, ValidateChecksFieldsSetByHandAndAcrossFields) {
  LoaderOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.threads = 0;
  EXPECT_NE(o.Validate().message().find("threads"), std::string::npos);
  o = LoaderOptions();
  o.rank = 2;
  o.world_size = 2;
  EXPECT_NE(o.Validate().message().find("outside world_size"), std::string::npos);
  o = LoaderOptions();
  o.batch_size = 1 << 20;
  o.seq_len = 1 << 12;
  EXPECT_NE(o.Validate().message().find("2^31"), std::string::npos);
}

}  // namespace
}  // namespace tokpack
