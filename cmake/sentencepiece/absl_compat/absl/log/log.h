// tokpack's stand-in for absl/log/log.h, which Debian 12's Abseil (20220623)
// predates. Only the sentencepiece sources built by cmake/sentencepiece.cmake
// see it (it is searched after the real Abseil headers, so a newer Abseil's
// own header wins). LOG(severity) << ... writes one line to stderr; FATAL
// aborts after it.
#ifndef TOKPACK_ABSL_COMPAT_LOG_LOG_H_
#define TOKPACK_ABSL_COMPAT_LOG_LOG_H_

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace tokpack_absl_compat {

class LogLine {
 public:
  LogLine(const char* severity, bool fatal, const char* file, int line) : fatal_(fatal) {
    stream_ << severity << ' ' << file << ':' << line << "] ";
  }
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;
  ~LogLine() {
    stream_ << '\n';
    std::cerr << stream_.str();
    if (fatal_) std::abort();
  }
  std::ostream& stream() { return stream_; }

 private:
  bool fatal_;
  std::ostringstream stream_;
};

// Swallows a stream expression so that a disabled LOG/CHECK is a void statement.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace tokpack_absl_compat

#define TOKPACK_ABSL_LOG_INFO "I", false
#define TOKPACK_ABSL_LOG_WARNING "W", false
#define TOKPACK_ABSL_LOG_ERROR "E", false
#define TOKPACK_ABSL_LOG_FATAL "F", true
#define TOKPACK_ABSL_LOG_QFATAL "F", true

#ifndef LOG
#define LOG(severity) \
  ::tokpack_absl_compat::LogLine(TOKPACK_ABSL_LOG_##severity, __FILE__, __LINE__).stream()
#endif
#ifndef LOG_IF
#define LOG_IF(severity, condition) \
  !(condition) ? (void)0 : ::tokpack_absl_compat::Voidify() & LOG(severity)
#endif
#ifndef VLOG
#define VLOG(level) LOG_IF(INFO, false)
#endif

#endif  // TOKPACK_ABSL_COMPAT_LOG_LOG_H_
