// tokpack's stand-in for absl/status/status_macros.h (see status_builder.h
// here for why): ABSL_RETURN_IF_ERROR returns a failed status from the
// enclosing function, with anything streamed after it added to the message.
#ifndef TOKPACK_ABSL_COMPAT_STATUS_STATUS_MACROS_H_
#define TOKPACK_ABSL_COMPAT_STATUS_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/status_builder.h"

#ifndef ABSL_RETURN_IF_ERROR
#define ABSL_RETURN_IF_ERROR(expr)                                                     \
  if (const ::absl::Status tokpack_absl_status_ = (expr); tokpack_absl_status_.ok()) { \
  } else /* NOLINT */                                                                  \
    return ::absl::StatusBuilder(tokpack_absl_status_)
#endif

#endif  // TOKPACK_ABSL_COMPAT_STATUS_STATUS_MACROS_H_
