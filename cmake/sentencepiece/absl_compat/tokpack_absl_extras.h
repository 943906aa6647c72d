// Force-included (-include) into the sentencepiece sources that
// cmake/sentencepiece.cmake builds: the few Abseil names that sentencepiece
// 0.2.3 uses from headers that Debian 12's Abseil (20220623) has, but in
// versions that do not define them yet, and a MutexLock that takes a
// reference. Skipped where Abseil has them.
#ifndef TOKPACK_ABSL_COMPAT_EXTRAS_H_
#define TOKPACK_ABSL_COMPAT_EXTRAS_H_

#include <cstring>
#include <string>

#include "absl/base/config.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

#if defined(ABSL_LTS_RELEASE_VERSION) && ABSL_LTS_RELEASE_VERSION < 20230125
namespace absl {
ABSL_NAMESPACE_BEGIN

// Newer Abseil's MutexLock also takes a reference, which sentencepiece uses.
// mutex.h is included above (once, by its guard), so the macro below renames
// only the uses that follow, not Abseil's own class.
class TokpackMutexLock {
 public:
  explicit TokpackMutexLock(Mutex* mu) : lock_(mu) {}
  explicit TokpackMutexLock(Mutex& mu) : lock_(&mu) {}
  TokpackMutexLock(const TokpackMutexLock&) = delete;
  TokpackMutexLock& operator=(const TokpackMutexLock&) = delete;

 private:
  MutexLock lock_;
};

// absl/numeric/bits.h's (C++20 std::endian before C++20).
enum class endian {
  little = __ORDER_LITTLE_ENDIAN__,
  big = __ORDER_BIG_ENDIAN__,
  native = __BYTE_ORDER__,
};

// absl/status/status.h's, as Abseil defines it: the code for errno and a
// message that ends with strerror's text.
inline Status ErrnoToStatus(int error_number, string_view message) {
  return Status(ErrnoToStatusCode(error_number),
                StrCat(message, ": ", std::strerror(error_number)));
}

ABSL_NAMESPACE_END
}  // namespace absl
#define MutexLock TokpackMutexLock
#endif

#endif  // TOKPACK_ABSL_COMPAT_EXTRAS_H_
