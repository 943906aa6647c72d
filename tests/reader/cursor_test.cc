#include "reader/cursor.h"

#include <gtest/gtest.h>

#include <string>

namespace tokpack {
namespace {

// A state of two sources at weights 3 and 1; the counts and position are
// spliced in as text, so values past what a Cursor holds can be written.
std::string State(const std::string& position, const std::string& first, const std::string& second,
                  const std::string& weight = "3") {
  return "{\"tokpack_cursor\":1,\"position\":" + position +
         ",\"seed\":1,\"seq_len\":16,\"shuffle\":\"full\",\"block_size\":0,\"block_window\":0,"
         "\"sources\":[{\"fingerprint\":\"00000000000000aa\",\"weight\":" +
         weight + ",\"consumed\":" + first +
         "},{\"fingerprint\":\"00000000000000bb\",\"weight\":1,\"consumed\":" + second + "}]}";
}

void ExpectRefused(const std::string& json, const std::string& needle) {
  auto c = Cursor::Parse(json);
  ASSERT_FALSE(c.ok()) << json;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().ToString();
}

TEST(Cursor, AStateTheScheduleReachesRoundTrips) {
  auto c = Cursor::Parse(State("400", "300", "100"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->position, 400u);
  EXPECT_EQ(Cursor::Parse(c->ToJson())->ToJson(), c->ToJson());
  // Within one draw of the shares either way.
  EXPECT_TRUE(Cursor::Parse(State("401", "301", "100")).ok());
  EXPECT_TRUE(Cursor::Parse(State("401", "300", "101")).ok());
}

TEST(Cursor, WindowChunksRoundTripAndCursorsWithoutThemStillParse) {
  // State() has no window_chunks, as cursors made before shuffle="window".
  EXPECT_EQ(Cursor::Parse(State("400", "300", "100"))->window_chunks, 0u);
  std::string window = State("400", "300", "100");
  window.replace(window.find("\"full\""), 6, "\"window\",\"window_chunks\":8");
  auto c = Cursor::Parse(window);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->window_chunks, 8u);
  EXPECT_EQ(Cursor::Parse(c->ToJson())->window_chunks, 8u);
  // Only "window" has a window, and it always does; "auto" is never saved.
  ExpectRefused(State("400", "300", "100").insert(1, "\"window_chunks\":8,"),
                "not an order a loader saves");
  std::string bare = State("400", "300", "100");
  ExpectRefused(bare.replace(bare.find("\"full\""), 6, "\"window\""), "window_chunks 0");
  bare = State("400", "300", "100");
  ExpectRefused(bare.replace(bare.find("\"full\""), 6, "\"auto\""), "not an order");
  bare = State("400", "300", "100");
  ExpectRefused(bare.replace(bare.find("\"full\""), 6, "\"full\",\"window_chunks\":-1"),
                "window_chunks is not");
}

TEST(Cursor, CountsThatAddUpOnlyModuloTwoToTheSixtyFourAreRefused) {
  // 2^64 - 1 + 401 wraps to 400, the position.
  ExpectRefused(State("400", "18446744073709551615", "401"),
                "sources[0].consumed 18446744073709551615 takes the source counts past the "
                "position 400");
  ExpectRefused(State("400", "300", "18446744073709551615"), "sources[1].consumed");
  ExpectRefused(State("400", "300", "99"), "add up to 399, not the position 400");
}

TEST(Cursor, PositionsPastTheLastALoaderReachesAreRefused) {
  ExpectRefused(State("18446744073709551615", "13835058055282163711", "4611686018427387904"),
                "position 18446744073709551615 is past");
  EXPECT_TRUE(
      Cursor::Parse(State("9223372036854775807", "6917529027641081855", "2305843009213693952"))
          .ok());
}

TEST(Cursor, CountsThatIgnoreTheWeightsAreRefused) {
  ExpectRefused(State("400", "400", "0"), "phases[0].counts[0] is 400 in a phase of 400 positions");
  ExpectRefused(State("400", "0", "400"), "phases[0].counts[0] is 0 in a phase of 400 positions");
}

TEST(Cursor, WeightsMustBeFiniteAndNonNegative) {
  ExpectRefused(State("0", "0", "0", "-2"), "phases[0].weights[0] -2 is not finite and >= 0");
  ExpectRefused(State("0", "0", "0", "1e999"), "not JSON");
}

}  // namespace
}  // namespace tokpack
