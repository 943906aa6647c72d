#include "base/utf8.h"

#include <gtest/gtest.h>

namespace tokpack {
namespace {

// Expected values are Python's bytes.decode("utf-8", errors="replace").
TEST(Utf8, RepairMatchesPythonReplace) {
  const std::pair<std::string, std::string> cases[] = {
      {"a\xff"
       "b",
       "a\xef\xbf\xbd"
       "b"},
      {"a\xe2\x82"
       "b",
       "a\xef\xbf\xbd"
       "b"},
      {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},  // Surrogate.
      {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},                  // Overlong.
      {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
      {"\xf0\x9f\x99", "\xef\xbf\xbd"},  // Truncated 4-byte.
      {"x\x80\x80y", "x\xef\xbf\xbd\xef\xbf\xbdy"},
      {"\xf0\x9f\x99\x82\xff", "\xf0\x9f\x99\x82\xef\xbf\xbd"},
  };
  for (const auto& [in, want] : cases) {
    EXPECT_FALSE(IsValidUtf8(in));
    EXPECT_EQ(RepairUtf8(in), want);
    EXPECT_TRUE(IsValidUtf8(RepairUtf8(in)));
  }
}

TEST(Utf8, ValidTextIsUnchanged) {
  const std::string s = "plain ascii, caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x99\x82";
  EXPECT_TRUE(IsValidUtf8(s));
  EXPECT_EQ(RepairUtf8(s), s);
  EXPECT_EQ(RepairUtf8(""), "");
}

}  // namespace
}  // namespace tokpack
