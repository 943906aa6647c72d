// phases_by_name: phases named by source, checked and resolved by the core
// (tokpack/mixture.h) for python/tokpack/_phases.py; mixture_plan: the
// plan of a mixture (tokpack/mixture_plan.h) for python/tokpack/_plan.py.
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "bindings/py_convert.h"
#include "bindings/py_module.h"
#include "tokpack/mixture.h"
#include "tokpack/mixture_plan.h"

namespace py = pybind11;

namespace tokpack {
namespace {

// The bytes of `v`, for numpy.frombuffer: the plan's arrays cross once.
template <typename T>
py::bytes Bytes(const std::vector<T>& v) {
  return py::bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

}  // namespace

void DefineMixture(py::module_& m) {
  // Python has mapped its keys (names, paths, Datasets) to names and
  // checked the types; the rules and their messages are the core's.
  m.def(
      "phases_by_name",
      [](const std::vector<std::string>& names, const py::handle& phases) {
        std::vector<NamedPhase> named;
        size_t k = 0;
        for (const py::handle item : py::iter(phases)) {
          const auto t = item.cast<py::tuple>();
          const std::string where = "phases[" + std::to_string(k++) + "]";
          named.push_back(
              {py_convert::IntArg<int64_t>(t[0], where),
               t[1].cast<std::vector<std::pair<std::string, double>>>(),
               t.size() > 2 ? py_convert::IntArg<int64_t>(t[2], where + ".ramp_steps") : 0});
        }
        return PhasesList(py_convert::Unwrap(PhasesByName(names, named)));
      },
      py::arg("names"), py::arg("phases"),
      "[(start_step, [weight per source][, ramp_steps])] of [(start_step, [(name, weight)][, "
      "ramp_steps])]; ValueError "
      "naming the phase and the source if the phases break a rule (tokpack/mixture.h).");

  m.def(
      "mixture_plan",
      [](const std::vector<std::string>& names, const py::handle& phases,
         const std::vector<double>& max_epochs, const std::vector<uint64_t>& samples,
         uint64_t global_batch, int64_t steps, int64_t stride) {
        std::vector<MixturePhase> core;
        for (const py::handle item : py::iter(phases)) {
          const auto t = item.cast<py::tuple>();
          MixturePhase p{t[0].cast<int64_t>(), t[1].cast<std::vector<double>>(),
                         t.size() > 2 ? t[2].cast<int64_t>() : 0};
          core.push_back(std::move(p));
        }
        // Planning draws steps * global_batch positions: other threads run.
        StatusOr<MixturePlan> planned = [&] {
          py::gil_scoped_release release;
          return PlanMixture(names, core, max_epochs, samples, global_batch, steps, stride);
        }();
        const MixturePlan plan = py_convert::Unwrap(std::move(planned));
        py::list events;
        for (const MixtureEvent& e : plan.events) {
          events.append(py::make_tuple(MixtureEventName(e.kind), e.step, e.phase,
                                       e.kind == MixtureEvent::Kind::kCap
                                           ? py::object(py::int_(e.source))
                                           : py::object(py::none())));
        }
        py::dict out;
        out["steps"] = Bytes(plan.steps);
        out["phase"] = Bytes(std::vector<int64_t>(plan.phase.begin(), plan.phase.end()));
        out["planned"] = Bytes(plan.planned);
        out["drawn"] = Bytes(plan.drawn);
        out["events"] = events;
        return out;
      },
      py::arg("names"), py::arg("phases"), py::arg("max_epochs"), py::arg("samples"),
      py::arg("global_batch"), py::arg("steps"), py::arg("stride"),
      "The plan of a mixture (tokpack/mixture_plan.h): phases [(start_step, [weight per "
      "source], ramp_steps)], caps as max_epochs per source of `samples` each ([]: none). "
      "{steps, phase: int64 bytes, planned: float64 bytes, drawn: uint64 bytes (rows of one "
      "value per source), events: [(kind, step, phase, source or None)]}; ValueError for "
      "what the loader would refuse.");
}

}  // namespace tokpack
