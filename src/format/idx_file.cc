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

StatusOr<IdxView> ParseIdxHeader(std::string_view data, std::string_view name) {
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
  if (v.sequence_count_ > 0) {
    const uint64_t last = v.sequence_count_ - 1;
    const int64_t end =
        v.pointer(last) + static_cast<int64_t>(v.length(last)) * TokenDtypeSize(v.dtype_);
    if (v.pointer(last) < 0 || v.length(last) < 0 || end % TokenDtypeSize(v.dtype_) != 0) {
      return Corrupt(name, "last sequence has pointer " + std::to_string(v.pointer(last)) +
                               " and length " + std::to_string(v.length(last)));
    }
    v.tokens_ = static_cast<uint64_t>(end / TokenDtypeSize(v.dtype_));
  }
  return v;
}

StatusOr<IdxView> ParseIdx(std::string_view data, std::string_view name) {
  TOKPACK_ASSIGN_OR_RETURN(IdxView v, ParseIdxHeader(data, name));
  v.tokens_ = 0;
  const int64_t item = TokenDtypeSize(v.dtype_);
  int64_t expect = 0;
  for (uint64_t i = 0; i < v.sequence_count_; ++i) {
    int32_t len = v.length(i);
    if (len < 0) return Corrupt(name, "negative length at sequence " + std::to_string(i));
    if (v.pointer(i) != expect) {
      return Corrupt(name, "pointer of sequence " + std::to_string(i) + " is " +
                               std::to_string(v.pointer(i)) + ", expected " +
                               std::to_string(expect));
    }
    expect += static_cast<int64_t>(len) * item;
    v.tokens_ += static_cast<uint64_t>(len);
  }
  const int64_t seqs = static_cast<int64_t>(v.sequence_count_);
  int64_t prev = 0;
  for (uint64_t i = 0; i < v.document_count_; ++i) {
    int64_t d = v.document_index(i);
    // Non-decreasing: Megatron writes a repeated entry for an empty document.
    bool bad =
        (i == 0 && d != 0) || d < prev || d > seqs || (i + 1 == v.document_count_ && d != seqs);
    if (bad) {
      return Corrupt(name, "document index " + std::to_string(i) + " is " + std::to_string(d) +
                               " (must rise from 0 to " + std::to_string(seqs) + ")");
    }
    prev = d;
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
