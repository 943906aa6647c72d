// tokpack._core's view of the core's registries (input formats, and how a
// name given as an input reads), so the Python package asks the packer's own
// rules instead of copying them. The functions are pure and need no GIL
// release.
#ifndef TOKPACK_BINDINGS_PY_REGISTRIES_H_
#define TOKPACK_BINDINGS_PY_REGISTRIES_H_

#include <pybind11/pybind11.h>

namespace tokpack {

// Adds input_name_kind() and looks_like_input() to `m`.
void DefineRegistries(pybind11::module_& m);

}  // namespace tokpack

#endif  // TOKPACK_BINDINGS_PY_REGISTRIES_H_
