// The arrays tokpack._core hands to Python: Array (DLPack and the buffer
// protocol over memory it keeps alive) and ForkSafe, which keeps a forked
// child from running the destructors of objects its parent's threads own
// (see tokpack_module.cc). Called with the GIL held.
#ifndef TOKPACK_BINDINGS_PY_ARRAY_H_
#define TOKPACK_BINDINGS_PY_ARRAY_H_

#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "tokpack/loader.h"

namespace tokpack {

// How many times this process has been forked into a child (a
// pthread_atfork handler counts), so that checking whether an object was
// made in another process costs a load, not a getpid() system call.
uint64_t ForkGeneration();

// Holds a shared_ptr that must not be released in a forked child.
template <typename T>
class ForkSafe {
 public:
  explicit ForkSafe(std::shared_ptr<T> p) : p_(std::move(p)), generation_(ForkGeneration()) {}
  ForkSafe(const ForkSafe&) = delete;
  ForkSafe& operator=(const ForkSafe&) = delete;
  ~ForkSafe() {
    if (ForkGeneration() != generation_)
      new std::shared_ptr<T>(std::move(p_));  // Leak: see the top.
  }
  const std::shared_ptr<T>& get() const { return p_; }

 private:
  std::shared_ptr<T> p_;
  uint64_t generation_;
};

// A dense row-major array in memory owned by `owner`.
struct Array {
  std::shared_ptr<ForkSafe<const void>> owner;
  const void* data = nullptr;
  std::vector<int64_t> shape;
  DLDataType dtype{};
  bool readonly = false;  // Backed by a read-only mapping.
  // GPU arrays: the batch that orders the consumer's stream (UseOn).
  std::shared_ptr<const Batch> device_batch;
  int device_id() const { return device_batch ? device_batch->device().index : 0; }
  int device_type() const { return device_batch ? int{kDLCUDA} : int{kDLCPU}; }

  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t nbytes() const { return static_cast<size_t>(size()) * dtype.bits / 8; }
};

// The DLPack type of code 'i' (signed) or 'u' (unsigned) and `bits`.
DLDataType DType(char code, int bits);

// __dlpack__(stream=None, max_version=None, dl_device=None, copy=None):
// always the unversioned capsule, which every consumer accepts.
pybind11::object ExportDlpack(const Array& a, const pybind11::object& stream,
                              const pybind11::object& max_version,
                              const pybind11::object& dl_device, const pybind11::object& copy);

// An array of a batch, kept alive by `owner`.
Array BatchArray(const std::shared_ptr<ForkSafe<const void>>& owner, const void* data,
                 std::vector<int64_t> shape, DLDataType dtype);

}  // namespace tokpack

#endif  // TOKPACK_BINDINGS_PY_ARRAY_H_
