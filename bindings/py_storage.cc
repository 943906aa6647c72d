// StorageOptions: the settings of remote reads and object-store builds, one
// attribute per entry of the core's table (include/tokpack/storage.h), each
// set through that table's checks.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <variant>

#include "bindings/py_convert.h"
#include "bindings/py_module.h"
#include "tokpack/storage.h"

namespace tokpack {

namespace py = pybind11;
using namespace py_convert;  // NOLINT: the module's own helpers.

namespace {

// `v` as a value of `info`'s type; integers are range-checked for the type
// first, so that the error names the attribute.
OptionValue AttributeValue(const OptionInfo& info, const py::handle& v) {
  switch (info.type) {
    case OptionType::kInt:
      return IntArg<int64_t>(v, info.name);
    case OptionType::kUInt:
      return IntArg<uint64_t>(v, info.name);
    default:
      return ToOptionValue(info.name, v);
  }
}

}  // namespace

void DefineStorage(py::module_& m) {
  py::class_<StorageOptions> cls(m, "StorageOptions");
  cls.def(py::init<>()).def_static("from_environment", [] {
    return Unwrap(StorageOptions::FromEnvironment());
  });
  for (const OptionInfo& info : StorageOptions::Describe()) {
    cls.def_property(
        info.name.c_str(),
        [name = info.name](const StorageOptions& o) {
          return std::visit([](const auto& v) { return py::cast(v); }, Unwrap(o.Get(name)));
        },
        [info](StorageOptions& o, const py::handle& v) {
          Check(o.Set(info.name, AttributeValue(info, v)));
        },
        info.doc.c_str());
  }
  m.def("storage_options", [] { return DescribeOptions(StorageOptions::Describe()); });
}

}  // namespace tokpack
