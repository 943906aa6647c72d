// The benchmarks' reader of a JSONL corpus: every non-blank line's string
// field, in file order, all in memory (untimed input for encoder benchmarks).
#ifndef TOKPACK_BENCH_JSONL_TEXTS_H_
#define TOKPACK_BENCH_JSONL_TEXTS_H_

#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace tokpack::bench {

// The texts, or exits after printing "<tool>: path:line: what is wrong".
inline std::vector<std::string> ReadJsonlTextsOrExit(const char* tool, const std::string& path,
                                                     const std::string& key) {
  std::vector<std::string> texts;
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "%s: %s\n", tool, why.c_str());
    std::exit(1);
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open '" + path + "'");
  simdjson::dom::parser parser;
  std::string line;
  uint64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    simdjson::dom::element doc;
    if (parser.parse(line).get(doc) != simdjson::SUCCESS) {
      fail(path + ":" + std::to_string(line_no) + ": malformed JSON");
    }
    std::string_view text;
    if (doc[key].get_string().get(text) != simdjson::SUCCESS) {
      fail(path + ":" + std::to_string(line_no) + ": no string field '" + key + "'");
    }
    texts.emplace_back(text);
  }
  return texts;
}

}  // namespace tokpack::bench

#endif  // TOKPACK_BENCH_JSONL_TEXTS_H_
