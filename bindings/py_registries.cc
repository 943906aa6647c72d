// input_name_kind and looks_like_input: the packer's own rules for which names
// are inputs, so the Python package asks them instead of copying them. Pure
// functions: no GIL release.
#include <string>

#include "bindings/py_module.h"
#include "frontend/registry_names.h"

namespace tokpack {
namespace {

namespace py = pybind11;

// Any str, lone surrogates included (a text in a list may hold one, and a
// path decoded with surrogateescape does): the rules look at ASCII only, so
// how those encode does not matter, but a failed conversion would raise.
std::string Utf8Of(const py::str& name) {
  PyObject* bytes = PyUnicode_AsEncodedString(name.ptr(), "utf-8", "surrogatepass");
  if (bytes == nullptr) throw py::error_already_set();
  return std::string(py::reinterpret_steal<py::bytes>(bytes));
}

}  // namespace

void DefineRegistries(py::module_& m) {
  m.def(
      "input_name_kind",
      [](const py::str& name) { return std::string(InputNameKind(Utf8Of(name))); }, py::arg("name"),
      "How the packer takes `name` as an input from its text alone: 'stdin', 'url' (an "
      "object-store or HTTP URL), 'glob', or ''.");
  m.def(
      "looks_like_input", [](const py::str& name) { return LooksLikeInputFile(Utf8Of(name)); },
      py::arg("name"),
      "Whether `name` ends like an input file of some format (in any case, optionally "
      "compressed): a name meant as a path, never as a text.");
}

}  // namespace tokpack
