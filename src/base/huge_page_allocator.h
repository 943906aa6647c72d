// HugePageAllocator: a std::allocator for large tables read at random (the
// tokenizer's vocabulary and merge tables, the piece caches). Blocks of 1 MiB
// or more are aligned to 2 MiB and marked MADV_HUGEPAGE, so that the kernel
// backs them with transparent huge pages where it allows them (Debian's
// default is "madvise"): a lookup then costs a cache miss, not also a TLB
// miss and a page walk. Smaller blocks, and kernels that refuse, get ordinary
// pages; the contents are the same either way. Stateless; thread-safe.
#ifndef TOKPACK_SRC_BASE_HUGE_PAGE_ALLOCATOR_H_
#define TOKPACK_SRC_BASE_HUGE_PAGE_ALLOCATOR_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace tokpack {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Memory for `bytes`, huge-page backed where large enough; free with
// FreeHugePageBacked. Throws std::bad_alloc as operator new does.
inline void* AllocateHugePageBacked(size_t bytes) {
  if (bytes < kHugePageBytes / 2) {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
  if (p == nullptr) throw std::bad_alloc();
  madvise(p, rounded, MADV_HUGEPAGE);  // A hint: failure leaves ordinary pages.
  return p;
}

inline void FreeHugePageBacked(void* p) { std::free(p); }

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: allocators convert implicitly.
  T* allocate(size_t n) { return static_cast<T*>(AllocateHugePageBacked(n * sizeof(T))); }
  void deallocate(T* p, size_t) { FreeHugePageBacked(p); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const HugePageAllocator<U>&) const {
    return false;
  }
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_BASE_HUGE_PAGE_ALLOCATOR_H_
