// libFuzzer target: a removal list (removed.json) is parsed, and checked
// against a dataset, with a Status, never a crash, whatever its bytes; what
// parses writes back to text that parses to the same list.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "format/removed_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tokpack::StatusOr<tokpack::RemovedList> list = tokpack::ParseRemovedList(text, "fuzz.json");
  if (!list.ok()) return 0;
  // Its own fingerprint, so that the indices' bound is reached.
  (void)tokpack::ParseRemovedListFor(text, "fuzz.json", list->fingerprint, 1000);
  tokpack::StatusOr<tokpack::RemovedList> back =
      tokpack::ParseRemovedList(tokpack::RemovedListJson(*list), "back.json");
  if (!back.ok() || back->fingerprint != list->fingerprint || back->documents != list->documents) {
    std::abort();
  }
  return 0;
}
