// tokpack._core: the thin pybind11 layer over the public C++ API. The
// Pythonic API (tokpack.Loader, tokpack.Dataset, tokpack.build) is written in
// Python on top of it (python/tokpack/).
//
// Rules kept here:
// - Status becomes a Python exception in exactly one place, ThrowStatus()
//   (py_convert.h, with the argument conversions and the interruptible wait).
// - Blocking work runs with the GIL released; long waits poll for signals
//   so Ctrl-C interrupts them.
// - Memory handed to Python (batches, document views) is exported as Array,
//   which implements DLPack and the buffer protocol and owns a reference
//   that keeps the memory valid and unchanged while any consumer holds it.
// - After fork() the parent's assembler threads and locks do not exist in
//   the child, so objects the child inherited never run C++ destructors
//   there: they are leaked on purpose (the memory is the child's own copy).
#include <dlpack/dlpack.h>
#include <pthread.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#include "bindings/py_convert.h"
#include "bindings/py_iterable.h"
#include "bindings/py_mixture.h"
#include "frontend/arrow_stream_source.h"
#include "tokpack/builder.h"
#include "tokpack/dataset.h"
#include "tokpack/dataset_ops.h"
#include "tokpack/files.h"
#include "tokpack/loader.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"
#include "tokpack/tokenizer.h"
#include "tokpack/version.h"

namespace py = pybind11;

namespace tokpack {
namespace {

using namespace py_convert;  // NOLINT: the module's own helpers.

// Counts forks (a pthread_atfork child handler bumps it), so checking
// whether an object was made in another process costs a load, not a
// getpid() system call per array.
std::atomic<uint64_t> g_fork_generation{0};

uint64_t ForkGeneration() { return g_fork_generation.load(std::memory_order_relaxed); }

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

DLDataType DType(char code, int bits) {
  DLDataType t{};
  t.code = code == 'i' ? kDLInt : kDLUInt;
  t.bits = static_cast<uint8_t>(bits);
  t.lanes = 1;
  return t;
}

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

// __dlpack__(stream=None, max_version=None, dl_device=None, copy=None):
// always the unversioned capsule, which every consumer accepts.
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

// A Loader plus the process that created it.
struct LoaderHandle {
  std::unique_ptr<Loader> loader;
  uint64_t generation = ForkGeneration();
  bool forked() const { return ForkGeneration() != generation; }
  ~LoaderHandle() {
    if (forked()) loader.release();  // Leak: its threads (and CUDA) are not in this process.
  }
};

// next(): waits with the GIL released, waking to deliver Ctrl-C. Returns
// None at the end, else (input_ids, labels[, position_ids, cu_seqlens]) as
// Arrays, or with `capsules` as DLPack capsules (torch takes those fastest
// on the CPU).
py::object NextBatch(LoaderHandle& h, bool capsules) {
  // A batch assembled ahead is taken without releasing the GIL (a release
  // and re-acquire costs more than the take, and contends with other Python
  // threads); only a wait releases it.
  StatusOr<std::shared_ptr<const Batch>> r = h.loader->Next(0.0);
  while (r.status().code() == StatusCode::kDeadlineExceeded) {
    {
      py::gil_scoped_release nogil;
      r = h.loader->Next(kSignalPollSeconds);
    }
    if (r.status().code() != StatusCode::kDeadlineExceeded) break;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
  std::shared_ptr<const Batch> batch = Unwrap(std::move(r));
  if (!batch) return py::none();
  auto owner = std::make_shared<ForkSafe<const void>>(batch);
  const bool on_device = batch->device().is_cuda();
  const std::vector<int64_t> shape = {batch->batch_size(), batch->seq_len()};
  const DLDataType t = DType('i', batch->dtype() == OutputDtype::kInt32 ? 32 : 64);
  const py::object none = py::none();
  const auto make = [&](const void* data, std::vector<int64_t> dims, DLDataType type) {
    Array a = BatchArray(owner, data, std::move(dims), type);
    if (on_device) a.device_batch = batch;
    return capsules ? ExportDlpack(a, none, none, none, none) : py::cast(std::move(a));
  };
  py::tuple out(batch->position_ids() ? 4 : 2);
  out[0] = make(batch->inputs(), shape, t);
  out[1] = make(batch->targets(), shape, t);
  if (batch->position_ids()) {
    out[2] = make(batch->position_ids(), shape, DType('i', 32));
    out[3] = make(batch->cu_seqlens(), {batch->num_cu_seqlens()}, DType('i', 32));
  }
  return std::move(out);
}

std::vector<Loader::Source> Sources(const std::vector<std::shared_ptr<ForkSafe<Dataset>>>& datasets,
                                    const std::vector<double>& weights) {
  if (datasets.size() != weights.size()) {
    ThrowStatus(InvalidArgumentError("datasets and weights differ in length"));
  }
  std::vector<Loader::Source> sources;
  for (size_t i = 0; i < datasets.size(); ++i) sources.push_back({datasets[i]->get(), weights[i]});
  return sources;
}

// Phases from Python: (start_step, [weight per dataset]) pairs; the Python
// layer has checked names and values, the core checks the rules again.
std::vector<MixturePhase> PhasesArg(const py::handle& v) {
  std::vector<MixturePhase> out;
  size_t k = 0;
  for (const py::handle item : py::iter(v)) {
    const auto pair = item.cast<std::pair<py::object, std::vector<double>>>();
    out.push_back({IntArg<int64_t>(pair.first, "phases[" + std::to_string(k++) + "].start_step"),
                   pair.second});
  }
  return out;
}

py::list PhasesList(const std::vector<MixturePhase>& phases) {
  py::list out;
  for (const MixturePhase& p : phases) out.append(py::make_tuple(p.start_step, p.weights));
  return out;
}

py::dict StatsDict(const LoaderStats& s) {
  py::dict d;
  d["steps"] = s.steps;
  d["wait_seconds_total"] = s.wait_seconds_total;
  d["wait_seconds_last"] = s.wait_seconds_last;
  d["wait_seconds_max"] = s.wait_seconds_max;
  d["wait_seconds_p50"] = s.wait_seconds_p50;
  d["wait_seconds_p99"] = s.wait_seconds_p99;
  d["assemble_seconds_total"] = s.assemble_seconds_total;
  d["bytes_served"] = s.bytes_served;
  d["cache_hits"] = s.cache_hits;
  d["cache_misses"] = s.cache_misses;
  d["bytes_fetched"] = s.bytes_fetched;
  d["fetch_seconds"] = s.fetch_seconds;
  py::list sources, phases;
  for (const SourceStats& src : s.sources) {
    py::dict x;
    x["samples"] = src.samples;
    x["tokens"] = src.tokens;
    x["epochs_completed"] = src.epochs_completed;
    x["epoch_samples"] = src.epoch_samples;
    sources.append(x);
  }
  for (const PhaseStats& p : s.phases) {
    py::dict x;
    x["start_step"] = p.start_step;
    x["start_position"] = p.start_position;
    x["weights"] = p.weights;
    x["samples"] = p.samples;
    phases.append(x);
  }
  d["sources"] = sources;
  d["phases"] = phases;
  return d;
}

// The texts of an object with __arrow_c_stream__ (the Arrow PyCapsule
// interface): the stream is moved out of its capsule, then read on the
// packer's reader thread without the GIL.
std::shared_ptr<TextSource> ArrowTextSource(const py::object& obj, const std::string& text_key) {
  py::object capsule = obj.attr("__arrow_c_stream__")();
  void* stream = PyCapsule_GetPointer(capsule.ptr(), "arrow_array_stream");
  if (stream == nullptr) throw py::error_already_set();  // Not an "arrow_array_stream" capsule.
  return Unwrap(MakeArrowStreamTextSource(stream, text_key, "<arrow stream>"));
}

// Runs a build on a worker thread so the caller can poll for Ctrl-C, which
// cancels it (the build then leaves nothing behind). When `texts` is not
// null, the items of `iterator` are pulled into it here, on the calling
// thread, where a blocking iterable sees Ctrl-C (py_iterable.h); its
// exception, or KeyboardInterrupt, cancels the build and is raised unchanged
// once the build has ended.
std::string RunBuild(BuildOptions o, const py::object& progress,
                     const std::shared_ptr<PyIterableTexts>& texts, const py::iterator& iterator) {
  std::atomic<bool> cancel{false};
  o.cancel = &cancel;
  std::mutex mu;
  std::vector<BuildProgress> reports;  // Handed to `progress` from this thread.
  if (!progress.is_none()) {
    o.progress = [&](const BuildProgress& p) {
      std::lock_guard<std::mutex> lock(mu);
      reports.push_back(p);
    };
  }
  auto result = std::async(std::launch::async, [&o, texts] {
    // The build's threads (this one and those it starts) take no signal
    // sent to the process: the kernel may give SIGINT to any thread that
    // does, and Python would then only note it, leaving a generator blocked
    // in a read on the calling thread (seen about once in ten tries). Faults
    // stay the faulting thread's own (sanitizers report them).
    sigset_t sent;
    sigfillset(&sent);
    for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&sent, fault);
    pthread_sigmask(SIG_BLOCK, &sent, nullptr);
    StatusOr<BuildSummary> summary = Build(o);
    if (texts) texts->Stop();  // Stops pulling texts it will not read.
    return summary;
  });
  const auto poll = [&] {
    std::vector<BuildProgress> pending;
    {
      std::lock_guard<std::mutex> lock(mu);
      pending.swap(reports);
    }
    for (const BuildProgress& p : pending) {
      py::dict d;
      d["bytes_read"] = p.bytes_read;
      d["bytes_total"] = p.bytes_total;
      d["documents"] = p.documents;
      d["tokens"] = p.tokens;
      d["elapsed_seconds"] = p.elapsed_seconds;
      progress(d);
    }
    CheckSignals();
  };
  if (texts) {
    try {
      texts->Pump(iterator, poll);
    } catch (...) {
      cancel.store(true);
      texts->Stop();
      py::gil_scoped_release nogil;
      result.wait();
      throw;
    }
  }
  return Unwrap(WaitInterruptibly(result, cancel, poll)).manifest.ToJson();
}

}  // namespace
}  // namespace tokpack

PYBIND11_MODULE(_core, m) {
  using namespace tokpack;
  m.doc() = "tokpack's C++ core. Use the tokpack package, not this module.";
  m.attr("__version__") = Version();
  pthread_atfork(nullptr, nullptr, [] { g_fork_generation.fetch_add(1); });
  m.def("loader_options", [] { return DescribeOptions(LoaderOptions::Describe()); });
  m.def("parse_device",
        [](const std::string& text) { return Unwrap(Device::Parse(text)).ToString(); });
  tokpack::DefineMixture(m);

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
        const std::string format = a.dtype.code == kDLInt ? (item == 8   ? "q"
                                                             : item == 4 ? "i"
                                                                         : "h")
                                                          : (item == 4 ? "I" : "H");
        // Empty views may have no storage; any non-null pointer will do.
        static const int64_t kEmpty = 0;
        void* data = const_cast<void*>(a.data ? a.data : &kEmpty);
        return py::buffer_info(data, item, format, static_cast<ssize_t>(shape.size()), shape,
                               strides, a.readonly);
      });

  py::class_<StorageOptions> storage_options(m, "StorageOptions");
  DefIntField(storage_options, "cache_bytes", &StorageOptions::cache_bytes);
  DefIntField(storage_options, "http_attempts", &StorageOptions::http_attempts);
  DefIntField(storage_options, "http_stall_seconds", &StorageOptions::http_stall_seconds);
  DefIntField(storage_options, "http_concurrency", &StorageOptions::http_concurrency);
  DefIntField(storage_options, "prefetch_threads", &StorageOptions::prefetch_threads);
  storage_options.def(py::init<>())
      .def_static("from_environment", [] { return Unwrap(StorageOptions::FromEnvironment()); })
      .def_readwrite("cache_dir", &StorageOptions::cache_dir)
      .def_readwrite("temp_dir", &StorageOptions::temp_dir)
      .def_readwrite("s3_endpoint", &StorageOptions::s3_endpoint)
      .def_readwrite("aws_region", &StorageOptions::aws_region)
      .def_readwrite("aws_access_key_id", &StorageOptions::aws_access_key_id)
      .def_readwrite("aws_secret_access_key", &StorageOptions::aws_secret_access_key)
      .def_readwrite("aws_session_token", &StorageOptions::aws_session_token)
      .def_readwrite("aws_profile", &StorageOptions::aws_profile)
      .def_readwrite("aws_shared_credentials_file", &StorageOptions::aws_shared_credentials_file)
      .def_readwrite("aws_config_file", &StorageOptions::aws_config_file)
      .def_readwrite("gcs_endpoint", &StorageOptions::gcs_endpoint)
      .def_readwrite("gs_access_key_id", &StorageOptions::gs_access_key_id)
      .def_readwrite("gs_secret_access_key", &StorageOptions::gs_secret_access_key);

  py::class_<ForkSafe<Dataset>, std::shared_ptr<ForkSafe<Dataset>>>(m, "Dataset")
      .def(py::init([](const std::string& path, const std::optional<StorageOptions>& storage,
                       const py::kwargs& kw) {
             // A local dataset needs no storage settings: a bad variable
             // meant for remote reads does not stop it from opening.
             const StorageOptions options =
                 storage || IsRemoteUrl(path) ? StorageOrEnvironment(storage) : StorageOptions();
             const DatasetOptions open_options = ParseOptions<DatasetOptions>(kw);
             StatusOr<std::shared_ptr<Dataset>> ds =
                 RunInterruptibly(options, [&path, &open_options](const StorageOptions& o) {
                   return Dataset::Open(path, o, open_options);
                 });
             return std::make_shared<ForkSafe<Dataset>>(Unwrap(std::move(ds)));
           }),
           py::arg("path"), py::arg("storage") = py::none())
      .def_property_readonly("path", [](const ForkSafe<Dataset>& d) { return d.get()->path(); })
      .def_property_readonly("num_tokens",
                             [](const ForkSafe<Dataset>& d) { return d.get()->num_tokens(); })
      .def_property_readonly("num_documents",
                             [](const ForkSafe<Dataset>& d) { return d.get()->num_documents(); })
      .def_property_readonly("num_shards",
                             [](const ForkSafe<Dataset>& d) { return d.get()->num_shards(); })
      .def_property_readonly("dtype",
                             [](const ForkSafe<Dataset>& d) {
                               return d.get()->dtype() == TokenDtype::kUInt16 ? "uint16" : "int32";
                             })
      .def_property_readonly(
          "fingerprint",
          [](const ForkSafe<Dataset>& d) { return HashToHex(d.get()->fingerprint()); })
      .def_property_readonly(
          "manifest_json", [](const ForkSafe<Dataset>& d) { return d.get()->manifest().ToJson(); })
      .def("document",
           [](const std::shared_ptr<ForkSafe<Dataset>>& d, const py::object& index) {
             const uint64_t i = IntArg<uint64_t>(index, "document index");
             const Dataset& ds = *d->get();
             Array a;
             a.dtype = ds.dtype() == TokenDtype::kUInt16 ? DType('u', 16) : DType('i', 32);
             StatusOr<Dataset::TokenView> view = ds.DocumentView(i);
             if (view.ok()) {
               a.owner = std::make_shared<ForkSafe<const void>>(d->get());
               a.data = view->data;
               a.shape = {static_cast<int64_t>(view->length)};
               a.readonly = true;
               return a;
             }
             if (view.status().code() != StatusCode::kFailedPrecondition)
               ThrowStatus(view.status());
             // Not memory-resident: a copy, widened to int32.
             uint64_t offset = 0, length = 0;
             Check(ds.DocumentExtent(i, &offset, &length));
             auto copy = std::make_shared<std::vector<int32_t>>(length);
             Status read;
             {
               py::gil_scoped_release nogil;  // Remote reads can take a while.
               read = ds.ReadTokens(offset, length, copy->data());
             }
             Check(read);
             a.owner = std::make_shared<ForkSafe<const void>>(copy);
             a.data = copy->data();
             a.shape = {static_cast<int64_t>(length)};
             a.dtype = DType('i', 32);
             return a;
           })
      .def("document_extent",
           [](const ForkSafe<Dataset>& d, const py::object& index) {
             uint64_t offset = 0, length = 0;
             Check(d.get()->DocumentExtent(IntArg<uint64_t>(index, "document index"), &offset,
                                           &length));
             return py::make_tuple(offset, length);
           })
      .def("read_tokens", [](const ForkSafe<Dataset>& d, const py::object& first,
                             const py::object& n) {
        const uint64_t begin = IntArg<uint64_t>(first, "begin");
        const uint64_t count = IntArg<uint64_t>(n, "count");
        if (count > d.get()->num_tokens()) {
          ThrowStatus(OutOfRangeError("cannot read " + std::to_string(count) + " tokens from " +
                                      std::to_string(d.get()->num_tokens())));
        }
        auto copy = std::make_shared<std::vector<int64_t>>(count);
        Status s;
        {
          py::gil_scoped_release nogil;
          s = d.get()->ReadTokens(begin, count, copy->data());
        }
        Check(s);
        Array a;
        a.owner = std::make_shared<ForkSafe<const void>>(copy);
        a.data = copy->data();
        a.shape = {static_cast<int64_t>(count)};
        a.dtype = DType('i', 64);
        return a;
      });

  py::class_<Tokenizer>(m, "Tokenizer")
      .def(py::init([](const std::string& path, const std::string& pattern,
                       const py::object& special, const std::string& eos_token,
                       const std::string& bos_token) {
             TokenizerOptions o{pattern, SpecialTokensArg(special), eos_token, bos_token};
             StatusOr<std::unique_ptr<Tokenizer>> t = std::unique_ptr<Tokenizer>();
             {
               py::gil_scoped_release release;  // Check raises: only with the GIL.
               t = Tokenizer::Load(path, o);
             }
             // Not Unwrap(std::move(t)): GCC 12 then warns, wrongly, that the
             // moved unique_ptr may be uninitialized.
             Check(t.status());
             return std::move(t).value();
           }),
           py::arg("path"), py::arg("pattern"), py::arg("special"), py::arg("eos_token"),
           py::arg("bos_token"))
      .def_static(
          "from_dataset",
          [](const std::shared_ptr<ForkSafe<Dataset>>& ds,
             const std::optional<StorageOptions>& storage) {
            const Dataset& d = *ds->get();
            const StorageOptions options =
                storage || d.remote() ? StorageOrEnvironment(storage) : StorageOptions();
            return Unwrap(RunInterruptibly(
                options, [&d](const StorageOptions& o) { return LoadDatasetTokenizer(d, o); }));
          },
          py::arg("dataset"), py::arg("storage") = py::none())
      .def("encode",
           [](const Tokenizer& t, const std::string& text) {
             std::vector<int> ids;
             Status st;
             {
               py::gil_scoped_release release;
               st = t.Encode(text, &ids);
             }
             Check(st);
             return ids;
           })
      .def("decode_bytes",
           [](const Tokenizer& t, const py::object& ids) {
             return py::bytes(Unwrap(t.Decode(IntListArg<int>(ids, "ids"))));
           })
      .def_property_readonly("kind", [](const Tokenizer& t) { return t.info().type; })
      .def_property_readonly("vocab_size", [](const Tokenizer& t) { return t.info().vocab_size; })
      .def_property_readonly("bos_id", [](const Tokenizer& t) { return t.info().bos_id; })
      .def_property_readonly("eos_id", [](const Tokenizer& t) { return t.info().eos_id; })
      .def_property_readonly("pad_id", [](const Tokenizer& t) { return t.info().pad_id; })
      .def_property_readonly("unk_id", [](const Tokenizer& t) { return t.info().unk_id; });

  py::class_<LoaderHandle>(m, "Loader")
      // One mixture (`weights`, one per dataset) or several (`phases`).
      .def(py::init([](const std::vector<std::shared_ptr<ForkSafe<Dataset>>>& datasets,
                       const std::optional<std::vector<double>>& weights,
                       const py::object& phases_arg, const py::kwargs& kw) {
             if (weights.has_value() == !phases_arg.is_none()) {
               ThrowStatus(InvalidArgumentError("give either weights or phases"));
             }
             std::vector<Loader::Source> sources;
             std::vector<std::shared_ptr<Dataset>> plain;
             std::vector<MixturePhase> phases;
             if (weights) {
               sources = Sources(datasets, *weights);
             } else {
               for (const auto& d : datasets) plain.push_back(d->get());
               phases = PhasesArg(phases_arg);
             }
             const LoaderOptions o = ParseOptions<LoaderOptions>(kw);
             auto h = std::make_unique<LoaderHandle>();
             StatusOr<std::unique_ptr<Loader>> r = std::unique_ptr<Loader>();
             {
               py::gil_scoped_release nogil;
               r = weights ? Loader::Create(std::move(sources), o)
                           : Loader::Create(std::move(plain), std::move(phases), o);
             }
             h->loader = Unwrap(std::move(r));
             return h;
           }),
           py::arg("datasets"), py::arg("weights") = py::none(), py::arg("phases") = py::none())
      .def(
          "next", [](LoaderHandle& h, bool capsules) { return NextBatch(h, capsules); },
          py::arg("capsules") = false)
      .def("state", [](const LoaderHandle& h) { return h.loader->SaveState(); })
      .def(
          "load_state",
          [](LoaderHandle& h, const std::string& state, const py::object& phases_arg) {
            const bool given = !phases_arg.is_none();
            std::vector<MixturePhase> phases;
            if (given) phases = PhasesArg(phases_arg);
            Status s;
            {
              py::gil_scoped_release nogil;  // Waits for in-flight plans to see the change.
              s = given ? h.loader->LoadState(state, std::move(phases))
                        : h.loader->LoadState(state);
            }
            Check(s);
          },
          py::arg("state"), py::arg("phases") = py::none())
      .def("set_phases",
           [](LoaderHandle& h, const py::object& phases_arg) {
             std::vector<MixturePhase> phases = PhasesArg(phases_arg);
             Status s;
             {
               py::gil_scoped_release nogil;  // As load_state: a new schedule generation.
               s = h.loader->SetPhases(std::move(phases));
             }
             Check(s);
           })
      .def_property_readonly("phases",
                             [](const LoaderHandle& h) { return PhasesList(h.loader->Phases()); })
      .def_property_readonly("step", [](const LoaderHandle& h) { return h.loader->Step(); })
      .def_property_readonly("remaining_steps",
                             [](const LoaderHandle& h) { return h.loader->RemainingSteps(); })
      .def_property_readonly("forked", [](const LoaderHandle& h) { return h.forked(); })
      .def_property_readonly("options",
                             [](const LoaderHandle& h) { return OptionsDict(h.loader->options()); })
      .def_property_readonly("samples_per_source",
                             [](const LoaderHandle& h) { return h.loader->SamplesPerSource(); })
      .def("stats", [](const LoaderHandle& h) { return StatsDict(h.loader->Stats()); });

  m.def("cuda_available", [] {
    std::string why;
    const bool ok = CudaAvailable(&why);
    return py::make_tuple(ok, why);
  });

  // The settings come as keyword arguments, set through BuildOptions' table.
  m.def(
      "build",
      [](const std::vector<std::string>& inputs, const std::string& output,
         const std::string& tokenizer_model, const std::string& pattern, const py::object& special,
         const std::string& eos_token, const std::string& bos_token, const py::object& progress,
         const py::object& texts, const py::object& arrow_stream,
         const std::optional<StorageOptions>& storage, const py::kwargs& settings) {
        BuildOptions o = ParseOptions<BuildOptions>(settings);
        o.inputs = inputs;
        o.storage = StorageOrEnvironment(storage);
        std::shared_ptr<PyIterableTexts> iterable;
        py::iterator iterator;
        if (!arrow_stream.is_none()) {
          o.texts = ArrowTextSource(arrow_stream, o.settings.text_key);
        } else if (!texts.is_none()) {
          iterator = py::iter(texts);
          iterable = std::make_shared<PyIterableTexts>();
          o.texts = iterable;
        }
        o.output = output;
        o.tokenizer_model = tokenizer_model;
        o.tokenizer_options =
            TokenizerOptions{pattern, SpecialTokensArg(special), eos_token, bos_token};
        return RunBuild(std::move(o), progress, iterable, iterator);
      },
      py::arg("inputs"), py::arg("output"), py::arg("tokenizer_model"), py::arg("pattern"),
      py::arg("special"), py::arg("eos_token"), py::arg("bos_token"), py::arg("progress"),
      py::arg("texts") = py::none(), py::arg("arrow_stream") = py::none(),
      py::arg("storage") = py::none());
  m.def("build_options", [] { return DescribeOptions(BuildOptions::Describe()); });
  m.def("dataset_options", [] { return DescribeOptions(DatasetOptions::Describe()); });
  // The core's rule for a file read as configuration (tokpack/files.h), so
  // that Python reads a cursor file as the CLI's --state-in does.
  m.def(
      "read_small_file",
      [](const std::string& path, const py::handle& max_bytes, const std::string& what) {
        const uint64_t cap = IntArg<uint64_t>(max_bytes, "max_bytes");
        StatusOr<std::string> bytes = [&] {
          py::gil_scoped_release nogil;
          return ReadSmallFile(path, cap, what);
        }();
        return py::bytes(Unwrap(std::move(bytes)));
      },
      py::arg("path"), py::arg("max_bytes"), py::arg("what"));
  m.attr("MAX_CURSOR_BYTES") = kMaxCursorBytes;
}
