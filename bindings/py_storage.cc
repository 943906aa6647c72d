// StorageOptions: the settings of remote reads and object-store builds.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/py_convert.h"
#include "bindings/py_module.h"
#include "tokpack/storage.h"

namespace tokpack {

namespace py = pybind11;
using namespace py_convert;  // NOLINT: the module's own helpers.

void DefineStorage(py::module_& m) {
  py::class_<StorageOptions> storage_options(m, "StorageOptions");
  DefIntField(storage_options, "cache_bytes", &StorageOptions::cache_bytes);
  DefIntField(storage_options, "http_attempts", &StorageOptions::http_attempts);
  DefIntField(storage_options, "http_stall_seconds", &StorageOptions::http_stall_seconds);
  DefIntField(storage_options, "http_concurrency", &StorageOptions::http_concurrency);
  DefIntField(storage_options, "prefetch_threads", &StorageOptions::prefetch_threads);
  storage_options.def(py::init<>())
      .def_static("from_environment", [] { return Unwrap(StorageOptions::FromEnvironment()); })
      .def_readwrite("cache_dir", &StorageOptions::cache_dir)
      .def_readwrite("temp_dir", &StorageOptions::temp_dir)
      .def_readwrite("s3_endpoint", &StorageOptions::s3_endpoint)
      .def_readwrite("aws_region", &StorageOptions::aws_region)
      .def_readwrite("aws_access_key_id", &StorageOptions::aws_access_key_id)
      .def_readwrite("aws_secret_access_key", &StorageOptions::aws_secret_access_key)
      .def_readwrite("aws_session_token", &StorageOptions::aws_session_token)
      .def_readwrite("aws_profile", &StorageOptions::aws_profile)
      .def_readwrite("aws_shared_credentials_file", &StorageOptions::aws_shared_credentials_file)
      .def_readwrite("aws_config_file", &StorageOptions::aws_config_file)
      .def_readwrite("gcs_endpoint", &StorageOptions::gcs_endpoint)
      .def_readwrite("gs_access_key_id", &StorageOptions::gs_access_key_id)
      .def_readwrite("gs_secret_access_key", &StorageOptions::gs_secret_access_key);
}

}  // namespace tokpack
