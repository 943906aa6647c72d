// tokpack._core's mixture functions: phases named by source, checked and
// resolved by the core (tokpack/mixture.h) for python/tokpack/_phases.py.
#ifndef TOKPACK_BINDINGS_PY_MIXTURE_H_
#define TOKPACK_BINDINGS_PY_MIXTURE_H_

#include <pybind11/pybind11.h>

namespace tokpack {

// Adds phases_by_name() to the module.
void DefineMixture(pybind11::module_& m);

}  // namespace tokpack

#endif  // TOKPACK_BINDINGS_PY_MIXTURE_H_
