// The parts of tokpack._core, one per job, each defining its classes and
// functions on the module (tokpack_module.cc calls them in order).
#ifndef TOKPACK_BINDINGS_PY_MODULE_H_
#define TOKPACK_BINDINGS_PY_MODULE_H_

#include <pybind11/pybind11.h>

#include <vector>

#include "tokpack/loader.h"

namespace tokpack {

// Array: DLPack and buffer-protocol arrays, fork safety (py_array.cc).
void DefineArray(pybind11::module_& m);
// StorageOptions (py_storage.cc).
void DefineStorage(pybind11::module_& m);
// Dataset, Tokenizer and dataset_options (py_dataset.cc).
void DefineDataset(pybind11::module_& m);
// Loader, its options and stats, cuda_available, parse_device (py_loader.cc).
void DefineLoader(pybind11::module_& m);
// build and build_options: files, iterables and Arrow streams (py_build.cc).
void DefineBuild(pybind11::module_& m);
// The core's registries as the Python package asks them: input_name_kind()
// and looks_like_input() (py_registries.cc).
void DefineRegistries(pybind11::module_& m);
// phases_by_name: the core's mixture model for tokpack's phases (py_mixture.cc).
void DefineMixture(pybind11::module_& m);
// Removed documents: Dataset.num_removed, is_removed and pad_token, and
// remove_documents (py_removal.cc). After DefineDataset, whose class it adds to.
void DefineRemoval(pybind11::module_& m);
// A phase list as Python sees it: (start_step, [weights]), with ramp_steps
// third when it is > 0 (py_loader.cc).
pybind11::list PhasesList(const std::vector<MixturePhase>& phases);

}  // namespace tokpack

#endif  // TOKPACK_BINDINGS_PY_MODULE_H_
