// Test hook (not a user tool): encodes documents with a BpeTokenizer so that
// compare_reference.py can check the ids against PyPI tokenizers/tiktoken.
//
//   bpe_encode_tool hf TOKENIZER_JSON DOCS
//   bpe_encode_tool tiktoken RANKS PATTERN_OR_PRESET DOCS [TEXT=ID ...]
//
// DOCS holds records "<byte length>\n<bytes>". Prints one line of
// space-separated ids per document, then "decode-mismatch N" if Decode() of
// some document's ids is not its text (N documents; unk tokens excepted).
// With TOKPACK_BENCH_REPEAT=R in the environment it instead encodes all
// documents R times and prints MB/s.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"

namespace {

std::string ReadAll(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Fail(const std::string& msg) {
  std::cerr << "bpe_encode_tool: " << msg << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return Fail("usage: hf JSON DOCS | tiktoken RANKS PATTERN DOCS [TEXT=ID...]");
  const std::string mode = argv[1];
  tokpack::StatusOr<std::unique_ptr<tokpack::BpeTokenizer>> tok =
      tokpack::InvalidArgumentError("unknown mode " + mode);
  const char* docs_path = nullptr;
  if (mode == "hf") {
    tok = tokpack::BpeTokenizer::FromHuggingFaceJson(ReadAll(argv[2]), argv[2]);
    docs_path = argv[3];
  } else if (mode == "tiktoken" && argc >= 5) {
    tokpack::TiktokenOptions options;
    options.pattern = argv[3];
    for (int i = 5; i < argc; ++i) {
      std::string arg = argv[i];
      size_t eq = arg.rfind('=');
      options.special_tokens.emplace_back(arg.substr(0, eq), std::atoi(arg.c_str() + eq + 1));
    }
    tok = tokpack::BpeTokenizer::FromTiktoken(ReadAll(argv[2]), options, argv[2]);
    docs_path = argv[4];
  }
  if (!tok.ok()) return Fail(tok.status().ToString());
  const std::string docs = ReadAll(docs_path);
  std::vector<std::string_view> texts;
  for (size_t pos = 0; pos < docs.size();) {
    size_t nl = docs.find('\n', pos);
    if (nl == std::string::npos) return Fail("bad DOCS record header");
    size_t len = std::strtoull(docs.c_str() + pos, nullptr, 10);
    texts.emplace_back(docs.data() + nl + 1, len);
    pos = nl + 1 + len;
  }
  std::vector<int> ids;
  if (const char* repeat = std::getenv("TOKPACK_BENCH_REPEAT")) {
    int r = std::atoi(repeat);
    size_t bytes = 0, tokens = 0;
    auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < r; ++k) {
      for (std::string_view t : texts) {
        auto st = (*tok)->Encode(t, &ids);
        if (!st.ok()) return Fail(st.ToString());
        bytes += t.size();
        tokens += ids.size();
      }
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%.2f MB/s (%zu bytes, %zu tokens, %.3f s)\n", bytes / s / 1e6, bytes, tokens, s);
    return 0;
  }
  std::string out;
  size_t decode_mismatch = 0;
  for (std::string_view t : texts) {
    tokpack::BpeEncodeStats stats;
    auto st = (*tok)->Encode(t, &ids, &stats);
    if (!st.ok()) return Fail(st.ToString());
    out.clear();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) out += ' ';
      out += std::to_string(ids[i]);
    }
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
    auto back = (*tok)->Decode(ids);
    if (!back.ok()) return Fail(back.status().ToString());
    if (stats.unk_tokens == 0 && stats.dropped_chars == 0 && *back != t) ++decode_mismatch;
  }
  if (decode_mismatch > 0) std::printf("decode-mismatch %zu\n", decode_mismatch);
  return 0;
}
