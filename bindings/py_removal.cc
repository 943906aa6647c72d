// Removed documents (removed.json, docs/format.md 17): what a Dataset says of
// them, and remove_documents, which edits a dataset's list.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings/py_array.h"
#include "bindings/py_convert.h"
#include "bindings/py_module.h"
#include "tokpack/dataset.h"
#include "tokpack/dataset_ops.h"
#include "tokpack/storage.h"

namespace tokpack {

namespace py = pybind11;
using namespace py_convert;  // NOLINT: the module's own helpers.

void DefineRemoval(py::module_& m) {
  // Dataset's class is made by DefineDataset; these add to it.
  py::class_<ForkSafe<Dataset>, std::shared_ptr<ForkSafe<Dataset>>>(m.attr("Dataset"))
      .def_property_readonly("num_removed",
                             [](const ForkSafe<Dataset>& d) { return d.get()->num_removed(); })
      .def_property_readonly("pad_token",
                             [](const ForkSafe<Dataset>& d) { return d.get()->pad_token(); })
      .def("is_removed", [](const ForkSafe<Dataset>& d, const py::object& index) {
        return d.get()->is_removed(IntArg<uint64_t>(index, "document index"));
      });
  // Returns the documents on the list afterwards. Storage settings as for
  // Dataset(path): a local dataset needs none.
  m.def(
      "remove_documents",
      [](const std::string& path, const std::vector<std::string>& ids, const py::object& documents,
         bool restore, const std::optional<StorageOptions>& storage) {
        RemovalRequest request;
        request.ids = ids;
        request.documents = IntListArg<uint64_t>(documents, "documents");
        request.restore = restore;
        const StorageOptions options =
            storage || IsRemoteUrl(path) ? StorageOrEnvironment(storage) : StorageOptions();
        const RemovalResult done =
            Unwrap(RunInterruptibly(options, [&path, &request](const StorageOptions& o) {
              return RemoveDocuments(path, o, request);
            }));
        return done.total;
      },
      py::arg("path"), py::arg("ids"), py::arg("documents"), py::arg("restore"),
      py::arg("storage") = py::none());
}

}  // namespace tokpack
