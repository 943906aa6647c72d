#include "tokpack/status.h"

#include <cerrno>
#include <cstring>

namespace tokpack {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kAlreadyExists:
      return "already_exists";
    case StatusCode::kOutOfRange:
      return "out_of_range";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kDataLoss:
      return "data_loss";
    case StatusCode::kIoError:
      return "io_error";
    case StatusCode::kCancelled:
      return "cancelled";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kDeadlineExceeded:
      return "deadline_exceeded";
    case StatusCode::kResourceExhausted:
      return "resource_exhausted";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += message_;
  return Status(code_, std::move(msg));
}

Status ErrnoToStatus(int err, std::string_view operation, std::string_view path) {
  std::string msg;
  msg.reserve(operation.size() + path.size() + 64);
  msg += "cannot ";
  msg += operation;
  msg += " '";
  msg += path;
  msg += "': ";
  msg += std::strerror(err);
  StatusCode code;
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      code = StatusCode::kNotFound;
      break;
    case EEXIST:
    case ENOTEMPTY:
      code = StatusCode::kAlreadyExists;
      break;
    case EINVAL:
    case EISDIR:
    case ENAMETOOLONG:
    case ELOOP:
      code = StatusCode::kInvalidArgument;
      break;
    case EACCES:
    case EPERM:
    case EROFS:
      code = StatusCode::kFailedPrecondition;
      break;
    case EAGAIN:
    case EINTR:
    case EBUSY:
      code = StatusCode::kUnavailable;
      break;
    default:  // ENOSPC, EDQUOT, EFBIG, EIO, ...
      code = StatusCode::kIoError;
      break;
  }
  return Status(code, std::move(msg));
}

}  // namespace tokpack
