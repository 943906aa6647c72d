#include "tokpack/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

namespace tokpack {
namespace {

TEST(ShortestDouble, PrintsTheShortestFormThatReadsBackAsPythonsRepr) {
  EXPECT_EQ(ShortestDouble(0.9), "0.9");
  EXPECT_EQ(ShortestDouble(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(ShortestDouble(1), "1");
  EXPECT_EQ(ShortestDouble(-0.0), "0");
  EXPECT_EQ(ShortestDouble(90), "90");
  EXPECT_EQ(ShortestDouble(1234.5), "1234.5");
  EXPECT_EQ(ShortestDouble(1e-5), "1e-05");
  EXPECT_EQ(ShortestDouble(1e-300), "1e-300");
  EXPECT_EQ(ShortestDouble(2e16), "2e+16");
  EXPECT_EQ(ShortestDouble(5e-324), "5e-324");
  EXPECT_EQ(ShortestDouble(-HUGE_VAL), "-inf");
  for (double v : {0.1, 1.0 / 3, 2.0 / 3, 1e-7, 123456789.123, 1e300, 0.7, 0.3}) {
    EXPECT_EQ(std::strtod(ShortestDouble(v).c_str(), nullptr), v) << ShortestDouble(v);
  }
}

}  // namespace
}  // namespace tokpack
