// tokpack's stand-in for absl/log/check.h (see log.h here for why). CHECKs
// always run; DCHECKs run only without NDEBUG, as Abseil's do.
#ifndef TOKPACK_ABSL_COMPAT_LOG_CHECK_H_
#define TOKPACK_ABSL_COMPAT_LOG_CHECK_H_

#include "absl/log/log.h"

#ifndef CHECK
#define CHECK(condition) LOG_IF(FATAL, !(condition)) << "Check failed: " #condition " "
#define QCHECK(condition) CHECK(condition)
#define CHECK_EQ(a, b) CHECK((a) == (b))
#define CHECK_NE(a, b) CHECK((a) != (b))
#define CHECK_LT(a, b) CHECK((a) < (b))
#define CHECK_LE(a, b) CHECK((a) <= (b))
#define CHECK_GT(a, b) CHECK((a) > (b))
#define CHECK_GE(a, b) CHECK((a) >= (b))
#define CHECK_OK(expr) CHECK((expr).ok())
#define QCHECK_OK(expr) CHECK_OK(expr)
#ifdef NDEBUG
#define DCHECK(condition) LOG_IF(FATAL, false && (condition))
#else
#define DCHECK(condition) CHECK(condition)
#endif
#define DCHECK_EQ(a, b) DCHECK((a) == (b))
#define DCHECK_NE(a, b) DCHECK((a) != (b))
#define DCHECK_LT(a, b) DCHECK((a) < (b))
#define DCHECK_LE(a, b) DCHECK((a) <= (b))
#define DCHECK_GT(a, b) DCHECK((a) > (b))
#define DCHECK_GE(a, b) DCHECK((a) >= (b))
#endif

#endif  // TOKPACK_ABSL_COMPAT_LOG_CHECK_H_
