#include "io/input_stream.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::TempDir;
using testing::WriteStringToFile;

std::vector<std::string> ReadLines(const std::string& path) {
  auto stream = OpenInputStream(path, StorageOptions(), nullptr);
  EXPECT_TRUE(stream.ok()) << stream.status().ToString();
  LineReader reader(std::move(*stream));
  std::vector<std::string> lines;
  std::string line;
  while (true) {
    auto more = reader.Next(&line);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    lines.push_back(line);
  }
  return lines;
}

TEST(InputStream, DetectsCompressionByContentNotName) {
  TempDir dir;
  const std::string text = "line one\nline two\r\nlast without newline";
  WriteStringToFile(dir.Join("plain.bin"), text);
  WriteStringToFile(dir.Join("z.dat"), testing::ZstdCompress(text));
  WriteStringToFile(dir.Join("g.dat"), testing::GzipCompress(text));
  const std::vector<std::string> want = {"line one", "line two", "last without newline"};
  for (const char* name : {"plain.bin", "z.dat", "g.dat"}) {
    EXPECT_EQ(ReadLines(dir.Join(name)), want) << name;
  }
}

TEST(InputStream, ReadsConcatenatedGzipMembersAndZstdFrames) {
  TempDir dir;
  WriteStringToFile(dir.Join("a.gz"), testing::GzipCompress("a\n") + testing::GzipCompress("b\n"));
  WriteStringToFile(dir.Join("a.zst"), testing::ZstdCompress("a\n") + testing::ZstdCompress("b\n"));
  EXPECT_EQ(ReadLines(dir.Join("a.gz")), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ReadLines(dir.Join("a.zst")), (std::vector<std::string>{"a", "b"}));
}

TEST(InputStream, TruncatedCompressedFilesAreDataLossNamingTheFile) {
  TempDir dir;
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "some text that compresses " + std::to_string(i) + "\n";
  for (const auto& [name, bytes] :
       {std::pair<std::string, std::string>{"t.zst", testing::ZstdCompress(big)},
        {"t.gz", testing::GzipCompress(big)}}) {
    WriteStringToFile(dir.Join(name), bytes.substr(0, bytes.size() / 2));
    auto stream = OpenInputStream(dir.Join(name), StorageOptions(), nullptr);
    ASSERT_TRUE(stream.ok());
    std::string all;
    Status s = ReadAll(stream->get(), &all);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << name << ": " << s.ToString();
    EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
  }
}

TEST(InputStream, GarbageAfterAZstdFrameIsDataLoss) {
  TempDir dir;
  WriteStringToFile(dir.Join("c.zst"), testing::ZstdCompress("text\n") + "not a zstd frame");
  auto stream = OpenInputStream(dir.Join("c.zst"), StorageOptions(), nullptr);
  ASSERT_TRUE(stream.ok());
  std::string all;
  EXPECT_EQ(ReadAll(stream->get(), &all).code(), StatusCode::kDataLoss);
}

TEST(InputStream, MissingFileIsNotFound) {
  auto s = OpenInputStream("/nonexistent/file.jsonl", StorageOptions(), nullptr);
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("/nonexistent/file.jsonl"), std::string::npos);
}

TEST(LineReader, HandlesLinesLongerThanTheReadBuffer) {
  TempDir dir;
  const std::string long_line(3 << 20, 'q');
  WriteStringToFile(dir.Join("l.txt"), "short\n" + long_line + "\n\nend");
  auto lines = ReadLines(dir.Join("l.txt"));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1], long_line);
  EXPECT_EQ(lines[2], "");
  EXPECT_EQ(lines[3], "end");
}

TEST(InputStream, CountsRawBytesRead) {
  TempDir dir;
  std::string z = testing::ZstdCompress(std::string(100000, 'a'));
  WriteStringToFile(dir.Join("c.zst"), z);
  std::atomic<uint64_t> raw{0};
  auto stream = OpenInputStream(dir.Join("c.zst"), StorageOptions(), &raw);
  ASSERT_TRUE(stream.ok());
  std::string all;
  ASSERT_TRUE(ReadAll(stream->get(), &all).ok());
  EXPECT_EQ(all.size(), 100000u);
  EXPECT_EQ(raw.load(), z.size());
}

}  // namespace
}  // namespace tokpack
