// Helpers shared by tokpack's C++ tests: temporary directories, file
// writing, and a small sentencepiece model trained in-process on generated
// text (nothing is downloaded).
#ifndef TOKPACK_TESTS_TEST_UTIL_H_
#define TOKPACK_TESTS_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tokpack::testing {

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void WriteStringToFile(const std::string& path, const std::string& data);
std::string ReadFileOrDie(const std::string& path);
bool Exists(const std::string& path);

// Deterministic pseudo-English text of n words (seeded), with some non-ASCII.
std::string RandomText(uint64_t seed, int words);

// `n` JSONL lines {"text": ...} with texts RandomText(seed + i, ...).
std::string MakeJsonl(int n, uint64_t seed, std::vector<std::string>* texts = nullptr);

// Path of a unigram sentencepiece model (vocab 500) trained once per process.
const std::string& TestModelPath();

// A tiktoken ranks file: every byte but `missing_byte` (-1: none) at its own
// rank, then `merged` tokens at ranks 256 onwards.
std::string TiktokenRanks(const std::vector<std::string>& merged, int missing_byte = -1);

// zstd / gzip compression of `data`, for input tests.
std::string ZstdCompress(const std::string& data);
std::string GzipCompress(const std::string& data);

}  // namespace tokpack::testing

#endif  // TOKPACK_TESTS_TEST_UTIL_H_
