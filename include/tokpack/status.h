// Status and StatusOr<T>: the error model of tokpack's core.
//
// Every fallible operation returns a Status (or a StatusOr<T> that holds either
// a value or a non-OK Status). The core never throws; the Python binding turns
// a Status into an exception in one place. Both types are plain values: not
// thread-safe to mutate concurrently, safe to copy between threads.
#ifndef TOKPACK_STATUS_H_
#define TOKPACK_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace tokpack {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // Bad input from the caller or in a file's contents.
  kNotFound,            // A file, key or object does not exist.
  kAlreadyExists,       // Refusing to overwrite something that exists.
  kOutOfRange,          // An index or position past the end.
  kFailedPrecondition,  // The operation does not fit the current state.
  kDataLoss,            // Corrupt or truncated data (bad checksum, short file).
  kIoError,             // The operating system refused a read or write.
  kCancelled,           // Stopped on request (e.g. SIGINT).
  kUnavailable,         // A transient failure that may succeed on retry.
  kDeadlineExceeded,    // A wait with a time limit ran out; nothing changed.
  kResourceExhausted,   // Out of memory (host or device) or another resource.
  kInternal,            // A bug in tokpack.
};

// Returns a stable lower_snake_case name such as "invalid_argument".
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  // An OK status.
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid_argument: <message>", or "ok".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>". OK stays OK.
  Status WithContext(std::string_view context) const;

  // Explicitly drops the status where ignoring an error is correct.
  void IgnoreError() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string msg) {
  return Status(StatusCode::kInvalidArgument, std::move(msg));
}
inline Status NotFoundError(std::string msg) {
  return Status(StatusCode::kNotFound, std::move(msg));
}
inline Status AlreadyExistsError(std::string msg) {
  return Status(StatusCode::kAlreadyExists, std::move(msg));
}
inline Status OutOfRangeError(std::string msg) {
  return Status(StatusCode::kOutOfRange, std::move(msg));
}
inline Status FailedPreconditionError(std::string msg) {
  return Status(StatusCode::kFailedPrecondition, std::move(msg));
}
inline Status DataLossError(std::string msg) {
  return Status(StatusCode::kDataLoss, std::move(msg));
}
inline Status IoError(std::string msg) { return Status(StatusCode::kIoError, std::move(msg)); }
inline Status CancelledError(std::string msg) {
  return Status(StatusCode::kCancelled, std::move(msg));
}
inline Status InternalError(std::string msg) {
  return Status(StatusCode::kInternal, std::move(msg));
}

// Maps an errno value from a failed system call on `path` to a Status whose
// message names the path and the operation. The only errno mapper in tokpack.
Status ErrnoToStatus(int err, std::string_view operation, std::string_view path);

// Holds a T or a non-OK Status. Accessing the value of a non-OK StatusOr is a
// programming error (asserts in debug builds).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : status_(status) {  // NOLINT: implicit
    assert(!status_.ok() && "StatusOr built from an OK Status");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace tokpack

// Evaluates `expr` (a Status); returns it from the enclosing function if not OK.
#define TOKPACK_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::tokpack::Status tokpack_status_ = (expr);        \
    if (!tokpack_status_.ok()) return tokpack_status_; \
  } while (0)

#define TOKPACK_CONCAT_INNER_(a, b) a##b
#define TOKPACK_CONCAT_(a, b) TOKPACK_CONCAT_INNER_(a, b)

// `lhs = value of rexpr` (a StatusOr), or returns its Status if not OK.
#define TOKPACK_ASSIGN_OR_RETURN(lhs, rexpr) \
  TOKPACK_ASSIGN_OR_RETURN_IMPL_(TOKPACK_CONCAT_(tokpack_or_, __LINE__), lhs, rexpr)
#define TOKPACK_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                   \
  if (!tmp.ok()) return tmp.status();                   \
  lhs = std::move(tmp).value()

#endif  // TOKPACK_STATUS_H_
