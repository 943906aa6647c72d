#include "format/idx_file.h"

#include <cstring>

namespace tokpack {
namespace {

template <typename T>
T LoadLe(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

template <typename T>
void AppendLe(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

Status Corrupt(std::string_view name, const std::string& what) {
  return DataLossError(std::string(name) + ": invalid Megatron index: " + what);
}

}  // namespace

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "tokpack's files are little endian and it assumes a little-endian host");

int32_t IdxView::length(uint64_t i) const { return LoadLe<int32_t>(lengths_ + 4 * i); }
int64_t IdxView::pointer(uint64_t i) const { return LoadLe<int64_t>(pointers_ + 8 * i); }
int64_t IdxView::document_index(uint64_t i) const { return LoadLe<int64_t>(doc_idx_ + 8 * i); }

// The header: magic, version, dtype, and a file size that matches the counts.
StatusOr<IdxView> IdxView::ParseHeader(std::string_view data, std::string_view name) {
  if (data.size() < kIdxHeaderBytes) {
    return Corrupt(
        name, "file is " + std::to_string(data.size()) + " bytes, shorter than the 34-byte header");
  }
  if (std::memcmp(data.data(), kIdxMagic, sizeof(kIdxMagic)) != 0) {
    return Corrupt(name, "bad magic (expected MMIDIDX\\0\\0)");
  }
  const char* p = data.data();
  uint64_t version = LoadLe<uint64_t>(p + 9);
  if (version != kIdxVersion) {
    return Corrupt(name, "unsupported version " + std::to_string(version));
  }
  uint8_t code = static_cast<uint8_t>(p[17]);
  IdxView v;
  if (code == static_cast<uint8_t>(TokenDtype::kUInt16)) {
    v.dtype_ = TokenDtype::kUInt16;
  } else if (code == static_cast<uint8_t>(TokenDtype::kInt32)) {
    v.dtype_ = TokenDtype::kInt32;
  } else {
    return Corrupt(name, "unsupported dtype code " + std::to_string(code) +
                             " (tokpack reads 8 = uint16 and 4 = int32)");
  }
  v.sequence_count_ = LoadLe<uint64_t>(p + 18);
  v.document_count_ = LoadLe<uint64_t>(p + 26);
  const uint64_t body = data.size() - kIdxHeaderBytes;
  // Overflow-safe: each count is bounded by the body size before multiplying.
  if (v.sequence_count_ > body / 12 || v.document_count_ > body / 8 ||
      v.sequence_count_ * 12 + v.document_count_ * 8 != body) {
    return Corrupt(name, "size " + std::to_string(data.size()) + " does not match " +
                             std::to_string(v.sequence_count_) + " sequences and " +
                             std::to_string(v.document_count_) + " document entries");
  }
  if (v.document_count_ == 0) return Corrupt(name, "no document index entries");
  v.lengths_ = p + kIdxHeaderBytes;
  v.pointers_ = v.lengths_ + 4 * v.sequence_count_;
  v.doc_idx_ = v.pointers_ + 8 * v.sequence_count_;
  return v;
}

// Whether any sequence breaks a per-entry rule, without saying which: every
// dataset open runs this over every entry, so it only ORs bits together
// (no branches, no 64-bit compares, which SSE2 lacks) and vectorizes where
// the compiler vectorizes loops (-O3, the Release and wheel builds). Each
// pointer is checked against the end of its predecessor rather than a
// running sum, so there is no serial dependency. A negative length or a
// pointer past INT64_MAX sets a top bit; given neither, an end cannot wrap.
bool IdxView::AnyBadSequence() const {
  const uint64_t n = sequence_count_;
  if (n == 0) return false;
  const int shift = dtype_ == TokenDtype::kUInt16 ? 1 : 2;  // log2 of the item size.
  uint32_t lengths = LoadLe<uint32_t>(lengths_);
  uint64_t pointers = LoadLe<uint64_t>(pointers_);
  uint64_t mismatch = pointers;  // pointer[0] must be 0.
  for (uint64_t i = 1; i < n; ++i) {
    const uint32_t len = LoadLe<uint32_t>(lengths_ + 4 * i);
    const uint64_t ptr = LoadLe<uint64_t>(pointers_ + 8 * i);
    const uint64_t prev_end = LoadLe<uint64_t>(pointers_ + 8 * (i - 1)) +
                              (uint64_t{LoadLe<uint32_t>(lengths_ + 4 * (i - 1))} << shift);
    lengths |= len;
    pointers |= ptr;
    mismatch |= ptr ^ prev_end;
  }
  return (lengths >> 31) != 0 || (pointers >> 63) != 0 || mismatch != 0;
}

// As AnyBadSequence, for the document index: it starts at 0, never falls
// and stays at most the sequence count (< 2^60). With every entry below
// 2^63, an entry below its predecessor or above the count makes one of the
// differences negative, so the top bit of the OR says it all.
bool IdxView::AnyBadDocument() const {
  const uint64_t seqs = sequence_count_;
  uint64_t bits = 0;
  for (uint64_t i = 1; i < document_count_; ++i) {
    const uint64_t d = LoadLe<uint64_t>(doc_idx_ + 8 * i);
    bits |= d | (d - LoadLe<uint64_t>(doc_idx_ + 8 * (i - 1))) | (seqs - d);
  }
  return LoadLe<uint64_t>(doc_idx_) != 0 || (bits >> 63) != 0;
}

// The first entry that breaks a rule, named: the slow path, run only once
// the fast scans found one.
Status IdxView::DescribeFirstBadEntry(std::string_view name) const {
  const uint64_t item = static_cast<uint64_t>(TokenDtypeSize(dtype_));
  uint64_t expect = 0;
  for (uint64_t i = 0; i < sequence_count_; ++i) {
    const std::string entry = "sequence " + std::to_string(i);
    if (length(i) < 0) {
      return Corrupt(name, entry + " has negative length " + std::to_string(length(i)));
    }
    if (pointer(i) < 0 || static_cast<uint64_t>(pointer(i)) != expect) {
      return Corrupt(name, entry + " has pointer " + std::to_string(pointer(i)) + ", expected " +
                               std::to_string(expect) + " (sequences are stored in order)");
    }
    expect += static_cast<uint64_t>(length(i)) * item;  // Below 2^63 + 2^33: no wrap.
  }
  const int64_t seqs = static_cast<int64_t>(sequence_count_);
  int64_t prev = 0;
  for (uint64_t i = 0; i < document_count_; ++i) {
    const int64_t d = document_index(i);
    if ((i == 0 && d != 0) || d < prev || d > seqs) {
      return Corrupt(name, "document index entry " + std::to_string(i) + " is " +
                               std::to_string(d) + " (entries rise from 0 to the " +
                               std::to_string(seqs) + " sequences)");
    }
    prev = d;
  }
  return Corrupt(name, "an entry is out of range");  // Not reached: the scans agree.
}

StatusOr<IdxView> ParseIdx(std::string_view data, std::string_view name) {
  TOKPACK_ASSIGN_OR_RETURN(IdxView v, IdxView::ParseHeader(data, name));
  if (v.AnyBadSequence() || v.AnyBadDocument()) return v.DescribeFirstBadEntry(name);
  const uint64_t n = v.sequence_count_, last_doc = v.document_count_ - 1;
  if (v.document_index(last_doc) != static_cast<int64_t>(n)) {
    return Corrupt(name, "document index entry " + std::to_string(last_doc) + " (the last) is " +
                             std::to_string(v.document_index(last_doc)) +
                             ", not the sequence count " + std::to_string(n));
  }
  if (n > 0) {
    // The last pointer is at most INT64_MAX and its length below 2^33
    // bytes: the end fits in 64 unsigned bits, and must fit in 63.
    const uint64_t item = static_cast<uint64_t>(TokenDtypeSize(v.dtype_));
    const uint64_t end =
        static_cast<uint64_t>(v.pointer(n - 1)) + static_cast<uint64_t>(v.length(n - 1)) * item;
    if (end > static_cast<uint64_t>(INT64_MAX)) {
      return Corrupt(name, "sequence " + std::to_string(n - 1) + " ends past 2^63 bytes");
    }
    v.tokens_ = end / item;
  }
  return v;
}

std::string StripShardExtension(const std::string& path) {
  for (const char* ext : {".bin", ".idx"}) {
    const size_t n = 4;
    if (path.size() > n && path.compare(path.size() - n, n, ext) == 0) {
      return path.substr(0, path.size() - n);
    }
  }
  return path;
}

std::string EncodeIdx(TokenDtype dtype, const std::vector<int32_t>& lengths) {
  const uint64_t n = lengths.size();
  std::string out;
  out.reserve(kIdxHeaderBytes + n * 20 + 8);
  out.append(kIdxMagic, sizeof(kIdxMagic));
  AppendLe<uint64_t>(&out, kIdxVersion);
  AppendLe<uint8_t>(&out, static_cast<uint8_t>(dtype));
  AppendLe<uint64_t>(&out, n);
  AppendLe<uint64_t>(&out, n + 1);
  for (int32_t len : lengths) AppendLe<int32_t>(&out, len);
  int64_t ptr = 0;
  for (int32_t len : lengths) {
    AppendLe<int64_t>(&out, ptr);
    ptr += static_cast<int64_t>(len) * TokenDtypeSize(dtype);
  }
  for (uint64_t i = 0; i <= n; ++i) AppendLe<int64_t>(&out, static_cast<int64_t>(i));
  return out;
}

}  // namespace tokpack
