// CancelFlag: the one way to stop long work from outside (a signal handler,
// another thread, Ctrl-C in Python): a shared flag that, once true, makes
// whatever was given it fail as Cancelled. BuildOptions, PushOptions and
// StorageOptions take it. The flag is an atomic: thread-safe.
#ifndef TOKPACK_CANCEL_H_
#define TOKPACK_CANCEL_H_

#include <atomic>
#include <memory>

namespace tokpack {

// Null: never cancelled.
using CancelFlag = std::shared_ptr<const std::atomic<bool>>;

// Whether `flag` has been set.
inline bool IsCancelled(const CancelFlag& flag) {
  return flag != nullptr && flag->load(std::memory_order_relaxed);
}

// A CancelFlag over `*flag`, which it does not own: for a flag with static
// storage (a signal handler's) or one that outlives every user.
inline CancelFlag UnownedCancelFlag(const std::atomic<bool>* flag) {
  return CancelFlag(std::shared_ptr<void>(), flag);
}

}  // namespace tokpack

#endif  // TOKPACK_CANCEL_H_
