// JsonReader: typed fields, and errors naming the source and the field path
// in both styles.
#include "base/json_reader.h"

#include <gtest/gtest.h>

namespace tokpack {
namespace {

class JsonReaderTest : public ::testing::Test {
 protected:
  JsonReader Root(const char* json, JsonReader::Style style = JsonReader::Style::kQuoted) {
    simdjson::dom::object o;
    EXPECT_EQ(parser_.parse(std::string_view(json)).get_object().get(o), simdjson::SUCCESS);
    return JsonReader(o, "", "f.json", style);
  }
  simdjson::dom::parser parser_;
};

TEST_F(JsonReaderTest, ReadsTypedFields) {
  JsonReader r = Root(R"({"u": 7, "i": -3, "b": true, "s": "x", "o": {"n": 1}, "nul": null})");
  uint64_t u = 0;
  int64_t i = 0;
  int n = 0;
  bool b = false, fallback = false;
  std::string s;
  ASSERT_TRUE(r.Get("u", &u).ok() && r.Get("i", &i).ok() && r.Get("b", &b).ok());
  ASSERT_TRUE(r.Get("s", &s).ok() && r.GetOr("nul", true, &fallback).ok());
  EXPECT_EQ(u, 7u);
  EXPECT_EQ(i, -3);
  EXPECT_TRUE(b && fallback);
  EXPECT_EQ(s, "x");
  EXPECT_TRUE(r.Has("nul") && !r.IsSet("nul") && !r.Has("zz"));
  JsonReader o;
  ASSERT_TRUE(r.Object("o", &o).ok());
  ASSERT_TRUE(o.Get("n", &n).ok());
  EXPECT_EQ(n, 1);
  EXPECT_EQ(o.Path("n"), "o.n");
}

TEST_F(JsonReaderTest, ErrorsNameSourceAndPathInEitherStyle) {
  JsonReader q = Root(R"({"o": {"s": 1}})");
  JsonReader o;
  ASSERT_TRUE(q.Object("o", &o).ok());
  std::string s;
  EXPECT_EQ(o.Get("s", &s).message(), "f.json: field 'o.s' is missing or not a string");
  EXPECT_EQ(q.Object("p", &o).message(), "f.json: field 'p' is missing or not an object");
  JsonReader b = Root(R"({"o": {"s": 1}, "big": 4294967296})", JsonReader::Style::kBare);
  ASSERT_TRUE(b.Object("o", &o).ok());
  EXPECT_EQ(o.Get("s", &s).message(), "f.json: o.s: is missing or not a string");
  EXPECT_EQ(o.SelfError("is odd").message(), "f.json: o: is odd");
  int n = 0;
  EXPECT_EQ(b.Get("big", &n).message(), "f.json: big: is missing or not a 32-bit integer");
  bool flag = false;
  EXPECT_EQ(o.GetOr("s", false, &flag).message(), "f.json: o.s: is not a boolean");
}

TEST_F(JsonReaderTest, OnlyKeysRefusesUnknownAndRepeatedKeys) {
  EXPECT_TRUE(Root(R"({"a": 1, "b": 2})").OnlyKeys({"a", "b"}, "is unknown").ok());
  EXPECT_EQ(Root(R"({"a": 1, "c": 2})").OnlyKeys({"a", "b"}, "is unknown").message(),
            "f.json: field 'c' is unknown");
  EXPECT_EQ(Root(R"({"a": 1, "a": 2})").OnlyKeys({"a"}, "is unknown").message(),
            "f.json: field 'a' is given twice");
}

}  // namespace
}  // namespace tokpack
