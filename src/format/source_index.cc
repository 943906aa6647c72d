#include "format/source_index.h"

#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

namespace tokpack {
namespace {

uint64_t LoadU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

void PutU64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), 8); }

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads a LEB128 varint of at most 10 bytes; false if it runs off the end.
bool GetVarint(std::string_view* in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && !in->empty(); shift += 7) {
    const auto b = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    *v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

Status Bad(const std::string& name, const std::string& what) {
  return DataLossError(name + ": " + what + " (a damaged or foreign document-source file)");
}

// The zstd level of id blocks: fast; ids are short and repetitive.
constexpr int kZstdLevel = 3;

}  // namespace

uint32_t IdHash(std::string_view id) {
  return static_cast<uint32_t>(XXH3_64bits(id.data(), id.size()) >> 32);
}

StatusOr<SourceHeader> ParseSourceHeader(std::string_view header, uint64_t file_bytes,
                                         uint64_t documents, const std::string& name) {
  if (header.size() < kSourceHeaderBytes || file_bytes < kSourceHeaderBytes) {
    return Bad(name, std::to_string(file_bytes) + " bytes, shorter than its " +
                         std::to_string(kSourceHeaderBytes) + "-byte header");
  }
  if (std::memcmp(header.data(), kSourceMagic, 8) != 0) return Bad(name, "no TPKSRC magic");
  uint32_t version, flags;
  std::memcpy(&version, header.data() + 8, 4);
  std::memcpy(&flags, header.data() + 12, 4);
  if (version != kSourceVersion) {
    return Bad(name, "version " + std::to_string(version) + " (this tokpack reads version 1)");
  }
  if (flags != 0) return Bad(name, "flags " + std::to_string(flags) + " (reserved: 0)");
  SourceHeader h;
  const char* p = header.data() + 16;
  h.documents = LoadU64(p);
  h.runs = LoadU64(p + 8);
  h.inputs = LoadU64(p + 16);
  h.blocks = LoadU64(p + 24);
  h.hashes = LoadU64(p + 32);
  h.blob_bytes = LoadU64(p + 40);
  const uint64_t block_docs = LoadU64(p + 48);
  if (h.documents != documents) {
    return Bad(name, "describes " + std::to_string(h.documents) + " documents, the shard has " +
                         std::to_string(documents));
  }
  if (block_docs != kIdBlockDocs) {
    return Bad(name, "id blocks of " + std::to_string(block_docs) + " documents (expected " +
                         std::to_string(kIdBlockDocs) + ")");
  }
  const uint64_t want_blocks = (documents + kIdBlockDocs - 1) / kIdBlockDocs;
  if (h.runs > documents || (documents > 0 && h.runs == 0) ||
      (h.blocks != 0 && h.blocks != want_blocks) || h.hashes > documents ||
      (h.blocks == 0 && h.hashes != 0) || documents > UINT32_MAX) {
    return Bad(name, "inconsistent counts (" + std::to_string(h.runs) + " runs, " +
                         std::to_string(h.blocks) + " id blocks, " + std::to_string(h.hashes) +
                         " ids for " + std::to_string(documents) + " documents)");
  }
  // Every count is at most 2^32 here, so the sections' sum cannot overflow
  // but for the blob, which must fit in the file.
  if (h.blob_bytes > file_bytes || h.hashes_offset() > file_bytes || h.file_bytes() != file_bytes) {
    return Bad(name, std::to_string(file_bytes) + " bytes, but its header describes " +
                         (h.blob_bytes > file_bytes ? std::string("more")
                                                    : std::to_string(h.file_bytes())) +
                         " (truncated or mismatched)");
  }
  return h;
}

StatusOr<std::vector<SourceRun>> ParseRuns(std::string_view bytes, const SourceHeader& h,
                                           const std::string& name) {
  if (bytes.size() != h.runs * kSourceRunBytes) return Bad(name, "a short runs table");
  std::vector<SourceRun> runs(h.runs);
  for (uint64_t r = 0; r < h.runs; ++r) {
    const char* p = bytes.data() + r * kSourceRunBytes;
    runs[r] = {LoadU64(p), LoadU64(p + 8), LoadU64(p + 16)};
    const std::string where = "run " + std::to_string(r);
    if (r == 0 ? runs[r].first_doc != 0
               : runs[r].first_doc <= runs[r - 1].first_doc || runs[r].first_doc >= h.documents) {
      return Bad(name, where + " starts at document " + std::to_string(runs[r].first_doc) +
                           ", out of order or past the shard");
    }
    if (runs[r].input >= h.inputs) {
      return Bad(name, where + " names input " + std::to_string(runs[r].input) + " of " +
                           std::to_string(h.inputs));
    }
    if (r > 0) {
      // The previous run's last record; it must fit in 64 bits.
      const SourceRun& prev = runs[r - 1];
      uint64_t last = 0;
      if (__builtin_add_overflow(prev.first_record, runs[r].first_doc - prev.first_doc - 1,
                                 &last) ||
          runs[r].input < prev.input ||
          (runs[r].input == prev.input && runs[r].first_record <= last)) {
        return Bad(name,
                   where + " does not follow run " + std::to_string(r - 1) + " in input order");
      }
    }
  }
  if (!runs.empty()) {
    uint64_t last = 0;
    if (__builtin_add_overflow(runs.back().first_record, h.documents - runs.back().first_doc - 1,
                               &last)) {
      return Bad(name, "the last run's records pass 2^64");
    }
  }
  return runs;
}

const SourceRun& RunOf(const std::vector<SourceRun>& runs, uint64_t doc) {
  auto it = std::upper_bound(runs.begin(), runs.end(), doc,
                             [](uint64_t d, const SourceRun& r) { return d < r.first_doc; });
  return *(it - 1);
}

StatusOr<std::vector<std::optional<std::string>>> DecodeIdBlock(std::string_view frame,
                                                                uint64_t docs,
                                                                const std::string& name) {
  const uint64_t cap = docs * (kMaxIdBytes + 3);
  const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > cap) {
    return Bad(name,
               "an id block that is not a zstd frame of at most " + std::to_string(cap) + " bytes");
  }
  std::string raw(size, '\0');
  const size_t got = ZSTD_decompress(raw.data(), raw.size(), frame.data(), frame.size());
  if (ZSTD_isError(got) || got != size) {
    return Bad(name, std::string("an id block that does not decompress (") +
                         (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short") + ")");
  }
  std::vector<std::optional<std::string>> ids(docs);
  std::string_view in = raw;
  for (uint64_t i = 0; i < docs; ++i) {
    uint64_t v = 0;
    if (!GetVarint(&in, &v) || v > kMaxIdBytes + 1 || v - (v > 0) > in.size()) {
      return Bad(name, "an id block whose entry " + std::to_string(i) + " is malformed");
    }
    if (v == 0) continue;
    ids[i] = std::string(in.substr(0, v - 1));
    in.remove_prefix(v - 1);
  }
  if (!in.empty()) return Bad(name, "an id block with bytes after its last entry");
  return ids;
}

Status CheckSourceFile(std::string_view file, uint64_t documents, const std::string& name) {
  TOKPACK_ASSIGN_OR_RETURN(SourceHeader h, ParseSourceHeader(file, file.size(), documents, name));
  TOKPACK_RETURN_IF_ERROR(
      ParseRuns(file.substr(h.runs_offset(), h.runs * kSourceRunBytes), h, name).status());
  std::vector<uint64_t> want;  // (hash << 32) | document, as the writer makes them.
  uint64_t prev_end = 0;
  for (uint64_t b = 0; b < h.blocks; ++b) {
    const uint64_t begin = LoadU64(file.data() + h.block_offsets_offset() + 8 * b);
    const uint64_t end = LoadU64(file.data() + h.block_offsets_offset() + 8 * b + 8);
    if (begin != prev_end || end < begin || end > h.blob_bytes) {
      return Bad(name, "id block " + std::to_string(b) + " is out of place");
    }
    prev_end = end;
    const uint64_t docs = std::min<uint64_t>(kIdBlockDocs, documents - b * kIdBlockDocs);
    TOKPACK_ASSIGN_OR_RETURN(
        auto ids, DecodeIdBlock(file.substr(h.blob_offset() + begin, end - begin), docs, name));
    for (uint64_t i = 0; i < docs; ++i) {
      if (ids[i]) want.push_back(uint64_t{IdHash(*ids[i])} << 32 | (b * kIdBlockDocs + i));
    }
  }
  if (LoadU64(file.data() + h.block_offsets_offset()) != 0 || prev_end != h.blob_bytes) {
    return Bad(name, "its id blocks do not fill its id data");
  }
  std::sort(want.begin(), want.end());
  if (want.size() != h.hashes) {
    return Bad(
        name, std::to_string(h.hashes) + " id entries for " + std::to_string(want.size()) + " ids");
  }
  for (uint64_t e = 0; e < h.hashes; ++e) {
    uint32_t hash, doc;
    std::memcpy(&hash, file.data() + h.hashes_offset() + 8 * e, 4);
    std::memcpy(&doc, file.data() + h.hashes_offset() + 8 * e + 4, 4);
    if ((uint64_t{hash} << 32 | doc) != want[e]) {
      return Bad(name, "id entry " + std::to_string(e) + " does not match the ids");
    }
  }
  return Status::Ok();
}

struct SourceIndexWriter::Compressor {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ~Compressor() { ZSTD_freeCCtx(cctx); }
};

SourceIndexWriter::SourceIndexWriter(uint64_t inputs)
    : inputs_(inputs), zstd_(std::make_unique<Compressor>()) {}

SourceIndexWriter::~SourceIndexWriter() = default;

namespace {

// Sorts (hash << 32 | document) entries pushed in document order by hash,
// keeping document order among equal hashes: two stable 16-bit counting
// passes over the hash, several times faster than a comparison sort on a
// shard's million entries, on the build's one writer thread.
void SortByHash(std::vector<uint64_t>* v) {
  std::vector<uint64_t> tmp(v->size());
  for (int shift : {32, 48}) {
    std::vector<size_t> count((1 << 16) + 1, 0);
    for (uint64_t x : *v) ++count[((x >> shift) & 0xffff) + 1];
    for (size_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];
    for (uint64_t x : *v) tmp[count[(x >> shift) & 0xffff]++] = x;
    v->swap(tmp);
  }
}

}  // namespace

Status SourceIndexWriter::Add(uint64_t input, uint64_t record, std::optional<std::string_view> id) {
  if (documents_ >= UINT32_MAX) {
    return InvalidArgumentError("a shard of more than 2^32 - 1 documents cannot record sources");
  }
  if (input >= inputs_) return InternalError("a document from an input past the input list");
  // A whole-file document (record 0) always starts a run, so that a run's
  // records are consecutive lines or rows.
  if (runs_.empty() || runs_.back().input != input || record != next_record_ || record == 0) {
    runs_.push_back({documents_, input, record});
  }
  next_record_ = record + 1;
  if (id && id->size() > kMaxIdBytes) id.reset();
  if (id) {
    PutVarint(&block_, id->size() + 1);
    block_.append(*id);
    hashes_.push_back(uint64_t{IdHash(*id)} << 32 | documents_);
    any_id_ = true;
  } else {
    block_.push_back('\0');
  }
  ++documents_;
  if (documents_ % kIdBlockDocs == 0) return FlushBlock();
  return Status::Ok();
}

Status SourceIndexWriter::FlushBlock() {
  const size_t old = blob_.size();
  blob_.resize(old + ZSTD_compressBound(block_.size()));
  const size_t n = ZSTD_compressCCtx(zstd_->cctx, blob_.data() + old, blob_.size() - old,
                                     block_.data(), block_.size(), kZstdLevel);
  if (ZSTD_isError(n)) {
    return InternalError(std::string("compressing document ids: ") + ZSTD_getErrorName(n));
  }
  blob_.resize(old + n);
  block_ends_.push_back(blob_.size());
  block_.clear();
  return Status::Ok();
}

StatusOr<std::string> SourceIndexWriter::Finish() {
  if (documents_ % kIdBlockDocs != 0) TOKPACK_RETURN_IF_ERROR(FlushBlock());
  if (!any_id_) {
    blob_.clear();
    block_ends_.clear();
  }
  SortByHash(&hashes_);
  std::string out(kSourceMagic, 8);
  out.reserve(kSourceHeaderBytes + runs_.size() * kSourceRunBytes + (block_ends_.size() + 1) * 8 +
              blob_.size() + hashes_.size() * kSourceHashBytes);
  const uint32_t version = kSourceVersion, flags = 0;
  out.append(reinterpret_cast<const char*>(&version), 4);
  out.append(reinterpret_cast<const char*>(&flags), 4);
  for (uint64_t v : {documents_, uint64_t{runs_.size()}, inputs_, uint64_t{block_ends_.size()},
                     uint64_t{hashes_.size()}, uint64_t{blob_.size()}, uint64_t{kIdBlockDocs}}) {
    PutU64(&out, v);
  }
  for (const SourceRun& r : runs_) {
    PutU64(&out, r.first_doc);
    PutU64(&out, r.input);
    PutU64(&out, r.first_record);
  }
  PutU64(&out, 0);
  for (uint64_t end : block_ends_) PutU64(&out, end);
  out += blob_;
  // Each entry is (u32 hash, u32 document): the u64 with its halves swapped.
  const size_t at = out.size();
  out.resize(at + hashes_.size() * kSourceHashBytes);
  for (size_t e = 0; e < hashes_.size(); ++e) {
    const uint64_t entry = hashes_[e] >> 32 | hashes_[e] << 32;
    std::memcpy(out.data() + at + e * kSourceHashBytes, &entry, 8);
  }
  return out;
}

}  // namespace tokpack
