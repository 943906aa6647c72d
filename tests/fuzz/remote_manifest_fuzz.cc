// libFuzzer target: the manifest.json bytes a server returns for a remote
// dataset, as RemoteOpener::LoadManifest takes them (within the size cap,
// then Manifest::Parse). Whatever is accepted must hold what the remote
// reader then relies on without checking again: every path confined to the
// prefix, chunk_bytes within range, one checksum per chunk, and sums of sizes,
// tokens and documents that do not overflow.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "format/dataset_path.h"
#include "storage/object_url.h"
#include "tokpack/manifest.h"

namespace {

using tokpack::Manifest;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void CheckDigest(const tokpack::FileDigest& d, uint64_t chunk) {
  const unsigned __int128 chunks = (static_cast<unsigned __int128>(d.bytes) + chunk - 1) / chunk;
  Check(d.chunk_xxh3.size() == chunks);
}

void CheckUnderPrefix(const std::string& name) {
  tokpack::ObjectLocation loc;
  loc.base = "http://127.0.0.1:1/ds/";
  const std::string url = loc.UrlOf(name);
  Check(url.find("/../") == std::string::npos && url.find("/./") == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > Manifest::kMaxJsonBytes) return 0;  // Refused before parsing.
  auto m = Manifest::Parse(std::string_view(reinterpret_cast<const char*>(data), size),
                           "http://127.0.0.1:1/ds/manifest.json");
  if (!m.ok()) return 0;
  Check(m->chunk_bytes >= Manifest::kMinChunkBytes && m->chunk_bytes <= Manifest::kMaxChunkBytes);
  unsigned __int128 bytes = 0, tokens = 0, documents = 0;
  for (const tokpack::ShardInfo& s : m->shards) {
    Check(tokpack::CheckDatasetPath(s.path).ok());
    CheckUnderPrefix(s.path + ".bin");
    CheckUnderPrefix(s.path + ".idx");
    CheckDigest(s.bin, m->chunk_bytes);
    CheckDigest(s.idx, m->chunk_bytes);
    bytes += static_cast<unsigned __int128>(s.bin.bytes) + s.idx.bytes;
    tokens += s.tokens;
    documents += s.documents;
  }
  Check(bytes <= Manifest::kMaxTotalBytes);
  Check(tokens == m->TotalTokens() && documents == m->TotalDocuments());
  if (!m->tokenizer.file.empty()) {
    Check(tokpack::CheckDatasetPath(m->tokenizer.file).ok());
    CheckUnderPrefix(m->tokenizer.file);
    Check(m->tokenizer.model_xxh3 != 0);
  }
  return 0;
}
