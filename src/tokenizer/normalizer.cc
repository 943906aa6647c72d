#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>

namespace tokpack {
namespace {

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

void AppendUtf8(utf8proc_int32_t cp, std::string* out) {
  utf8proc_uint8_t buf[4];
  utf8proc_ssize_t n = utf8proc_encode_char(cp, buf);
  out->append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

// Appends the normalized form of `in` to *out.
Status AppendUnicodeForm(Normalizer::Form form, std::string_view in, std::string* out) {
  // ASCII is invariant under all four forms; most text is, so skip utf8proc.
  if (IsAscii(in)) {
    out->append(in);
    return Status::Ok();
  }
  int options = UTF8PROC_STABLE;
  switch (form) {
    case Normalizer::Form::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case Normalizer::Form::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case Normalizer::Form::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case Normalizer::Form::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* result = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(in.data()),
                                    static_cast<utf8proc_ssize_t>(in.size()), &result,
                                    static_cast<utf8proc_option_t>(options));
  if (n < 0) {
    return InternalError(std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
  }
  out->append(reinterpret_cast<const char*>(result), static_cast<size_t>(n));
  std::free(result);
  return Status::Ok();
}

// utf8proc_map holds 4 bytes per code point of its input, so a long text is
// normalized in pieces of about this many bytes, each cut before an ASCII
// character: ASCII is a starter that never decomposes and is never the
// second character of a composition, so no form looks across such a cut.
constexpr size_t kFormPieceBytes = size_t{1} << 20;
// The step buffer of Apply() is freed after use once larger than this.
constexpr size_t kKeepTmpBytes = size_t{8} << 20;

Status UnicodeForm(Normalizer::Form form, std::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size());  // The usual size: no growth by copying.
  size_t pos = 0;
  while (pos < in.size()) {
    size_t end = pos + kFormPieceBytes;
    if (end >= in.size()) {
      end = in.size();
    } else {
      while (end < in.size() && static_cast<unsigned char>(in[end]) >= 0x80) ++end;
    }
    TOKPACK_RETURN_IF_ERROR(AppendUnicodeForm(form, in.substr(pos, end - pos), out));
    pos = end;
  }
  return Status::Ok();
}

void Lowercase(std::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size());
  auto p = reinterpret_cast<const utf8proc_uint8_t*>(in.data());
  size_t i = 0;
  while (i < in.size()) {
    auto c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      *out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
      ++i;
      continue;
    }
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n = utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(in.size() - i), &cp);
    if (n <= 0) {  // Unreachable for valid UTF-8; keep the byte.
      *out += in[i++];
      continue;
    }
    i += static_cast<size_t>(n);
    if (cp == 0x130) {
      // The one unconditional multi-character lowercase mapping
      // (SpecialCasing.txt), which Rust's to_lowercase applies.
      *out += "i\xCC\x87";
      continue;
    }
    AppendUtf8(utf8proc_tolower(cp), out);
  }
}

}  // namespace

Status Normalizer::ApplyStep(const Step& step, std::string_view in, std::string* out) const {
  switch (step.kind) {
    case Kind::kForm:
      return UnicodeForm(step.form, in, out);
    case Kind::kLowercase:
      Lowercase(in, out);
      return Status::Ok();
    case Kind::kPrepend:
      out->clear();
      if (!in.empty()) *out += step.text;
      out->append(in);
      return Status::Ok();
    case Kind::kReplace: {
      out->clear();
      size_t done = 0;
      TOKPACK_RETURN_IF_ERROR(step.pattern->ForEachMatch(in, [&](size_t s, size_t e) {
        out->append(in.substr(done, s - done));
        *out += step.text;
        done = e;
      }));
      out->append(in.substr(done));
      return Status::Ok();
    }
  }
  return InternalError("unknown normalizer step");
}

Status Normalizer::Apply(std::string_view in, std::string* out) const {
  if (steps_.empty()) {
    out->assign(in);
    return Status::Ok();
  }
  thread_local std::string tmp;
  TOKPACK_RETURN_IF_ERROR(ApplyStep(steps_[0], in, out));
  for (size_t i = 1; i < steps_.size(); ++i) {
    tmp.swap(*out);
    TOKPACK_RETURN_IF_ERROR(ApplyStep(steps_[i], tmp, out));
  }
  // A huge text grew it: do not hold that for the thread's lifetime.
  if (tmp.capacity() > kKeepTmpBytes) std::string().swap(tmp);
  return Status::Ok();
}

}  // namespace tokpack
