// libFuzzer target: the Megatron .idx parsers must reject any malformed
// input with a Status, never crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "format/idx_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto header = tokpack::ParseIdxHeader(bytes, "fuzz.idx");
  auto full = tokpack::ParseIdx(bytes, "fuzz.idx");
  if (full.ok()) {
    // A fully valid index must also pass the header check, with equal totals.
    if (!header.ok() || header->tokens() != full->tokens()) __builtin_trap();
    for (uint64_t i = 0; i < full->sequence_count(); ++i) (void)full->length(i);
  }
  return 0;
}
