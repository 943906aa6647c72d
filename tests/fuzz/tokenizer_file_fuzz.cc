// libFuzzer target: a tokenizer file as a hostile publisher would write it,
// loaded through the public Tokenizer, then a short text encoded and decoded
// and ids decoded. Errors are fine; a crash, undefined behaviour, a leak or
// memory past libFuzzer's -rss_limit_mb is not.
//
// Input: a selector byte, a text length byte (at most 255), the file, then
// the text (its invalid UTF-8 replaced). The selector picks the options of
// the file's kind (0: a tokenizer.json, none; 1: a tiktoken ranks file, the
// split pattern of a preset, or the file-chosen regex of a tiktoken file;
// 2: a sentencepiece model, none); the kind itself is what the bytes say, as
// for any file tokpack is given. Seeds: tests/fuzz/seeds/tokenizer_file
// (tests/fuzz/make_tokenizer_seeds.py).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.h"
#include "tokpack/tokenizer.h"

namespace {

// The file each input is written to: Tokenizer::Load reads a path (and looks
// for a tokenizer_config.json beside it, which is never there). Made once,
// removed at exit; never destroyed, so that it outlives the exit handler.
const std::string& FilePath() {
  static const std::string* const path = [] {
    std::string dir = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    dir += "/tokenizer_file_fuzz.XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) std::abort();
    std::atexit([] {
      std::remove(FilePath().c_str());
      rmdir(FilePath().substr(0, FilePath().rfind('/')).c_str());
    });
    return new std::string(dir + "/tokenizer");
  }();
  return *path;
}

void WriteFile(const std::string& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
}

constexpr const char* kPatterns[] = {"gpt2", "cl100k_base", "o200k_base", "llama3", "qwen2",
                                     // Regexes no scanner knows: PCRE2 runs them.
                                     R"(\p{L}+|\p{N}|\s+(?!\S)|[^\s\p{L}\p{N}]+)", R"(.)"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t text_bytes = std::min<size_t>(data[1], size - 2);
  const auto* chars = reinterpret_cast<const char*>(data);
  const std::string_view file(chars + 2, size - 2 - text_bytes);
  const std::string text =
      tokpack::RepairUtf8(std::string_view(chars + size - text_bytes, text_bytes));
  WriteFile(FilePath(), file);

  tokpack::TokenizerOptions options;
  if (data[0] % 3 == 1) {
    options.pattern = kPatterns[(data[0] / 3) % std::size(kPatterns)];
    if (data[0] & 0x80) options.special_tokens = {{"<|endoftext|>", 1 << 20}};
  }
  auto tokenizer = tokpack::Tokenizer::Load(FilePath(), options);
  if (!tokenizer.ok()) return 0;
  const tokpack::Tokenizer& t = **tokenizer;
  std::vector<int> ids;
  tokpack::EncodeCounts counts;
  if (t.Encode(text, &ids, &counts).ok()) {
    auto decoded = t.Decode(ids);
    if (!decoded.ok()) __builtin_trap();  // Its own ids always decode.
  }
  // Ids from the text's bytes, in and out of the vocabulary.
  std::vector<int> raw;
  const int64_t vocab = t.info().vocab_size;
  for (unsigned char c : text) raw.push_back(static_cast<int>(c * 977 % (vocab + 2)) - 1);
  (void)t.Decode(raw);
  return 0;
}
