// libFuzzer target: manifest.json parsing must fail cleanly on any input, and
// whatever it accepts must serialize and parse back to the same text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokpack/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = tokpack::Manifest::Parse(std::string_view(reinterpret_cast<const char*>(data), size),
                                    "fuzz.json");
  if (m.ok()) {
    const std::string json = m->ToJson();
    auto again = tokpack::Manifest::Parse(json, "again.json");
    if (!again.ok() || again->ToJson() != json) __builtin_trap();
  }
  return 0;
}
