// Dataset (documents as arrays, token reads) and Tokenizer.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
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
#include "tokpack/tokenizer.h"

namespace tokpack {

namespace py = pybind11;
using namespace py_convert;  // NOLINT: the module's own helpers.

void DefineDataset(py::module_& m) {
  py::class_<ForkSafe<Dataset>, std::shared_ptr<ForkSafe<Dataset>>>(m, "Dataset")
      .def(py::init([](const std::string& path, const std::optional<StorageOptions>& storage,
                       const py::kwargs& kw) {
             // A local dataset needs no storage settings: a bad variable
             // meant for remote reads does not stop it from opening.
             const StorageOptions options =
                 storage || IsRemoteUrl(path) ? StorageOrEnvironment(storage) : StorageOptions();
             const DatasetOptions open_options = ParseOptions<DatasetOptions>(kw);
             StatusOr<std::shared_ptr<Dataset>> ds =
                 RunInterruptibly(options, [&path, &open_options](const StorageOptions& o) {
                   return Dataset::Open(path, o, open_options);
                 });
             return std::make_shared<ForkSafe<Dataset>>(Unwrap(std::move(ds)));
           }),
           py::arg("path"), py::arg("storage") = py::none())
      .def_property_readonly("path", [](const ForkSafe<Dataset>& d) { return d.get()->path(); })
      .def_property_readonly("num_tokens",
                             [](const ForkSafe<Dataset>& d) { return d.get()->num_tokens(); })
      .def_property_readonly("num_documents",
                             [](const ForkSafe<Dataset>& d) { return d.get()->num_documents(); })
      .def_property_readonly("num_shards",
                             [](const ForkSafe<Dataset>& d) { return d.get()->num_shards(); })
      .def_property_readonly("dtype",
                             [](const ForkSafe<Dataset>& d) {
                               return d.get()->dtype() == TokenDtype::kUInt16 ? "uint16" : "int32";
                             })
      .def_property_readonly(
          "fingerprint",
          [](const ForkSafe<Dataset>& d) { return HashToHex(d.get()->fingerprint()); })
      .def_property_readonly(
          "manifest_json", [](const ForkSafe<Dataset>& d) { return d.get()->manifest().ToJson(); })
      .def("document",
           [](const std::shared_ptr<ForkSafe<Dataset>>& d, const py::object& index) {
             const uint64_t i = IntArg<uint64_t>(index, "document index");
             const Dataset& ds = *d->get();
             Array a;
             a.dtype = ds.dtype() == TokenDtype::kUInt16 ? DType('u', 16) : DType('i', 32);
             StatusOr<Dataset::TokenView> view = ds.DocumentView(i);
             if (view.ok()) {
               a.owner = std::make_shared<ForkSafe<const void>>(d->get());
               a.data = view->data;
               a.shape = {static_cast<int64_t>(view->length)};
               a.readonly = true;
               return a;
             }
             if (view.status().code() != StatusCode::kFailedPrecondition)
               ThrowStatus(view.status());
             // Not memory-resident: a copy, widened to int32.
             uint64_t offset = 0, length = 0;
             Check(ds.DocumentExtent(i, &offset, &length));
             auto copy = std::make_shared<std::vector<int32_t>>(length);
             Status read;
             {
               py::gil_scoped_release nogil;  // Remote reads can take a while.
               read = ds.ReadTokens(offset, length, copy->data());
             }
             Check(read);
             a.owner = std::make_shared<ForkSafe<const void>>(copy);
             a.data = copy->data();
             a.shape = {static_cast<int64_t>(length)};
             a.dtype = DType('i', 32);
             return a;
           })
      .def("document_extent",
           [](const ForkSafe<Dataset>& d, const py::object& index) {
             uint64_t offset = 0, length = 0;
             Check(d.get()->DocumentExtent(IntArg<uint64_t>(index, "document index"), &offset,
                                           &length));
             return py::make_tuple(offset, length);
           })
      .def(
          "read_tokens",
          [](const ForkSafe<Dataset>& d, const py::object& first, const py::object& n) {
            const uint64_t begin = IntArg<uint64_t>(first, "begin");
            const uint64_t count = IntArg<uint64_t>(n, "count");
            if (count > d.get()->num_tokens()) {
              ThrowStatus(OutOfRangeError("cannot read " + std::to_string(count) + " tokens from " +
                                          std::to_string(d.get()->num_tokens())));
            }
            auto copy = std::make_shared<std::vector<int64_t>>(count);
            Status s;
            {
              py::gil_scoped_release nogil;
              s = d.get()->ReadTokens(begin, count, copy->data());
            }
            Check(s);
            Array a;
            a.owner = std::make_shared<ForkSafe<const void>>(copy);
            a.data = copy->data();
            a.shape = {static_cast<int64_t>(count)};
            a.dtype = DType('i', 64);
            return a;
          })
      .def_property_readonly("has_sources",
                             [](const ForkSafe<Dataset>& d) { return d.get()->has_sources(); })
      .def("source",
           [](const ForkSafe<Dataset>& d, const py::object& index) {
             const uint64_t i = IntArg<uint64_t>(index, "document index");
             StatusOr<Dataset::DocumentSource> s = [&] {
               py::gil_scoped_release nogil;
               return d.get()->Source(i);
             }();
             Check(s.status());
             return py::make_tuple(s->input, s->input_path, s->record,
                                   s->has_id ? py::object(py::str(s->id)) : py::object(py::none()));
           })
      .def("input_paths",
           [](const ForkSafe<Dataset>& d) {
             StatusOr<std::vector<InputRecord>> inputs = [&] {
               py::gil_scoped_release nogil;
               return d.get()->Inputs();
             }();
             Check(inputs.status());
             std::vector<std::string> paths;
             for (const InputRecord& in : *inputs) paths.push_back(in.path);
             return paths;
           })
      .def("find_by_id",
           [](const ForkSafe<Dataset>& d, const std::string& id) {
             StatusOr<std::vector<uint64_t>> found = [&] {
               py::gil_scoped_release nogil;
               return d.get()->FindById(id);
             }();
             Check(found.status());
             return *found;
           })
      .def("find_by_record",
           [](const ForkSafe<Dataset>& d, const py::object& input, const py::object& record) {
             const uint64_t in = IntArg<uint64_t>(input, "input");
             const uint64_t rec = IntArg<uint64_t>(record, "line");
             StatusOr<std::optional<uint64_t>> found = [&] {
               py::gil_scoped_release nogil;
               return d.get()->FindByRecord(in, rec);
             }();
             Check(found.status());
             return *found;
           })
      .def_property_readonly("has_loss_masks",
                             [](const ForkSafe<Dataset>& d) { return d.get()->has_loss_masks(); })
      .def("read_loss_mask",
           [](const ForkSafe<Dataset>& d, const py::object& first, const py::object& n) {
             const uint64_t begin = IntArg<uint64_t>(first, "begin");
             const uint64_t count = IntArg<uint64_t>(n, "count");
             if (count > d.get()->num_tokens()) {
               ThrowStatus(OutOfRangeError("cannot read " + std::to_string(count) + " bits from " +
                                           std::to_string(d.get()->num_tokens()) + " tokens"));
             }
             auto copy = std::make_shared<std::vector<uint8_t>>(count);
             Status s;
             {
               py::gil_scoped_release nogil;
               s = d.get()->ReadLossMask(begin, count, copy->data());
             }
             Check(s);
             Array a;
             a.owner = std::make_shared<ForkSafe<const void>>(copy);
             a.data = copy->data();
             a.shape = {static_cast<int64_t>(count)};
             a.dtype = DType('u', 8);
             return a;
           });
  m.def("dataset_options", [] { return DescribeOptions(DatasetOptions::Describe()); });
  // Many datasets opened side by side (Dataset::OpenAll), as a Loader of
  // many sources does; storage settings as for Dataset(path).
  m.def(
      "open_datasets",
      [](const std::vector<std::string>& paths, const std::optional<StorageOptions>& storage,
         const py::kwargs& kw) {
        const bool remote = std::any_of(paths.begin(), paths.end(),
                                        [](const std::string& p) { return IsRemoteUrl(p); });
        const StorageOptions options =
            storage || remote ? StorageOrEnvironment(storage) : StorageOptions();
        const DatasetOptions open_options = ParseOptions<DatasetOptions>(kw);
        auto opened = Unwrap(RunInterruptibly(options, [&](const StorageOptions& o) {
          return Dataset::OpenAll(paths, o, open_options);
        }));
        std::vector<std::shared_ptr<ForkSafe<Dataset>>> out;
        out.reserve(opened.size());
        for (std::shared_ptr<Dataset>& d : opened) {
          out.push_back(std::make_shared<ForkSafe<Dataset>>(std::move(d)));
        }
        return out;
      },
      py::arg("paths"), py::arg("storage") = py::none());

  py::class_<Tokenizer>(m, "Tokenizer")
      .def(py::init([](const std::string& path, const std::string& pattern,
                       const py::object& special, const std::string& eos_token,
                       const std::string& bos_token) {
             TokenizerOptions o{pattern, SpecialTokensArg(special), eos_token, bos_token};
             StatusOr<std::unique_ptr<Tokenizer>> t = std::unique_ptr<Tokenizer>();
             {
               py::gil_scoped_release release;  // Check raises: only with the GIL.
               t = Tokenizer::Load(path, o);
             }
             // Not Unwrap(std::move(t)): GCC 12 then warns, wrongly, that the
             // moved unique_ptr may be uninitialized.
             Check(t.status());
             return std::move(t).value();
           }),
           py::arg("path"), py::arg("pattern"), py::arg("special"), py::arg("eos_token"),
           py::arg("bos_token"))
      .def_static(
          "from_dataset",
          [](const std::shared_ptr<ForkSafe<Dataset>>& ds,
             const std::optional<StorageOptions>& storage) {
            const Dataset& d = *ds->get();
            const StorageOptions options =
                storage || d.remote() ? StorageOrEnvironment(storage) : StorageOptions();
            return Unwrap(RunInterruptibly(
                options, [&d](const StorageOptions& o) { return LoadDatasetTokenizer(d, o); }));
          },
          py::arg("dataset"), py::arg("storage") = py::none())
      .def("encode",
           [](const Tokenizer& t, const std::string& text) {
             std::vector<int> ids;
             Status st;
             {
               py::gil_scoped_release release;
               st = t.Encode(text, &ids);
             }
             Check(st);
             return ids;
           })
      .def("decode_bytes",
           [](const Tokenizer& t, const py::object& ids) {
             return py::bytes(Unwrap(t.Decode(IntListArg<int>(ids, "ids"))));
           })
      .def_property_readonly("kind", [](const Tokenizer& t) { return t.info().type; })
      .def_property_readonly("vocab_size", [](const Tokenizer& t) { return t.info().vocab_size; })
      .def_property_readonly("bos_id", [](const Tokenizer& t) { return t.info().bos_id; })
      .def_property_readonly("eos_id", [](const Tokenizer& t) { return t.info().eos_id; })
      .def_property_readonly("pad_id", [](const Tokenizer& t) { return t.info().pad_id; })
      .def_property_readonly("unk_id", [](const Tokenizer& t) { return t.info().unk_id; });
}

}  // namespace tokpack
