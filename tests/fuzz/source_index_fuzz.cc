// libFuzzer target: a document-source file (.src) is checked whole with a
// Status, never a crash or a read out of bounds, whatever its bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "format/source_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The shard's document count as the header claims it, so that inputs get
  // past that check and reach the sections.
  uint64_t documents = 0;
  if (size >= 24) std::memcpy(&documents, data + 16, 8);
  (void)tokpack::CheckSourceFile(bytes, documents, "fuzz.src");
  return 0;
}
