#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

#include "base/quote.h"

namespace tokpack {
namespace {

// The first construct of `p` that only PCRE2 has, described, or "" if none:
// \C (one byte, even inside a UTF-8 character), (*VERB) and (*OPTION) items
// such as (*UTF), (*CR) or (*LIMIT_MATCH=1), and callouts (?C...). Escapes,
// \Q...\E quotes and classes are skipped, where these are literal text.
std::string Pcre2OnlySyntax(std::string_view p) {
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char d = p[++i];
      if (d == 'C') return "\\C (a single byte, even inside a UTF-8 character)";
      if (d == 'Q') {
        const size_t end = p.find("\\E", i + 1);
        i = end == std::string_view::npos ? p.size() : end + 1;
      }
      continue;
    }
    if (in_class) {
      if (c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
        const size_t end = p.find(":]", i + 2);  // A POSIX class such as [:alpha:].
        if (end != std::string_view::npos) i = end + 1;
      } else if (c == ']') {
        in_class = false;
      }
      continue;
    }
    if (c == '[') {
      in_class = true;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < p.size() && p[i + 1] == '^') ++i;
      if (i + 1 < p.size() && p[i + 1] == ']') ++i;
      continue;
    }
    if (c != '(' || i + 1 >= p.size()) continue;
    const size_t close = std::min(p.find(')', i), p.size() - 1);
    const std::string item(p.substr(i, close + 1 - i));
    if (p[i + 1] == '*') return "the verb " + Quoted(item, 40);
    if (p[i + 1] == '?' && i + 2 < p.size() && p[i + 2] == 'C') {
      return "the callout " + Quoted(item, 40);
    }
  }
  return "";
}

// Unicode's White_Space has U+0085 (NEXT LINE); PCRE2's \s under UCP does not.
// Inside a class the addition is spliced in; outside, \s becomes a class.
std::string TranslatePattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char d = p[++i];
      if (d == 's') {
        out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (d == 'S' && !in_class) {
        out += "[^\\s\\x{85}]";
      } else if (d == 'u' && i + 4 < p.size() &&
                 p.substr(i + 1, 4).find_first_not_of("0123456789abcdefABCDEF") ==
                     std::string_view::npos) {
        // Oniguruma's \uHHHH (tokenizers' patterns use it); PCRE2 spells it \x{HHHH}.
        out += "\\x{";
        out.append(p.substr(i + 1, 4));
        out += '}';
        i += 4;
      } else {
        out += c;
        out += d;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      size_t end = p.find(":]", i + 2);  // POSIX class such as [:alpha:].
      if (end != std::string_view::npos) {
        out.append(p.substr(i, end + 2 - i));
        i = end + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

// The interpreter's backtracking memory (PCRE2 without JIT), as much as the
// JIT stack may grow to.
constexpr uint32_t kHeapLimitKiB = 256 * 1024;

// Per-thread match state, shared by every Regex: match data with room for
// the whole match only (lookarounds need no captures), and a JIT stack large
// enough for 10 MB subjects.
struct ThreadMatchState {
  ThreadMatchState()
      : data(pcre2_match_data_create(1, nullptr)),
        context(pcre2_match_context_create(nullptr)),
        jit_stack(pcre2_jit_stack_create(64 * 1024, 256 * 1024 * 1024, nullptr)) {
    if (jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
    pcre2_set_heap_limit(context, kHeapLimitKiB);
  }
  ~ThreadMatchState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    if (jit_stack != nullptr) pcre2_jit_stack_free(jit_stack);
  }
  pcre2_match_data* data;
  pcre2_match_context* context;
  pcre2_jit_stack* jit_stack;
};

ThreadMatchState& MatchState() {
  thread_local ThreadMatchState state;
  return state;
}

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof(buf)) < 0) return "error " + std::to_string(code);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

StatusOr<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern, RegexDialect dialect,
                                                RegexEngine engine) {
  if (const std::string only = Pcre2OnlySyntax(pattern); !only.empty()) {
    return InvalidArgumentError("regex " + Quoted(pattern) + " uses " + only +
                                ", which only PCRE2 has: tokenizers' Oniguruma and tiktoken's "
                                "fancy-regex refuse it");
  }
  std::unique_ptr<Regex> re(new Regex());
  re->pattern_ = pattern;
  re->translated_ = TranslatePattern(pattern);
  pcre2_compile_context* cc = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
  uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C;
  options |= dialect == RegexDialect::kOniguruma ? PCRE2_MULTILINE : PCRE2_DOLLAR_ENDONLY;
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re->translated_.data()),
                                   re->translated_.size(), options, &error, &offset, cc);
  pcre2_compile_context_free(cc);
  if (code == nullptr) {
    return InvalidArgumentError("regex " + Quoted(pattern) +
                                " does not compile: " + Pcre2Message(error) + " (at offset " +
                                std::to_string(offset) + " of " + Quoted(re->translated_) + ")");
  }
  re->code_ = code;
  // Without JIT (e.g. on a platform PCRE2's JIT does not support) matching
  // is slower but gives the same matches.
  re->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  if (engine == RegexEngine::kAuto) re->scanner_ = SplitScanner::ForPattern(pattern, dialect);
  return re;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

StatusOr<bool> Regex::Search(std::string_view subject, size_t start, size_t* match_start,
                             size_t* match_end) const {
  ThreadMatchState& st = MatchState();
  const uint32_t limit = RegexMatchLimit(subject.size());
  pcre2_set_match_limit(st.context, limit);
  pcre2_set_depth_limit(st.context, limit);
  auto* code = static_cast<const pcre2_code*>(code_);
  auto subj = reinterpret_cast<PCRE2_SPTR>(subject.data());
  int rc = jit_ ? pcre2_jit_match(code, subj, subject.size(), start, 0, st.data, st.context)
                : pcre2_match(code, subj, subject.size(), start, PCRE2_NO_UTF_CHECK, st.data,
                              st.context);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT) {
    return Status(StatusCode::kResourceExhausted,
                  "regex " + Quoted(pattern_) + " gave up on a " + std::to_string(subject.size()) +
                      "-byte text after " + std::to_string(limit) +
                      " backtracking steps at one position (" + Pcre2Message(rc) +
                      "); tokenizers' Oniguruma stops such patterns alike, with its "
                      "retry-limit-in-match");
  }
  if (rc < 0) {
    return InternalError("regex " + Quoted(pattern_) + " failed on a " +
                         std::to_string(subject.size()) + "-byte text: " + Pcre2Message(rc));
  }
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
  *match_start = ov[0];
  *match_end = ov[1] < ov[0] ? ov[0] : ov[1];  // \K can put the start past the end.
  return true;
}

uint32_t RegexMatchLimit(size_t subject_bytes) {
  const uint64_t limit = kRegexMatchLimit + uint64_t{kRegexStepsPerByte} * subject_bytes;
  return static_cast<uint32_t>(std::min<uint64_t>(limit, UINT32_MAX));
}

std::string Regex::Escape(std::string_view literal) {
  std::string out;
  out.reserve(literal.size() * 2);
  for (char c : literal) {
    auto u = static_cast<unsigned char>(c);
    bool word = (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') ||
                u == '_' || u >= 0x80;
    // A backslash before any other ASCII character makes it literal in PCRE2.
    if (!word) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace tokpack
