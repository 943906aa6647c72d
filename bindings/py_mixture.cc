// phases_by_name: phases named by source, checked and resolved by the core
// (tokpack/mixture.h) for python/tokpack/_phases.py.
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "bindings/py_convert.h"
#include "bindings/py_module.h"
#include "tokpack/mixture.h"

namespace py = pybind11;

namespace tokpack {

void DefineMixture(py::module_& m) {
  // Python has mapped its keys (names, paths, Datasets) to names and
  // checked the types; the rules and their messages are the core's.
  m.def(
      "phases_by_name",
      [](const std::vector<std::string>& names, const py::handle& phases) {
        std::vector<NamedPhase> named;
        size_t k = 0;
        for (const py::handle item : py::iter(phases)) {
          const auto pair =
              item.cast<std::pair<py::object, std::vector<std::pair<std::string, double>>>>();
          named.push_back(
              {py_convert::IntArg<int64_t>(pair.first, "phases[" + std::to_string(k++) + "]"),
               pair.second});
        }
        py::list out;
        for (const MixturePhase& p : py_convert::Unwrap(PhasesByName(names, named))) {
          out.append(py::make_tuple(p.start_step, p.weights));
        }
        return out;
      },
      py::arg("names"), py::arg("phases"),
      "[(start_step, [weight per source])] of [(start_step, [(name, weight)])]; ValueError "
      "naming the phase and the source if the phases break a rule (tokpack/mixture.h).");
}

}  // namespace tokpack
