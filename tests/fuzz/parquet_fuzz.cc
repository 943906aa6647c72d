// libFuzzer target: the Parquet plugin (src/parquet/, Arrow's reader from
// pyarrow) must turn any bytes into rows or an error string, never crash,
// hang or read out of bounds. Compiled from the plugin's source (Arrow
// itself is pyarrow's uninstrumented build).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "inputs/parquet/parquet_plugin.h"

namespace {

class MemoryInput final : public tokpack::parquet_plugin::Input {
 public:
  MemoryInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  const std::string& Name() const override { return name_; }
  uint64_t Size() const override { return size_; }
  bool ReadAt(uint64_t offset, uint64_t n, char* dst, std::string* error) override {
    // The plugin must never ask for bytes past the end.
    if (offset > size_ || n > size_ - offset) __builtin_trap();
    if (n > 0) std::memcpy(dst, data_ + offset, n);
    (void)error;
    return true;
  }

 private:
  const std::string name_ = "fuzz.parquet";
  const uint8_t* data_;
  size_t size_;
};

}  // namespace

// Small, so that the fuzzer also meets pages the cap refuses.
constexpr uint64_t kMaxDocumentBytes = 1 << 16;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // "id" read as an id column: integer columns too.
  for (const char* key : {"text", "meta.text", "id"}) {
    std::string error;
    const bool integers = std::string_view(key) == "id";
    tokpack::parquet_plugin::TextReader* reader =
        tokpack_parquet_open(new MemoryInput(data, size), key, kMaxDocumentBytes, integers, &error);
    if (reader == nullptr) {
      if (error.empty()) __builtin_trap();  // Failures always say why.
      continue;
    }
    for (int g = 0; g < reader->NumRowGroups(); ++g) {
      (void)reader->RowGroupBytes(g);
      (void)reader->RowGroupRows(g);
    }
    const char* text = nullptr;
    size_t text_size = 0;
    uint64_t row = 0, last_row = 0;
    std::string bad;
    // A footer may claim billions of rows; the rows actually stored are
    // few, but stop early rather than time out on a legal huge count.
    for (int i = 0; i < 100000; ++i) {
      const int rc = reader->Next(&text, &text_size, &row, &bad, &error);
      if (rc <= 0) {
        if (rc < 0 && error.empty()) __builtin_trap();
        break;
      }
      if (row <= last_row) __builtin_trap();  // Row numbers only increase.
      last_row = row;
      if (bad.empty() && text_size > 0) {
        volatile char first = text[0], end = text[text_size - 1];  // In bounds (ASan).
        (void)first;
        (void)end;
      }
    }
    delete reader;
  }
  return 0;
}
