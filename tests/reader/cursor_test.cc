#include "reader/cursor.h"

#include <gtest/gtest.h>

#include <string>

namespace tokpack {
namespace {

// A version 1 state of two sources at weights 3 and 1; the counts and
// position are spliced in as text, so values past what a Cursor holds can
// be written.
std::string State(const std::string& position, const std::string& first, const std::string& second,
                  const std::string& weight = "3") {
  return "{\"tokpack_cursor\":1,\"position\":" + position +
         ",\"seed\":1,\"seq_len\":16,\"shuffle\":\"full\",\"block_size\":0,\"block_window\":0,"
         "\"sources\":[{\"fingerprint\":\"00000000000000aa\",\"weight\":" +
         weight + ",\"consumed\":" + first +
         "},{\"fingerprint\":\"00000000000000bb\",\"weight\":1,\"consumed\":" + second + "}]}";
}

// A version 2 state of two sources: 100 positions at 0.9 / 0.1 from step 0,
// then 40 at 0.5 / 0.5 from step 10; `phases` replaces the phase list.
std::string V2(const std::string& phases =
                   "[{\"start_step\":0,\"weights\":[0.9,0.1],\"counts\":[90,10]},"
                   "{\"start_step\":10,\"weights\":[0.5,0.5],\"counts\":[20,20]}]",
               const std::string& consumed = "110,30", const std::string& position = "140",
               const std::string& step = "14") {
  const size_t comma = consumed.find(',');
  return "{\"tokpack_cursor\":2,\"position\":" + position + ",\"step\":" + step +
         ",\"seed\":1,\"seq_len\":16,\"shuffle\":\"full\",\"block_size\":0,\"block_window\":0,"
         "\"window_chunks\":0,\"sources\":[{\"fingerprint\":\"00000000000000aa\",\"consumed\":" +
         consumed.substr(0, comma) +
         "},{\"fingerprint\":\"00000000000000bb\",\"consumed\":" + consumed.substr(comma + 1) +
         "}],\"phases\":" + phases + "}";
}

void ExpectRefused(const std::string& json, const std::string& needle) {
  auto c = Cursor::Parse(json);
  ASSERT_FALSE(c.ok()) << json;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().ToString();
}

TEST(Cursor, AStateTheScheduleReachesRoundTripsAsItIsWritten) {
  auto c = Cursor::Parse(V2());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->position, 140u);
  EXPECT_EQ(c->step, 14);
  ASSERT_EQ(c->phases.size(), 2u);
  EXPECT_EQ(c->phases[1].counts, (std::vector<uint64_t>{20, 20}));
  EXPECT_EQ(c->ToJson(), V2());  // Compact, weights as short as they read back.
  // Within one draw of the phase's shares either way.
  EXPECT_TRUE(Cursor::Parse(V2("[{\"start_step\":0,\"weights\":[0.9,0.1],\"counts\":[90,10]},"
                               "{\"start_step\":10,\"weights\":[0.5,0.5],\"counts\":[21,20]}]",
                               "111,30", "141", "15"))
                  .ok());
}

TEST(Cursor, AVersionOneStateIsOnePhaseAtStepZeroWithItsStepUnknown) {
  auto c = Cursor::Parse(State("400", "300", "100"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->step, -1);
  ASSERT_EQ(c->phases.size(), 1u);
  EXPECT_EQ(c->phases[0].start_step, 0);
  EXPECT_EQ(c->phases[0].weights, (std::vector<double>{3, 1}));
  EXPECT_EQ(c->phases[0].counts, (std::vector<uint64_t>{300, 100}));
  EXPECT_EQ(Cursor::Parse(c->ToJson())->ToJson(), c->ToJson());  // Still without a step.
  EXPECT_TRUE(Cursor::Parse(State("401", "301", "100")).ok());
  EXPECT_TRUE(Cursor::Parse(State("401", "300", "101")).ok());
  // At position 0 nothing has begun.
  EXPECT_TRUE(Cursor::Parse(State("0", "0", "0"))->phases.empty());
}

TEST(Cursor, MalformedOrUnreachablePhasesAreRefusedNamingTheField) {
  const std::string p0 = "{\"start_step\":0,\"weights\":[0.9,0.1],\"counts\":[90,10]}";
  ExpectRefused(V2("[]", "90,10", "100", "10"), "no phases at position 100");
  ExpectRefused(V2("[" + p0 + ",{\"start_step\":0,\"weights\":[1,1],\"counts\":[20,20]}]"),
                "phases[1].start_step 0 does not follow phases[0].start_step 0");
  ExpectRefused(
      V2("[{\"start_step\":3,\"weights\":[0.9,0.1],\"counts\":[90,10]}]", "90,10", "100", "10"),
      "phases[0].start_step is 3; the first phase starts at step 0");
  ExpectRefused(V2("[{\"start_step\":0,\"weights\":[1],\"counts\":[100]}]", "100,0", "100", "10"),
                "phases[0] has 1 weights and 1 counts for 2 sources");
  ExpectRefused(
      V2("[{\"start_step\":0,\"weights\":[1.5,-0.5],\"counts\":[100,0]}]", "100,0", "100", "10"),
      "phases[0].weights[1] -0.5 is not finite and >= 0");
  ExpectRefused(V2("[{\"start_step\":0,\"weights\":[0,0],\"counts\":[0,0]}]", "0,0", "0", "0"),
                "phases[0].weights [0, 0] do not add up to a positive finite sum");
  ExpectRefused(V2("[{\"start_step\":0,\"weights\":[1,0],\"counts\":[99,1]}]", "99,1", "100", "10"),
                "phases[0].counts[1] is 1 in a phase of 100 positions, but its weight 0");
  ExpectRefused(
      V2("[{\"start_step\":0,\"weights\":[0.9,0.1],\"counts\":[50,50]}]", "50,50", "100", "10"),
      "phases[0].counts[0] is 50 in a phase of 100 positions, but its weight 0.9 draws "
      "about 90 there");
  // Counts that add up only modulo 2^64, and counts that disagree with the
  // sources' consumed.
  ExpectRefused(V2("[{\"start_step\":0,\"weights\":[0.9,0.1],\"counts\":[18446744073709551615,"
                   "101]}]",
                   "90,10", "100", "10"),
                "phases[0].counts[0] 18446744073709551615 takes the phases' counts past the "
                "position 100");
  ExpectRefused(V2("[{\"start_step\":0,\"weights\":[0.9,0.1],\"counts\":[90,10]},"
                   "{\"start_step\":10,\"weights\":[0.5,0.5],\"counts\":[20,20]}]",
                   "100,40"),
                "sources[0].consumed is 100 at position 140, but its counts in the phases add up "
                "to 110");
  // A phase listed as begun must start before the step (a forged far-future
  // phase would otherwise draw at once).
  ExpectRefused(V2("[{\"start_step\":0,\"weights\":[0.9,0.1],\"counts\":[90,10]},"
                   "{\"start_step\":14,\"weights\":[0.5,0.5],\"counts\":[20,20]}]"),
                "phases[1].start_step 14 is not before the step 14");
}

TEST(Cursor, MalformedFieldsStepsAndSizesAreRefused) {
  ExpectRefused(
      V2("[{\"start_step\":0,\"weights\":\"0.9\",\"counts\":[90,10]}]", "90,10", "100", "10"),
      "malformed phase entry (phases[0])");
  ExpectRefused(
      V2("[{\"start_step\":0,\"weights\":[0.9,0.1],\"counts\":[90,-10]}]", "90,10", "100", "10"),
      "malformed phase entry");
  ExpectRefused(V2("[{\"weights\":[0.9,0.1],\"counts\":[90,10]}]", "90,10", "100", "10"),
                "malformed phase entry");
  ExpectRefused(V2("{}"), "no phases");
  std::string many = "[";
  for (int j = 0; j < 4097; ++j) {
    many += (j ? "," : "") + std::string("{\"start_step\":") + std::to_string(j) +
            ",\"weights\":[1,1],\"counts\":[0,0]}";
  }
  ExpectRefused(V2(many + "]", "0,0", "0", "0"), "4097 phases, more than the 4096");
  ExpectRefused(
      V2("[{\"start_step\":0,\"weights\":[0.9,0.1],\"counts\":[90,10]}]", "90,10", "100", "101"),
      "step 101 is not a step number of position 100");
  ExpectRefused(
      V2("[{\"start_step\":0,\"weights\":[0.9,0.1],\"counts\":[90,10]}]", "90,10", "100", "0"),
      "step 0 is not a step number");
  ExpectRefused(
      V2("[{\"start_step\":0,\"weights\":[0.9,0.1],\"counts\":[90,10]}]", "90,10", "100", "-1"),
      "step is not a step number");
  std::string hex = V2();
  ExpectRefused(hex.replace(hex.find("00000000000000aa"), 16, "00000000000000zz"),
                "malformed source entry");
  std::string v3 = V2();  // Version 3 is a packed state's.
  ExpectRefused(v3.replace(v3.find(":2,"), 3, ":3,"), "version 3 with packing 'concat'");
  std::string v4 = V2();
  ExpectRefused(std::string(v4).replace(v4.find(":2,"), 3, ":5,"), "version 5 is not supported");
  ExpectRefused(v4.replace(v4.find(":2,"), 3, ":4,"), "version 4 without a ramp or a cap");
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

TEST(Cursor, AllowMixedTokenizersIsWrittenOnlyWhenTrueAndParsedWhenPresent) {
  auto c = Cursor::Parse(V2());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->allow_mixed_tokenizers);
  c->allow_mixed_tokenizers = true;
  std::string mixed = V2();
  mixed.insert(mixed.find(",\"sources\""), ",\"allow_mixed_tokenizers\":true");
  EXPECT_EQ(c->ToJson(), mixed);
  auto parsed = Cursor::Parse(mixed);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(parsed->allow_mixed_tokenizers);
  std::string plain = V2();
  EXPECT_FALSE(
      Cursor::Parse(plain.insert(1, "\"allow_mixed_tokenizers\":false,"))->allow_mixed_tokenizers);
  std::string number = V2();
  ExpectRefused(number.insert(1, "\"allow_mixed_tokenizers\":1,"),
                "allow_mixed_tokenizers is not a boolean");
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
