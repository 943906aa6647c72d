// libFuzzer target: the paths a manifest names (shard paths and
// tokenizer.file). The first byte picks the field, the rest is the path,
// written into an otherwise valid manifest. Parsing must accept exactly the
// paths CheckDatasetPath accepts, and every accepted path must stay beneath
// the dataset, joined to a directory or to an object-store prefix and
// normalized the way a file system or a URL client would.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "base/utf8.h"
#include "format/dataset_path.h"
#include "storage/object_url.h"
#include "tokpack/manifest.h"

namespace {

using tokpack::Manifest;

Manifest Base() {
  Manifest m;
  m.chunk_bytes = 16;
  m.tokenizer.type = "sentencepiece";
  m.tokenizer.file = "tokenizer.model";
  m.tokenizer.model_xxh3 = 0x85a86c6769b3a8a0;
  tokpack::ShardInfo s;
  s.path = "shard-00000";
  s.tokens = 10;
  s.documents = 2;
  s.bin = {20, {1, 2}};
  s.idx = {82, {3, 4, 5, 6, 7, 8}};
  m.shards.push_back(s);
  m.provenance.kind = "build";
  return m;
}

// `path` joined under "/d" and under an object prefix stays beneath them.
void CheckBeneath(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path rel = (fs::path("/d") / path).lexically_normal().lexically_relative("/d");
  if (rel.empty() || *rel.begin() == ".." || *rel.begin() == ".") __builtin_trap();
  tokpack::ObjectLocation loc;
  loc.base = "http://127.0.0.1:1/b/prefix/";
  const std::string url = loc.UrlOf(path);
  // What a URL client sends after removing dot segments (RFC 3986 5.2.4).
  const fs::path url_path = fs::path(url.substr(std::string("http://127.0.0.1:1").size()));
  const std::string normal = url_path.lexically_normal().string();
  if (normal.rfind("/b/prefix/", 0) != 0 || normal.size() <= 10) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool tokenizer = data[0] & 1;
  const std::string path(reinterpret_cast<const char*>(data + 1), size - 1);
  const bool valid = tokpack::CheckDatasetPath(path).ok();
  if (valid) CheckBeneath(path);

  Manifest m = Base();
  (tokenizer ? m.tokenizer.file : m.shards[0].path) = path;
  auto parsed = Manifest::Parse(m.ToJson(), "fuzz.json");
  if (parsed.ok()) {
    const std::string& got = tokenizer ? parsed->tokenizer.file : parsed->shards[0].path;
    if (tokenizer && got.empty()) return 0;  // No copy: allowed.
    if (!tokpack::CheckDatasetPath(got).ok()) __builtin_trap();
    CheckBeneath(got);
  } else if (valid && tokpack::IsValidUtf8(path)) {
    __builtin_trap();  // A valid path (written as is) must be accepted.
  }
  return 0;
}
