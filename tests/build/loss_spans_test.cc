// loss_spans.h: character spans to byte spans (multi-byte characters, the
// inverse), and the straddle rule from token ranges to flags.
#include "build/loss_spans.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tokpack {
namespace {

std::string Read(const std::string& json, std::string_view text, bool inverse,
                 std::vector<ByteSpan>* loss) {
  simdjson::dom::parser parser;
  simdjson::dom::element value;
  EXPECT_EQ(parser.parse(json).get(value), simdjson::SUCCESS);
  return ReadLossSpans(value, inverse ? "no_loss_spans" : "loss_spans", text, inverse, loss);
}

std::string Spans(const std::vector<ByteSpan>& loss) {
  std::string out;
  for (const ByteSpan& s : loss) {
    out += "[" + std::to_string(s.begin) + "," + std::to_string(s.end) + ")";
  }
  return out;
}

TEST(LossSpansTest, CharactersAreCodePoints) {
  // a é 東 🙂 b: 1, 2, 3, 4 and 1 bytes.
  const std::string text =
      "a\xC3\xA9\xE6\x9D\xB1\xF0\x9F\x99\x82"
      "b";
  std::vector<ByteSpan> loss;
  EXPECT_EQ(Read("[[1, 2], [3, 5]]", text, false, &loss), "");
  EXPECT_EQ(Spans(loss), "[1,3)[6,11)");
  EXPECT_EQ(Read("[[1, 2], [3, 5]]", text, true, &loss), "");
  EXPECT_EQ(Spans(loss), "[0,1)[3,6)");
  // Adjacent spans, empty spans and the whole text.
  EXPECT_EQ(Read("[[0, 0], [0, 1], [1, 5]]", text, false, &loss), "");
  EXPECT_EQ(Spans(loss), "[0,1)[1,11)");
  EXPECT_EQ(Read("[]", text, true, &loss), "");
  EXPECT_EQ(Spans(loss), "[0,11)");
  EXPECT_EQ(Read("[[0, 5]]", text, true, &loss), "");
  EXPECT_EQ(Spans(loss), "");
  EXPECT_EQ(Read("[[0, 6]]", text, false, &loss),
            "loss_spans[0]: end 6 is past the text's 5 characters");
  EXPECT_EQ(Read("[[6, 6]]", text, false, &loss),
            "loss_spans[0]: end 6 is past the text's 5 characters");
  EXPECT_EQ(Read("[[0, 18446744073709551615]]", text, false, &loss),
            "loss_spans[0]: end 9223372036854775807 is past the text's 5 characters");
  EXPECT_EQ(Read("[[0, true]]", text, false, &loss),
            "loss_spans[0] is not a pair of integers [start, end]");
  EXPECT_EQ(Read("[[0, 1, 2]]", text, false, &loss),
            "loss_spans[0] is not a pair of integers [start, end]");
  EXPECT_EQ(Read("{}", text, false, &loss), "loss_spans is not an array of [start, end] pairs");
}

TEST(LossSpansTest, ATokenCarriesLossWhenAnyOfItsBytesIsInASpan) {
  // Tokens over 8 bytes: [0,2) [2,4) [4,5) [5,6) [6,6) [6,8), and an empty
  // one at the end.
  const std::vector<TokenRange> ranges = {{0, 2}, {2, 4}, {4, 5}, {5, 6}, {6, 6}, {6, 8}, {8, 8}};
  std::string flags(ranges.size(), '?');
  auto run = [&](const std::vector<ByteSpan>& loss) {
    TokenLossFlags(ranges, loss, 8, flags.data());
    std::string out;
    for (char f : flags) out += f ? '1' : '0';
    return out;
  };
  EXPECT_EQ(run({}), "0000000");
  EXPECT_EQ(run({{1, 2}}), "1000000");          // Straddles the start.
  EXPECT_EQ(run({{3, 5}}), "0110000");          // Two straddled.
  EXPECT_EQ(run({{6, 7}}), "0000110");          // The empty token at 6 holds byte 6.
  EXPECT_EQ(run({{7, 8}}), "0000011");          // The one at the end holds byte 7.
  EXPECT_EQ(run({{0, 4}, {5, 6}}), "1101000");  // Edges that meet token edges.
}

}  // namespace
}  // namespace tokpack
