#include "inputs/input_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

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
    line.clear();
    uint64_t size = 0;
    auto more = reader.Next(&line, UINT64_MAX, &size);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    EXPECT_EQ(size, line.size());
    lines.push_back(line);
  }
  return lines;
}

// `n` bytes of `fill`, then `tail`, made as they are read (never held whole).
class GeneratedStream : public ByteStream {
 public:
  GeneratedStream(uint64_t n, char fill, std::string tail) : n_(n), fill_(fill), tail_(tail) {}
  StatusOr<size_t> Read(char* buf, size_t n) override {
    if (pos_ < n_) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, n_ - pos_));
      std::memset(buf, fill_, k);
      pos_ += k;
      return k;
    }
    const size_t k = std::min(n, tail_.size() - tail_pos_);
    std::memcpy(buf, tail_.data() + tail_pos_, k);
    tail_pos_ += k;
    return k;
  }

 private:
  uint64_t n_, pos_ = 0;
  char fill_;
  std::string tail_;
  size_t tail_pos_ = 0;
};

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
    Status s = ReadAll(stream->get(), &all).status();
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
  EXPECT_EQ(ReadAll(stream->get(), &all).status().code(), StatusCode::kDataLoss);
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

TEST(LineReader, LinesOverTheLimitAreMeasuredButNotKept) {
  TempDir dir;
  const uint64_t limit = 10;
  // Exactly the limit (kept, also before "\r\n"), one byte over (dropped,
  // also with a "\r" that is not part of the line), then a long line.
  WriteStringToFile(dir.Join("l.txt"), "0123456789\n0123456789\r\n0123456789X\n0123456789X\r\n" +
                                           std::string(3 << 20, 'q') + "\nend");
  auto stream = OpenInputStream(dir.Join("l.txt"), StorageOptions(), nullptr);
  ASSERT_TRUE(stream.ok());
  LineReader reader(std::move(*stream));
  const std::vector<std::pair<uint64_t, std::string>> want = {
      {10, "0123456789"}, {10, "0123456789"}, {11, ""}, {11, ""}, {3 << 20, ""}, {3, "end"}};
  for (size_t i = 0; i < want.size(); ++i) {
    std::string out = "kept:";
    uint64_t size = 0;
    auto more = reader.Next(&out, limit, &size);
    ASSERT_TRUE(more.ok() && *more) << i;
    EXPECT_EQ(size, want[i].first) << i;
    EXPECT_EQ(out, "kept:" + want[i].second) << i;
    EXPECT_EQ(reader.line_number(), i + 1);
  }
  std::string out;
  uint64_t size = 0;
  auto more = reader.Next(&out, limit, &size);
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
}

TEST(LineReader, AHugeLineOverTheLimitIsNeverHeld) {
  // 512 MiB without a newline: were it buffered, the string would grow to it.
  const uint64_t huge = uint64_t{512} << 20;
  LineReader reader(std::make_unique<GeneratedStream>(huge, 'x', "\nnext\n"));
  std::string out;
  uint64_t size = 0;
  auto more = reader.Next(&out, 1 << 20, &size);
  ASSERT_TRUE(more.ok() && *more);
  EXPECT_EQ(size, huge);
  EXPECT_TRUE(out.empty());
  EXPECT_LE(out.capacity(), size_t{2} << 20);
  more = reader.Next(&out, 1 << 20, &size);
  ASSERT_TRUE(more.ok() && *more);
  EXPECT_EQ(out, "next");
  EXPECT_EQ(reader.line_number(), 2u);
}

TEST(InputStream, ReadAllStopsOnceTheStreamIsOverTheLimit) {
  const uint64_t huge = uint64_t{512} << 20;
  GeneratedStream stream(huge, 'x', "");
  std::string out = "before";
  auto n = ReadAll(&stream, &out, 1 << 20);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, (1u << 20) + 1);
  EXPECT_EQ(out, "before");
  GeneratedStream small(1000, 'y', "z");
  n = ReadAll(&small, &out, 1001);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1001u);
  EXPECT_EQ(out, "before" + std::string(1000, 'y') + "z");
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
