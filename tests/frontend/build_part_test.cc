#include "frontend/build_part.h"

#include <gtest/gtest.h>

namespace tokpack {
namespace {

TEST(ParsePart, AcceptsOnlyValidFractions) {
  int i = -1, n = -1;
  EXPECT_TRUE(ParsePart("2/8", &i, &n).ok());
  EXPECT_EQ(i, 2);
  EXPECT_EQ(n, 8);
  for (const char* bad : {"8/8", "-1/4", "1", "a/b", "1/0", "1/2x", ""}) {
    EXPECT_FALSE(ParsePart(bad, &i, &n).ok()) << bad;
  }
}

}  // namespace
}  // namespace tokpack
