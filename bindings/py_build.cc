// build: a build from files, a Python iterable of texts or an Arrow stream,
// on a worker thread that Ctrl-C cancels.
#include <pthread.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <signal.h>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bindings/py_convert.h"
#include "bindings/py_iterable.h"
#include "bindings/py_module.h"
#include "frontend/arrow_stream_source.h"
#include "tokpack/builder.h"
#include "tokpack/storage.h"

namespace tokpack {
namespace {

namespace py = pybind11;
using namespace py_convert;  // NOLINT: the module's own helpers.

// The texts of an object with __arrow_c_stream__ (the Arrow PyCapsule
// interface): the stream is moved out of its capsule, then read on the
// packer's reader thread without the GIL.
std::shared_ptr<TextSource> ArrowTextSource(const py::object& obj, const std::string& text_key) {
  py::object capsule = obj.attr("__arrow_c_stream__")();
  void* stream = PyCapsule_GetPointer(capsule.ptr(), "arrow_array_stream");
  if (stream == nullptr) throw py::error_already_set();  // Not an "arrow_array_stream" capsule.
  return Unwrap(MakeArrowStreamTextSource(stream, text_key, "<arrow stream>"));
}

// Runs a build on a worker thread so the caller can poll for Ctrl-C, which
// cancels it (the build then leaves nothing behind). When `texts` is not
// null, the items of `iterator` are pulled into it here, on the calling
// thread, where a blocking iterable sees Ctrl-C (py_iterable.h); its
// exception, or KeyboardInterrupt, cancels the build and is raised unchanged
// once the build has ended.
std::string RunBuild(BuildOptions o, const py::object& progress,
                     const std::shared_ptr<PyIterableTexts>& texts, const py::iterator& iterator) {
  std::atomic<bool> cancel{false};
  o.cancel = UnownedCancelFlag(&cancel);
  std::mutex mu;
  std::vector<BuildProgress> reports;  // Handed to `progress` from this thread.
  if (!progress.is_none()) {
    o.progress = [&](const BuildProgress& p) {
      std::lock_guard<std::mutex> lock(mu);
      reports.push_back(p);
    };
  }
  auto result = std::async(std::launch::async, [&o, texts] {
    // The build's threads (this one and those it starts) take no signal
    // sent to the process: the kernel may give SIGINT to any thread that
    // does, and Python would then only note it, leaving a generator blocked
    // in a read on the calling thread (seen about once in ten tries). Faults
    // stay the faulting thread's own (sanitizers report them).
    sigset_t sent;
    sigfillset(&sent);
    for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&sent, fault);
    pthread_sigmask(SIG_BLOCK, &sent, nullptr);
    StatusOr<BuildSummary> summary = Build(o);
    if (texts) texts->Stop();  // Stops pulling texts it will not read.
    return summary;
  });
  const auto poll = [&] {
    std::vector<BuildProgress> pending;
    {
      std::lock_guard<std::mutex> lock(mu);
      pending.swap(reports);
    }
    for (const BuildProgress& p : pending) {
      py::dict d;
      d["bytes_read"] = p.bytes_read;
      d["bytes_total"] = p.bytes_total;
      d["documents"] = p.documents;
      d["tokens"] = p.tokens;
      d["elapsed_seconds"] = p.elapsed_seconds;
      progress(d);
    }
    CheckSignals();
  };
  if (texts) {
    try {
      texts->Pump(iterator, poll);
    } catch (...) {
      cancel.store(true);
      texts->Stop();
      py::gil_scoped_release nogil;
      result.wait();
      throw;
    }
  }
  return Unwrap(WaitInterruptibly(result, cancel, poll)).manifest.ToJson();
}

}  // namespace

void DefineBuild(py::module_& m) {
  // The settings come as keyword arguments, set through BuildOptions' table.
  m.def(
      "build",
      [](const std::vector<std::string>& inputs, const std::string& output,
         const std::string& tokenizer_model, const std::string& pattern, const py::object& special,
         const std::string& eos_token, const std::string& bos_token, const py::object& progress,
         const py::object& texts, const py::object& arrow_stream,
         const std::optional<StorageOptions>& storage, const py::kwargs& settings) {
        BuildOptions o = ParseOptions<BuildOptions>(settings);
        o.inputs = inputs;
        o.storage = StorageOrEnvironment(storage);
        std::shared_ptr<PyIterableTexts> iterable;
        py::iterator iterator;
        if (!arrow_stream.is_none()) {
          o.texts = ArrowTextSource(arrow_stream, o.settings.text_key);
        } else if (!texts.is_none()) {
          iterator = py::iter(texts);
          iterable = std::make_shared<PyIterableTexts>();
          o.texts = iterable;
        }
        o.output = output;
        o.tokenizer_model = tokenizer_model;
        o.tokenizer_options =
            TokenizerOptions{pattern, SpecialTokensArg(special), eos_token, bos_token};
        return RunBuild(std::move(o), progress, iterable, iterator);
      },
      py::arg("inputs"), py::arg("output"), py::arg("tokenizer_model"), py::arg("pattern"),
      py::arg("special"), py::arg("eos_token"), py::arg("bos_token"), py::arg("progress"),
      py::arg("texts") = py::none(), py::arg("arrow_stream") = py::none(),
      py::arg("storage") = py::none());
  m.def("build_options", [] { return DescribeOptions(BuildOptions::Describe()); });
}

}  // namespace tokpack
