#include "base/quote.h"

#include <gtest/gtest.h>

#include <string>

namespace tokpack {
namespace {

TEST(QuoteTest, ShortStringsAreQuotedWhole) {
  EXPECT_EQ(Quoted("<|endoftext|>"), "'<|endoftext|>'");
  EXPECT_EQ(Quoted(""), "''");
  EXPECT_EQ(Quoted(std::string(kMaxQuotedBytes, 'x')),
            "'" + std::string(kMaxQuotedBytes, 'x') + "'");
}

TEST(QuoteTest, LongStringsKeepAHeadAndTheirSize) {
  EXPECT_EQ(Quoted(std::string(300'000'000, 'x')),
            "'" + std::string(kMaxQuotedBytes, 'x') + "... (300000000 bytes)'");
  EXPECT_EQ(Quoted("abcdef", 3), "'abc... (6 bytes)'");
}

TEST(QuoteTest, ClippedIsTheSameWithoutQuotes) {
  EXPECT_EQ(Clipped("BertNormalizer"), "BertNormalizer");
  EXPECT_EQ(Clipped("abcdef", 3), "abc... (6 bytes)");
}

TEST(QuoteTest, TheHeadEndsOnACharacterBoundary) {
  // "é" is two bytes: a cut after 3 bytes of "aéé" would split the second.
  EXPECT_EQ(Quoted("a\xC3\xA9\xC3\xA9", 4), "'a\xC3\xA9... (5 bytes)'");
  EXPECT_EQ(Quoted("a\xC3\xA9\xC3\xA9", 2), "'a... (5 bytes)'");
}

}  // namespace
}  // namespace tokpack
