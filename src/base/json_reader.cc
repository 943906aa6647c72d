#include "base/json_reader.h"

#include <vector>

namespace tokpack {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

Status JsonReader::Of(element e, std::string path, std::string_view source, Style style,
                      JsonReader* out) {
  object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) {
    return JsonReader(object(), std::move(path), source, style).SelfError("is not an object");
  }
  *out = JsonReader(o, std::move(path), source, style);
  return Status::Ok();
}

std::string JsonReader::Path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

Status JsonReader::Error(std::string_view key, const std::string& what) const {
  if (style_ == Style::kBare) {
    return InvalidArgumentError(std::string(source_) + ": " + Path(key) + ": " + what);
  }
  return InvalidArgumentError(std::string(source_) + ": field '" + Path(key) + "' " + what);
}

Status JsonReader::SelfError(const std::string& what) const {
  if (path_.empty()) return InvalidArgumentError(std::string(source_) + ": " + what);
  if (style_ == Style::kBare) {
    return InvalidArgumentError(std::string(source_) + ": " + path_ + ": " + what);
  }
  return InvalidArgumentError(std::string(source_) + ": field '" + path_ + "' " + what);
}

Status JsonReader::Missing(std::string_view key, std::string_view want) const {
  return Error(key, "is missing or not " + std::string(want));
}

bool JsonReader::IsSet(std::string_view key) const {
  element e;
  return obj_[key].get(e) == simdjson::SUCCESS && !e.is_null();
}

Status JsonReader::Get(std::string_view key, uint64_t* out) const {
  if (obj_[key].get_uint64().get(*out) != simdjson::SUCCESS) {
    return Missing(key, "an unsigned integer");
  }
  return Status::Ok();
}

Status JsonReader::Get(std::string_view key, int64_t* out) const {
  if (obj_[key].get_int64().get(*out) != simdjson::SUCCESS) return Missing(key, "an integer");
  return Status::Ok();
}

Status JsonReader::Get(std::string_view key, int* out) const {
  int64_t v = 0;
  TOKPACK_RETURN_IF_ERROR(Get(key, &v));
  if (v < INT32_MIN || v > INT32_MAX) return Missing(key, "a 32-bit integer");
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status JsonReader::Get(std::string_view key, bool* out) const {
  if (obj_[key].get_bool().get(*out) != simdjson::SUCCESS) return Missing(key, "a boolean");
  return Status::Ok();
}

Status JsonReader::Get(std::string_view key, std::string* out) const {
  std::string_view sv;
  TOKPACK_RETURN_IF_ERROR(Get(key, &sv));
  out->assign(sv);
  return Status::Ok();
}

Status JsonReader::Get(std::string_view key, std::string_view* out) const {
  if (obj_[key].get_string().get(*out) != simdjson::SUCCESS) return Missing(key, "a string");
  return Status::Ok();
}

Status JsonReader::GetOr(std::string_view key, bool fallback, bool* out) const {
  *out = fallback;
  if (!IsSet(key)) return Status::Ok();
  if (obj_[key].get_bool().get(*out) != simdjson::SUCCESS) return Error(key, "is not a boolean");
  return Status::Ok();
}

Status JsonReader::Object(std::string_view key, JsonReader* out) const {
  object o;
  if (obj_[key].get_object().get(o) != simdjson::SUCCESS) return Missing(key, "an object");
  *out = JsonReader(o, Path(key), source_, style_);
  return Status::Ok();
}

Status JsonReader::Array(std::string_view key, array* out) const {
  if (obj_[key].get_array().get(*out) != simdjson::SUCCESS) return Missing(key, "an array");
  return Status::Ok();
}

Status JsonReader::OnlyKeys(std::initializer_list<std::string_view> allowed,
                            const std::string& unknown) const {
  // At most allowed.size() keys pass, so the repeat scan stays short.
  std::vector<std::string_view> seen;
  for (const auto& kv : obj_) {
    bool known = false;
    for (std::string_view k : allowed) known = known || kv.key == k;
    if (!known) return Error(kv.key, unknown);
    for (std::string_view k : seen) {
      if (k == kv.key) return Error(kv.key, "is given twice");
    }
    seen.push_back(kv.key);
  }
  return Status::Ok();
}

}  // namespace tokpack
