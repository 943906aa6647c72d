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
//
// The module is defined in parts, one per job (py_module.h).
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "bindings/py_convert.h"
#include "bindings/py_module.h"
#include "tokpack/files.h"
#include "tokpack/loader.h"
#include "tokpack/version.h"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  using namespace tokpack;
  using namespace tokpack::py_convert;  // NOLINT: the module's own helpers.
  m.doc() = "tokpack's C++ core. Use the tokpack package, not this module.";
  m.attr("__version__") = Version();
  DefineArray(m);
  DefineStorage(m);
  DefineDataset(m);
  DefineLoader(m);
  DefineBuild(m);
  DefineRegistries(m);
  DefineMixture(m);
  DefineRemoval(m);
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
