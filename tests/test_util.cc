#include "tests/test_util.h"

#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace tokpack::testing {
namespace {

const char* const kWords[] = {
    "the",    "of",       "and",   "to",    "in",        "is",     "was",    "for",   "on",
    "that",   "with",     "as",    "data",  "token",     "model",  "train",  "shard", "index",
    "memory", "sequence", "batch", "layer", "attention", "über",   "café",   "naïve", "東京",
    "データ", "привет",   "мир",   "1984",  "3.14",      "hello,", "world.", "what?", "yes!"};

const char* const kSyllables[] = {"ka", "lo", "mi", "ne", "ru",  "ta",  "shi", "po",  "ven", "dor",
                                  "al", "is", "um", "ex", "tra", "qui", "zo",  "bel", "mar", "ton"};

}  // namespace

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/tokpack-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void WriteStringToFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
  ASSERT_TRUE(f.good()) << path;
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) ADD_FAILURE() << "cannot read " << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string RandomText(uint64_t seed, int words) {
  std::mt19937_64 rng(seed);
  std::string out;
  const size_t n = sizeof(kWords) / sizeof(kWords[0]);
  for (int i = 0; i < words; ++i) {
    if (i) out += ' ';
    if (rng() % 3 == 0) {
      out += kWords[rng() % n];
    } else {
      for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) out += kSyllables[rng() % 20];
    }
  }
  return out;
}

std::string MakeJsonl(int n, uint64_t seed, std::vector<std::string>* texts) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    std::string t = RandomText(seed + i, 1 + static_cast<int>((seed + i) * 7 % 60));
    out += "{\"text\": \"" + t + "\", \"id\": " + std::to_string(i) + "}\n";
    if (texts) texts->push_back(t);
  }
  return out;
}

const std::string& TestModelPath() {
  static const std::string* path = [] {
    static TempDir dir;  // Lives for the whole process.
    std::string corpus;
    for (int i = 0; i < 2000; ++i) corpus += RandomText(1000 + i, 40) + "\n";
    WriteStringToFile(dir.Join("train.txt"), corpus);
    auto st = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + dir.Join("train.txt") + " --model_prefix=" + dir.Join("m") +
        " --vocab_size=500 --model_type=unigram --character_coverage=1.0"
        " --minloglevel=2 --num_threads=1");
    if (!st.ok()) {
      ADD_FAILURE() << "spm training failed: " << st.ToString();
      std::abort();
    }
    return new std::string(dir.Join("m.model"));
  }();
  return *path;
}

std::string ZstdCompress(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  if (ZSTD_isError(n)) std::abort();
  out.resize(n);
  return out;
}

std::string GzipCompress(const std::string& data) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    std::abort();
  }
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace tokpack::testing

namespace tokpack::testing {

std::string TiktokenRanks(const std::vector<std::string>& merged, int missing_byte) {
  static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  auto base64 = [](const std::string& in) {
    std::string out;
    for (size_t i = 0; i < in.size(); i += 3) {
      uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << 16;
      if (i + 1 < in.size()) v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
      if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
      out += kB64[(v >> 18) & 63];
      out += kB64[(v >> 12) & 63];
      out += i + 1 < in.size() ? kB64[(v >> 6) & 63] : '=';
      out += i + 2 < in.size() ? kB64[v & 63] : '=';
    }
    return out;
  };
  std::string ranks;
  for (int b = 0; b < 256; ++b) {
    if (b == missing_byte) continue;
    ranks += base64(std::string(1, static_cast<char>(b))) + " " + std::to_string(b) + "\n";
  }
  for (size_t i = 0; i < merged.size(); ++i) {
    ranks += base64(merged[i]) + " " + std::to_string(256 + i) + "\n";
  }
  return ranks;
}

}  // namespace tokpack::testing
