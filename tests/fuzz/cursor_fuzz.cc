// libFuzzer target: loader states (checkpoint cursors) come from user files;
// parsing must fail cleanly and accepted states must round-trip.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "reader/cursor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto c = tokpack::Cursor::Parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (c.ok()) {
    auto again = tokpack::Cursor::Parse(c->ToJson());
    if (!again.ok() || again->ToJson() != c->ToJson()) __builtin_trap();
  }
  return 0;
}
