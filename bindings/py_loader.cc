// Loader: batches as arrays or DLPack capsules, cursors, phases and stats.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings/py_array.h"
#include "bindings/py_convert.h"
#include "bindings/py_module.h"
#include "tokpack/dataset.h"
#include "tokpack/loader.h"

namespace tokpack {
namespace {

namespace py = pybind11;
using namespace py_convert;  // NOLINT: the module's own helpers.

// A Loader plus the process that created it, and when next() was first
// called and last returned (Loader.stats() rates batches over that span).
struct LoaderHandle {
  using Clock = std::chrono::steady_clock;
  std::unique_ptr<Loader> loader;
  uint64_t generation = ForkGeneration();
  std::optional<Clock::time_point> first_next, last_next;
  bool forked() const { return ForkGeneration() != generation; }
  double next_seconds() const {
    if (!first_next || !last_next) return 0.0;
    return std::chrono::duration<double>(*last_next - *first_next).count();
  }
  ~LoaderHandle() {
    if (forked()) loader.release();  // Leak: its threads (and CUDA) are not in this process.
  }
};

// The next batch, or null at the end: waits with the GIL released, waking
// to deliver Ctrl-C. A batch assembled ahead is taken without releasing the
// GIL (a release and re-acquire costs more than the take, and contends with
// other Python threads); only a wait releases it.
std::shared_ptr<const Batch> TakeBatch(LoaderHandle& h) {
  if (!h.first_next) h.first_next = LoaderHandle::Clock::now();
  StatusOr<std::shared_ptr<const Batch>> r = h.loader->Next(0.0);
  while (r.status().code() == StatusCode::kDeadlineExceeded) {
    {
      py::gil_scoped_release nogil;
      r = h.loader->Next(kSignalPollSeconds);
    }
    if (r.status().code() != StatusCode::kDeadlineExceeded) break;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
  h.last_next = LoaderHandle::Clock::now();
  return Unwrap(std::move(r));
}

// The keys of a batch's arrays in Loader.__next__'s dict, by the index
// BatchObjects gives them; interned once and never freed, so that no
// interpreter teardown order matters.
PyObject* ArrayKey(int k) {
  static PyObject* const keys[] = {
      PyUnicode_InternFromString("input_ids"), PyUnicode_InternFromString("labels"),
      PyUnicode_InternFromString("position_ids"), PyUnicode_InternFromString("cu_seqlens"),
      PyUnicode_InternFromString("loss_mask")};
  return keys[k];
}

// Calls visit(k, object) for each array k of `batch` (0 input_ids, 1
// labels, 2 position_ids, 3 cu_seqlens, 4 loss_mask) that it has, as an Array, or with `capsules`
// as a DLPack capsule (torch takes those fastest on the CPU).
template <typename Visit>
void BatchObjects(const std::shared_ptr<const Batch>& batch, bool capsules, Visit&& visit) {
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
  visit(0, make(batch->inputs(), shape, t));
  visit(1, make(batch->targets(), shape, t));
  if (batch->position_ids()) {
    visit(2, make(batch->position_ids(), shape, DType('i', 32)));
    visit(3, make(batch->cu_seqlens(), {batch->num_cu_seqlens()}, DType('i', 32)));
  }
  if (batch->loss_mask()) visit(4, make(batch->loss_mask(), shape, DType('u', 8)));
}

// next(): None at the end, else (input_ids, labels[, position_ids,
// cu_seqlens][, loss_mask]) as Arrays or capsules: an odd length means a
// loss_mask last.
py::object NextTuple(LoaderHandle& h, bool capsules) {
  std::shared_ptr<const Batch> batch = TakeBatch(h);
  if (!batch) return py::none();
  const size_t n = (batch->position_ids() ? 4 : 2) + (batch->loss_mask() ? 1 : 0);
  py::tuple out(n);
  size_t i = 0;
  BatchObjects(batch, capsules, [&](int, py::object o) { out[i++] = std::move(o); });
  return std::move(out);
}

// next_dict(): Loader.__next__ in one call, the Python loop's per-batch
// cost being mostly calls and objects: the batch as the dict it returns,
// each array (as next() makes it) passed through `convert` (None: as it
// is). None at the end, and in a forked child, where the loader's threads
// do not exist (the caller says why).
py::object NextDict(LoaderHandle& h, const py::object& convert, bool capsules) {
  if (h.forked()) return py::none();
  std::shared_ptr<const Batch> batch = TakeBatch(h);
  if (!batch) return py::none();
  py::dict out;
  BatchObjects(batch, capsules, [&](int k, py::object o) {
    if (!convert.is_none()) {
      o = py::reinterpret_steal<py::object>(PyObject_CallOneArg(convert.ptr(), o.ptr()));
      if (!o) throw py::error_already_set();
    }
    if (PyDict_SetItem(out.ptr(), ArrayKey(k), o.ptr()) != 0) throw py::error_already_set();
  });
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

// Phases from Python: (start_step, [weight per dataset][, ramp_steps]); the
// Python layer has checked names and values, the core checks the rules again.
std::vector<MixturePhase> PhasesArg(const py::handle& v) {
  std::vector<MixturePhase> out;
  size_t k = 0;
  for (const py::handle item : py::iter(v)) {
    const auto t = item.cast<py::tuple>();
    const std::string where = "phases[" + std::to_string(k++) + "]";
    out.push_back({IntArg<int64_t>(t[0], where + ".start_step"), t[1].cast<std::vector<double>>(),
                   t.size() > 2 ? IntArg<int64_t>(t[2], where + ".ramp_steps") : 0});
  }
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
    x["trainable_tokens"] = src.trainable_tokens;
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

// Loader::Explain as a list of (step, rank, row, source, sample, spans),
// each span (column, document, offset, length).
py::list ExplainList(const LoaderHandle& h, const py::object& first, const py::object& steps) {
  const int64_t from = IntArg<int64_t>(first, "step"), count = IntArg<int64_t>(steps, "steps");
  // The replay up to the step can take seconds: on a worker thread, so
  // Ctrl-C cancels it.
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  const Loader* loader = h.loader.get();
  auto result = std::async(std::launch::async, [loader, from, count, cancel] {
    return loader->Explain(from, count, cancel);
  });
  const std::vector<RowOrigin> rows = Unwrap(WaitInterruptibly(result, *cancel, CheckSignals));
  py::list out;
  for (const RowOrigin& r : rows) {
    py::list spans;
    for (const RowOrigin::Span& s : r.spans) {
      spans.append(py::make_tuple(s.column, s.document, s.offset, s.length));
    }
    out.append(py::make_tuple(r.step, r.rank, r.row, r.source, r.sample, spans));
  }
  return out;
}

}  // namespace

py::list PhasesList(const std::vector<MixturePhase>& phases) {
  py::list out;
  for (const MixturePhase& p : phases) {
    if (p.ramp_steps > 0) {
      out.append(py::make_tuple(p.start_step, p.weights, p.ramp_steps));
    } else {
      out.append(py::make_tuple(p.start_step, p.weights));
    }
  }
  return out;
}

void DefineLoader(py::module_& m) {
  m.def("loader_options", [] { return DescribeOptions(LoaderOptions::Describe()); });
  m.def("parse_device",
        [](const std::string& text) { return Unwrap(Device::Parse(text)).ToString(); });
  py::class_<LoaderHandle>(m, "Loader")
      // One mixture (`weights`, one per dataset) or several (`phases`).
      .def(py::init([](const std::vector<std::shared_ptr<ForkSafe<Dataset>>>& datasets,
                       const std::optional<std::vector<double>>& weights,
                       const py::object& phases_arg, const std::vector<double>& max_epochs,
                       const py::kwargs& kw) {
             if (weights.has_value() == !phases_arg.is_none()) {
               ThrowStatus(InvalidArgumentError("give either weights or phases"));
             }
             std::vector<Loader::Source> sources;
             std::vector<std::shared_ptr<Dataset>> plain;
             std::vector<MixturePhase> phases;
             if (weights && max_epochs.empty()) {
               sources = Sources(datasets, *weights);
             } else if (weights) {  // Caps take the phases' constructor.
               for (const auto& d : datasets) plain.push_back(d->get());
               phases = {{0, *weights}};
             } else {
               for (const auto& d : datasets) plain.push_back(d->get());
               phases = PhasesArg(phases_arg);
             }
             const LoaderOptions o = ParseOptions<LoaderOptions>(kw);
             auto h = std::make_unique<LoaderHandle>();
             StatusOr<std::unique_ptr<Loader>> r = std::unique_ptr<Loader>();
             {
               py::gil_scoped_release nogil;
               r = !sources.empty()
                       ? Loader::Create(std::move(sources), o)
                       : Loader::Create(std::move(plain), std::move(phases), max_epochs, o);
             }
             h->loader = Unwrap(std::move(r));
             return h;
           }),
           py::arg("datasets"), py::arg("weights") = py::none(), py::arg("phases") = py::none(),
           py::arg("max_epochs") = std::vector<double>{})
      .def(
          "next", [](LoaderHandle& h, bool capsules) { return NextTuple(h, capsules); },
          py::arg("capsules") = false)
      .def("next_dict", &NextDict, py::arg("convert"), py::arg("capsules"))
      .def_property_readonly("next_seconds", &LoaderHandle::next_seconds)
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
      .def("stats", [](const LoaderHandle& h) { return StatsDict(h.loader->Stats()); })
      .def("explain", &ExplainList, py::arg("first"), py::arg("steps"));

  m.def("cuda_available", [] {
    std::string why;
    const bool ok = CudaAvailable(&why);
    return py::make_tuple(ok, why);
  });
}

}  // namespace tokpack
