// tokpack's stand-in for absl/log/globals.h (see log.h here for why): the
// log thresholds, which the stand-in LOG does not filter on, are accepted and
// ignored.
#ifndef TOKPACK_ABSL_COMPAT_LOG_GLOBALS_H_
#define TOKPACK_ABSL_COMPAT_LOG_GLOBALS_H_

#include "absl/base/config.h"
#include "absl/base/log_severity.h"

namespace absl {
ABSL_NAMESPACE_BEGIN
inline void SetMinLogLevel(LogSeverityAtLeast) {}
inline void SetStderrThreshold(LogSeverityAtLeast) {}
ABSL_NAMESPACE_END
}  // namespace absl

#endif  // TOKPACK_ABSL_COMPAT_LOG_GLOBALS_H_
