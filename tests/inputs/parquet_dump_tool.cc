// Test hook (not a user tool): reads a Parquet file's text column through
// OpenParquetInput, as the packer does, so that
// tests/python/test_parquet_inputs.py can check it against pyarrow.
//
//   parquet_dump_tool FILE [TEXT_KEY [BEGIN END]]
//
// Prints "groups N" and "group G ROWS BYTES" for each row group, then for
// each row of groups [BEGIN, END) (default all) either
// "row R LEN\n<LEN bytes>\n" or "bad R <reason>\n", then "end N" (rows).
// On an error: "error <status>" on stderr, exit status 1.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "inputs/parquet_input.h"
#include "tokpack/builder.h"

namespace {

int Fail(const tokpack::Status& status) {
  std::fprintf(stderr, "error %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3 && argc != 5) {
    std::fprintf(stderr, "usage: parquet_dump_tool FILE [TEXT_KEY [BEGIN END]]\n");
    return 2;
  }
  const std::string key = argc >= 3 ? argv[2] : "text";
  auto reader = tokpack::OpenParquetInput(argv[1], key, tokpack::StorageOptions(),
                                          tokpack::kDefaultMaxDocumentBytes);
  if (!reader.ok()) return Fail(reader.status());
  const int groups = (*reader)->num_row_groups();
  std::printf("groups %d\n", groups);
  for (int g = 0; g < groups; ++g) {
    std::printf("group %d %llu %llu\n", g,
                static_cast<unsigned long long>((*reader)->row_group_rows(g)),
                static_cast<unsigned long long>((*reader)->row_group_bytes(g)));
  }
  if (argc == 5) {
    tokpack::Status status = (*reader)->Select(std::atoi(argv[3]), std::atoi(argv[4]));
    if (!status.ok()) return Fail(status);
  }
  unsigned long long rows = 0;
  for (;;) {
    std::string_view text;
    uint64_t row = 0;
    std::string bad;
    auto more = (*reader)->Next(&text, &row, &bad);
    if (!more.ok()) {
      std::fflush(stdout);
      return Fail(more.status());
    }
    if (!*more) break;
    ++rows;
    if (bad.empty()) {
      std::printf("row %llu %zu\n", static_cast<unsigned long long>(row), text.size());
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputc('\n', stdout);
    } else {
      std::printf("bad %llu %s\n", static_cast<unsigned long long>(row), bad.c_str());
    }
  }
  std::printf("end %llu\n", rows);
  return 0;
}
