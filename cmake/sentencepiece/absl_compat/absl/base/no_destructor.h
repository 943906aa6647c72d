// tokpack's stand-in for absl/base/no_destructor.h (Abseil 20240116; Debian
// 12 has 20220623): a function-local static that is never destroyed, so
// that no thread can see it torn down at exit.
#ifndef TOKPACK_ABSL_COMPAT_BASE_NO_DESTRUCTOR_H_
#define TOKPACK_ABSL_COMPAT_BASE_NO_DESTRUCTOR_H_

#include <new>
#include <utility>

namespace absl {

template <typename T>
class NoDestructor {
 public:
  template <typename... Args>
  explicit NoDestructor(Args&&... args) {
    new (&storage_) T(std::forward<Args>(args)...);
  }
  NoDestructor(const NoDestructor&) = delete;
  NoDestructor& operator=(const NoDestructor&) = delete;

  T& operator*() { return *get(); }
  const T& operator*() const { return *get(); }
  T* operator->() { return get(); }
  const T* operator->() const { return get(); }
  T* get() { return std::launder(reinterpret_cast<T*>(&storage_)); }
  const T* get() const { return std::launder(reinterpret_cast<const T*>(&storage_)); }

 private:
  alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace absl

#endif  // TOKPACK_ABSL_COMPAT_BASE_NO_DESTRUCTOR_H_
