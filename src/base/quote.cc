#include "base/quote.h"

#include "base/utf8.h"

namespace tokpack {

std::string Clipped(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t cut = max_bytes;
  // Back off continuation bytes, so that the head is not cut inside a character.
  while (cut > 0 && IsUtf8Continuation(s[cut])) --cut;
  return std::string(s.substr(0, cut)) + "... (" + std::to_string(s.size()) + " bytes)";
}

std::string Quoted(std::string_view s, size_t max_bytes) {
  return "'" + Clipped(s, max_bytes) + "'";
}

std::string JoinList(const std::vector<std::string>& items, std::string_view last) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? last : std::string_view(", ");
    out += items[i];
  }
  return out;
}

}  // namespace tokpack
