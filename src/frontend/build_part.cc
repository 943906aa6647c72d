#include "frontend/build_part.h"

#include <charconv>

namespace tokpack {

Status ParsePart(const std::string& text, int* index, int* count) {
  const size_t slash = text.find('/');
  const char* end = text.data() + text.size();
  int i = -1, n = 0;
  if (slash != std::string::npos) {
    const char* mid = text.data() + slash;
    auto [p1, e1] = std::from_chars(text.data(), mid, i);
    auto [p2, e2] = std::from_chars(mid + 1, end, n);
    if (e1 == std::errc() && p1 == mid && e2 == std::errc() && p2 == end && n >= 1 && i >= 0 &&
        i < n) {
      *index = i;
      *count = n;
      return Status::Ok();
    }
  }
  return InvalidArgumentError("--part must be i/N with 0 <= i < N, got '" + text + "'");
}

}  // namespace tokpack
