// tokpack's stand-in for Abseil's StatusBuilder, which sentencepiece 0.2.3
// uses and Debian 12's Abseil (20220623) does not have: a status whose
// message is extended with <<, converting to absl::Status or StatusOr<T>.
#ifndef TOKPACK_ABSL_COMPAT_STATUS_STATUS_BUILDER_H_
#define TOKPACK_ABSL_COMPAT_STATUS_STATUS_BUILDER_H_

#include <sstream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace absl {

class StatusBuilder {
 public:
  explicit StatusBuilder(StatusCode code) : code_(code) {}
  explicit StatusBuilder(const Status& status) : code_(status.code()), message_(status.message()) {}

  template <typename T>
  StatusBuilder& operator<<(const T& value) {
    std::ostringstream out;
    out << value;
    if (!appended_ && !message_.empty()) message_ += "; ";
    appended_ = true;
    message_ += out.str();
    return *this;
  }

  operator Status() const {  // NOLINT(google-explicit-constructor): as Abseil's.
    return code_ == StatusCode::kOk ? OkStatus() : Status(code_, message_);
  }
  template <typename T>
  operator StatusOr<T>() const {  // NOLINT(google-explicit-constructor)
    return StatusOr<T>(Status(*this));
  }

 private:
  StatusCode code_;
  std::string message_;
  bool appended_ = false;
};

}  // namespace absl

#endif  // TOKPACK_ABSL_COMPAT_STATUS_STATUS_BUILDER_H_
