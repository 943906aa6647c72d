#include "format/dataset_path.h"

#include <cstdio>
#include <string>

namespace tokpack {

Status CheckDatasetPath(std::string_view path) {
  if (path.empty()) return InvalidArgumentError("is empty");
  if (path.size() > kMaxDatasetPathBytes) {
    return InvalidArgumentError("is " + std::to_string(path.size()) + " bytes long, more than " +
                                std::to_string(kMaxDatasetPathBytes));
  }
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", c);
      return InvalidArgumentError(std::string("contains the control character ") + hex);
    }
    // Windows and some object stores read a backslash as a separator.
    if (c == '\\') return InvalidArgumentError("contains a backslash");
  }
  if (path[0] == '/') {
    return InvalidArgumentError("is absolute: a dataset names only files beneath its directory");
  }
  size_t components = 0;
  for (size_t begin = 0; begin <= path.size();) {
    size_t end = path.find('/', begin);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(begin, end - begin);
    if (part.empty()) {
      return InvalidArgumentError("has an empty component ('//' or a trailing '/')");
    }
    if (part == "." || part == "..") {
      return InvalidArgumentError("has a '" + std::string(part) +
                                  "' component: a dataset names only files beneath its directory");
    }
    if (part.size() > kMaxDatasetPathComponentBytes) {
      return InvalidArgumentError("has a component of " + std::to_string(part.size()) +
                                  " bytes, more than " +
                                  std::to_string(kMaxDatasetPathComponentBytes));
    }
    if (++components > kMaxDatasetPathComponents) {
      return InvalidArgumentError("has more than " + std::to_string(kMaxDatasetPathComponents) +
                                  " components");
    }
    begin = end + 1;
  }
  return Status::Ok();
}

}  // namespace tokpack
