#include "tokpack/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace tokpack {
namespace {

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(Status, WithContextPrefixesMessageAndKeepsCode) {
  Status s = DataLossError("bad chunk").WithContext("shard-00001.bin");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "shard-00001.bin: bad chunk");
  EXPECT_EQ(s.ToString(), "data_loss: shard-00001.bin: bad chunk");
  EXPECT_TRUE(Status().WithContext("x").ok());
}

TEST(Status, ErrnoMapperNamesPathAndOperation) {
  Status s = ErrnoToStatus(ENOENT, "open", "/no/such");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("cannot open '/no/such'"), std::string::npos);
  EXPECT_EQ(ErrnoToStatus(ENOSPC, "write", "f").code(), StatusCode::kIoError);
  EXPECT_NE(ErrnoToStatus(ENOSPC, "write", "f").message().find("No space left"), std::string::npos);
  EXPECT_EQ(ErrnoToStatus(EEXIST, "mkdir", "d").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(ErrnoToStatus(EACCES, "open", "d").code(), StatusCode::kFailedPrecondition);
}

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd");
  return x / 2;
}

Status UseHalf(int x, int* out) {
  TOKPACK_ASSIGN_OR_RETURN(*out, Half(x));
  return Status::Ok();
}

TEST(StatusOr, CarriesValueOrError) {
  int v = 0;
  EXPECT_TRUE(UseHalf(8, &v).ok());
  EXPECT_EQ(v, 4);
  Status s = UseHalf(3, &v);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(v, 4);
}

}  // namespace
}  // namespace tokpack
