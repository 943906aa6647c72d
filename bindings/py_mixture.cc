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
}

}  // namespace tokpack
