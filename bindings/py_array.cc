#include "bindings/py_array.h"

#include <pthread.h>

#include <atomic>
#include <string>

#include "bindings/py_convert.h"
#include "tokpack/status.h"

namespace tokpack {

namespace py = pybind11;
using namespace py_convert;  // NOLINT: the module's own helpers.

namespace {

std::atomic<uint64_t> g_fork_generation{0};

}  // namespace

uint64_t ForkGeneration() { return g_fork_generation.load(std::memory_order_relaxed); }

DLDataType DType(char code, int bits) {
  DLDataType t{};
  t.code = code == 'i' ? kDLInt : kDLUInt;
  t.bits = static_cast<uint8_t>(bits);
  t.lanes = 1;
  return t;
}

namespace {

std::string DTypeName(const DLDataType& t) {
  return (t.code == kDLInt ? "int" : "uint") + std::to_string(t.bits);
}

// What a DLPack capsule owns until its consumer calls the deleter.
struct Exported {
  DLManagedTensor tensor{};
  std::shared_ptr<ForkSafe<const void>> owner;
  std::vector<int64_t> shape, strides;
  std::vector<char> copy;  // Only for copy=True.
  uint64_t generation = ForkGeneration();

  static void Delete(DLManagedTensor* t) {
    auto* e = static_cast<Exported*>(t->manager_ctx);
    if (ForkGeneration() != e->generation) return;  // Leak in a forked child: see the top.
    delete e;
  }
};

void DeleteUnconsumedCapsule(PyObject* capsule) {
  // A consumer renames the capsule to "used_dltensor" and owns it from then on.
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (t != nullptr && t->deleter != nullptr) t->deleter(t);
}

[[noreturn]] void ThrowBufferError(const std::string& message) {
  PyErr_SetString(PyExc_BufferError, message.c_str());
  throw py::error_already_set();
}

// For a GPU array: orders the consumer's stream after the copy and registers
// it, per the DLPack protocol's stream argument (None: the legacy default
// stream; -1: the consumer synchronizes itself; else a cudaStream_t).
void SyncConsumerStream(const Array& a, const py::object& stream) {
  int64_t handle = 1;  // cudaStreamLegacy
  if (!stream.is_none()) handle = IntArg<int64_t>(stream, "stream");
  if (handle == -1) return;
  Status s;
  {
    py::gil_scoped_release nogil;
    s = a.device_batch->UseOn(reinterpret_cast<void*>(static_cast<intptr_t>(handle)));
  }
  if (!s.ok())
    ThrowBufferError("cannot order stream " + std::to_string(handle) + ": " + s.ToString());
}

}  // namespace

py::object ExportDlpack(const Array& a, const py::object& stream, const py::object& /*max_version*/,
                        const py::object& dl_device, const py::object& copy) {
  if (!dl_device.is_none()) {
    const std::vector<int> dev = IntListArg<int>(dl_device, "dl_device");
    if (dev.size() != 2 || dev[0] != a.device_type() || dev[1] != a.device_id()) {
      ThrowBufferError("this tokpack array lives on device (" + std::to_string(a.device_type()) +
                       ", " + std::to_string(a.device_id()) +
                       "); it cannot be exported to another");
    }
  }
  const bool do_copy = !copy.is_none() && copy.cast<bool>();
  if (a.device_batch) {
    if (do_copy) ThrowBufferError("copy=True is not supported for tokpack GPU arrays");
    SyncConsumerStream(a, stream);
  }
  if (a.readonly && !do_copy) {
    ThrowBufferError(
        "this array views a read-only memory-mapped shard; DLPack cannot mark it read-only, so "
        "export it with copy=True (or use numpy.asarray)");
  }
  auto e = std::make_unique<Exported>();
  e->owner = a.owner;
  e->shape = a.shape;
  e->strides.resize(a.shape.size());
  int64_t stride = 1;
  for (size_t i = a.shape.size(); i-- > 0;) {
    e->strides[i] = stride;
    stride *= a.shape[i];
  }
  void* data = const_cast<void*>(a.data);
  if (do_copy) {
    e->copy.assign(static_cast<const char*>(a.data), static_cast<const char*>(a.data) + a.nbytes());
    data = e->copy.data();
  }
  DLTensor& t = e->tensor.dl_tensor;
  t.data = data;
  t.device = {static_cast<DLDeviceType>(a.device_type()), a.device_id()};
  t.ndim = static_cast<int>(a.shape.size());
  t.dtype = a.dtype;
  t.shape = e->shape.data();
  t.strides = e->strides.data();
  t.byte_offset = 0;
  e->tensor.manager_ctx = e.get();
  e->tensor.deleter = &Exported::Delete;
  DLManagedTensor* managed = &e.release()->tensor;
  PyObject* capsule = PyCapsule_New(managed, "dltensor", &DeleteUnconsumedCapsule);
  if (capsule == nullptr) {
    Exported::Delete(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

Array BatchArray(const std::shared_ptr<ForkSafe<const void>>& owner, const void* data,
                 std::vector<int64_t> shape, DLDataType dtype) {
  Array a;
  a.owner = owner;
  a.data = data;
  a.shape = std::move(shape);
  a.dtype = dtype;
  return a;
}

void DefineArray(py::module_& m) {
  pthread_atfork(nullptr, nullptr, [] { g_fork_generation.fetch_add(1); });
  py::class_<Array>(m, "Array", py::buffer_protocol())
      .def_property_readonly("shape", [](const Array& a) { return py::tuple(py::cast(a.shape)); })
      .def_property_readonly("dtype", [](const Array& a) { return DTypeName(a.dtype); })
      .def_property_readonly("readonly", [](const Array& a) { return a.readonly; })
      .def("__len__", [](const Array& a) { return a.shape.empty() ? 0 : a.shape[0]; })
      .def("__dlpack__", &ExportDlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none())
      .def("__dlpack_device__",
           [](const Array& a) { return py::make_tuple(a.device_type(), a.device_id()); })
      .def_buffer([](const Array& a) {
        if (a.device_batch) throw py::buffer_error("a tokpack GPU array has no host buffer");
        const ssize_t item = a.dtype.bits / 8;
        std::vector<ssize_t> shape(a.shape.begin(), a.shape.end()), strides(a.shape.size());
        ssize_t stride = item;
        for (size_t i = shape.size(); i-- > 0;) {
          strides[i] = stride;
          stride *= shape[i];
        }
        // Unsigned: uint32, uint16 (token ids) or uint8 (loss masks).
        const std::string format = a.dtype.code == kDLInt ? (item == 8   ? "q"
                                                             : item == 4 ? "i"
                                                                         : "h")
                                   : item == 4            ? "I"
                                   : item == 2            ? "H"
                                                          : "B";
        // Empty views may have no storage; any non-null pointer will do.
        static const int64_t kEmpty = 0;
        void* data = const_cast<void*>(a.data ? a.data : &kEmpty);
        return py::buffer_info(data, item, format, static_cast<ssize_t>(shape.size()), shape,
                               strides, a.readonly);
      });
}

}  // namespace tokpack
