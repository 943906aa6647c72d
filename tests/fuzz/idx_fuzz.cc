// libFuzzer target: the Megatron .idx parser must reject any malformed
// input with a Status, never crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "format/idx_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto idx = tokpack::ParseIdx(bytes, "fuzz.idx");
  if (idx.ok()) {
    // An accepted index puts every sequence inside the .bin it describes.
    const int64_t item = tokpack::TokenDtypeSize(idx->dtype());
    for (uint64_t i = 0; i < idx->sequence_count(); ++i) {
      const uint64_t end = static_cast<uint64_t>(idx->pointer(i)) +
                           static_cast<uint64_t>(idx->length(i)) * static_cast<uint64_t>(item);
      if (idx->pointer(i) < 0 || idx->length(i) < 0 || end > idx->bin_bytes()) __builtin_trap();
    }
  }
  return 0;
}
