#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "base/utf8.h"

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

// utf8proc_map holds 4 bytes per code point of its result, so a long text is
// normalized in pieces of about this many bytes, each cut before a character
// no form looks across (SafeCutBefore).
constexpr size_t kFormPieceBytes = size_t{1} << 20;
// The step buffer of Apply() is freed after use once larger than this.
constexpr size_t kKeepTmpBytes = size_t{8} << 20;

// Code points that the composition of NFC and NFKC may join to a character
// before them: those after the first in any canonical decomposition (a
// superset of the second halves of composition pairs), and Hangul's medial
// vowels and final consonants, which compose algorithmically.
const std::vector<bool>& ComposesBackward() {
  static const std::vector<bool> set = [] {
    std::vector<bool> out(0x110000, false);
    utf8proc_int32_t parts[8];
    for (utf8proc_int32_t cp = 0; cp < 0x110000; ++cp) {
      const utf8proc_property_t* p = utf8proc_get_property(cp);
      if (p->decomp_seqindex == UINT16_MAX || p->decomp_type != 0) continue;  // Canonical only.
      utf8proc_int32_t boundclass = 0;
      const utf8proc_ssize_t n =
          utf8proc_decompose_char(cp, parts, 8, UTF8PROC_DECOMPOSE, &boundclass);
      for (utf8proc_ssize_t k = 1; k < n && k < 8; ++k) out[parts[k]] = true;
    }
    for (utf8proc_int32_t cp = 0x1161; cp <= 0x1175; ++cp) out[cp] = true;
    for (utf8proc_int32_t cp = 0x11A8; cp <= 0x11C2; ++cp) out[cp] = true;
    return out;
  }();
  return set;
}

// Whether every form of a text cut right before `cp` is the forms of the
// two parts joined. True where cp's canonical and compatibility
// decompositions both start with a starter (combining class 0) that composes
// with nothing before it: reordering stops at a starter, and composition
// joins nothing across one that does not compose backward. ASCII is such a
// starter.
bool SafeCutBefore(utf8proc_int32_t cp) {
  if (cp < 0x80) return true;
  const int decompositions[] = {UTF8PROC_DECOMPOSE, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT};
  for (int options : decompositions) {
    utf8proc_int32_t parts[32];
    utf8proc_int32_t boundclass = 0;
    const utf8proc_ssize_t n = utf8proc_decompose_char(
        cp, parts, 32, static_cast<utf8proc_option_t>(options), &boundclass);
    const utf8proc_int32_t first = n > 0 ? parts[0] : cp;
    if (utf8proc_get_property(first)->combining_class != 0 || ComposesBackward()[first]) {
      return false;
    }
  }
  return true;
}

// Where a piece of `in` that starts at `pos` ends: kFormPieceBytes on, at the
// next safe cut, else at the end.
size_t FormPieceEnd(std::string_view in, size_t pos) {
  size_t end = pos + kFormPieceBytes;
  if (end >= in.size()) return in.size();
  while (end < in.size() && IsUtf8Continuation(in[end])) ++end;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(in.data());
  while (end < in.size()) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n =
        utf8proc_iterate(p + end, static_cast<utf8proc_ssize_t>(in.size() - end), &cp);
    if (n <= 0 || SafeCutBefore(cp)) break;
    end += static_cast<size_t>(n);
  }
  return end;
}

Status TooLong(const std::string& step, size_t text_bytes, size_t cap) {
  return Status(StatusCode::kResourceExhausted,
                "normalizer step " + step + " made more than " + std::to_string(cap) +
                    " bytes of a " + std::to_string(text_bytes) + "-byte text, past the cap of " +
                    std::to_string(kMaxNormalizedGrowth) + " times the text plus " +
                    std::to_string(kNormalizedSlackBytes >> 10) + " KiB");
}

// Sets *over, with *out cut short, once it passes `cap` bytes.
Status UnicodeForm(Normalizer::Form form, std::string_view in, size_t cap, std::string* out,
                   bool* over) {
  out->clear();
  out->reserve(std::min(in.size(), cap));  // The usual size: no growth by copying.
  for (size_t pos = 0; pos < in.size();) {
    const size_t end = FormPieceEnd(in, pos);
    TOKPACK_RETURN_IF_ERROR(AppendUnicodeForm(form, in.substr(pos, end - pos), out));
    if (out->size() > cap) {
      *over = true;
      return Status::Ok();
    }
    pos = end;
  }
  return Status::Ok();
}

// False, with *out cut short, once it passes `cap` bytes.
bool Lowercase(std::string_view in, size_t cap, std::string* out) {
  out->clear();
  out->reserve(std::min(in.size(), cap));
  auto p = reinterpret_cast<const utf8proc_uint8_t*>(in.data());
  size_t i = 0;
  while (i < in.size()) {
    if (out->size() > cap) return false;
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
  return out->size() <= cap;
}

}  // namespace

Status Normalizer::ApplyStep(const Step& step, std::string_view in, size_t cap, std::string* out,
                             bool* over_cap) const {
  bool over = false;
  switch (step.kind) {
    case Kind::kForm:
      TOKPACK_RETURN_IF_ERROR(UnicodeForm(step.form, in, cap, out, &over));
      break;
    case Kind::kLowercase:
      over = !Lowercase(in, cap, out);
      break;
    case Kind::kPrepend:
      over = in.size() + step.text.size() > cap;
      if (over) break;
      out->clear();
      if (!in.empty()) *out += step.text;
      out->append(in);
      break;
    case Kind::kReplace: {
      out->clear();
      size_t done = 0;
      TOKPACK_RETURN_IF_ERROR(step.pattern->ForEachMatch(in, [&](size_t s, size_t e) {
        over = over || out->size() + (s - done) + step.text.size() > cap;
        if (over) return;
        out->append(in.substr(done, s - done));
        *out += step.text;
        done = e;
      }));
      over = over || out->size() + (in.size() - done) > cap;
      if (!over) out->append(in.substr(done));
      break;
    }
  }
  *over_cap = over;
  return Status::Ok();
}

Status Normalizer::Apply(std::string_view in, std::string* out) const {
  if (steps_.empty()) {
    out->assign(in);
    return Status::Ok();
  }
  const size_t cap = kMaxNormalizedGrowth * in.size() + kNormalizedSlackBytes;
  thread_local std::string tmp;
  bool over = false;
  Status status = ApplyStep(steps_[0], in, cap, out, &over);
  size_t step = 0;
  while (status.ok() && !over && ++step < steps_.size()) {
    tmp.swap(*out);
    status = ApplyStep(steps_[step], tmp, cap, out, &over);
  }
  if (status.ok() && over) status = TooLong(steps_[step].name, in.size(), cap);
  // A huge text grew them: do not hold that for the thread's lifetime.
  if (tmp.capacity() > kKeepTmpBytes) std::string().swap(tmp);
  if (!status.ok() && out->capacity() > kKeepTmpBytes) std::string().swap(*out);
  return status;
}

}  // namespace tokpack
