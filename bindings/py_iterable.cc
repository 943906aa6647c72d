#include "bindings/py_iterable.h"

#include <cstdio>
#include <limits>
#include <utility>

#include "bindings/py_convert.h"

namespace py = pybind11;

namespace tokpack {
namespace {

// Why a str that PyUnicode_AsUTF8AndSize refused holds no text.
std::string SurrogateReason(PyObject* str) {
  const Py_ssize_t n = PyUnicode_GetLength(str);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const Py_UCS4 c = PyUnicode_ReadChar(str, i);
    if (c >= 0xD800 && c <= 0xDFFF) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "%04X", static_cast<unsigned>(c));
      return std::string("item is a str with a lone surrogate (U+") + hex +
             "), which has no UTF-8 form";
    }
  }
  return "item is a str that cannot be encoded as UTF-8";
}

// A dict as the JSONL line that holds it: json.dumps(item), or why it has
// none (a value JSON cannot hold, NaN). Its text_key field and loss spans
// are then read as a JSONL line's are, so a dict and its line in a file
// give the same document.
py::object DictAsJson(const py::handle& item, std::string* why) {
  // Leaked: a module-level object must not be destroyed after Python is.
  static py::object* dumps = new py::object(py::module_::import("json").attr("dumps"));
  try {
    return (*dumps)(item, py::arg("ensure_ascii") = false, py::arg("allow_nan") = false);
  } catch (py::error_already_set& e) {
    *why = std::string("item is a dict that JSON cannot hold (") + e.what() + ")";
    return py::object();
  }
}

// Adds `item` to `batch` as a text, a JSON record or a bad record; false if
// it does not fit beside what the batch holds (entry offsets are 32-bit).
StatusOr<bool> Add(const py::handle& item, TextBatch* batch) {
  const char* data = nullptr;
  Py_ssize_t size = 0;
  PyObject* p = item.ptr();
  py::object json;  // Keeps a dict's JSON alive while `data` points into it.
  if (PyDict_Check(p)) {
    std::string why;
    json = DictAsJson(item, &why);
    if (!json) {
      batch->Add(why, true);
      return true;
    }
    p = json.ptr();
  }
  if (PyUnicode_Check(p)) {
    data = PyUnicode_AsUTF8AndSize(p, &size);
    if (data == nullptr) {
      if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) throw py::error_already_set();
      PyErr_Clear();
      batch->Add(SurrogateReason(p), true);
      return true;
    }
  } else if (PyBytes_Check(p)) {
    data = PyBytes_AS_STRING(p);
    size = PyBytes_GET_SIZE(p);
  } else if (PyByteArray_Check(p)) {
    data = PyByteArray_AS_STRING(p);
    size = PyByteArray_GET_SIZE(p);
  } else {
    batch->Add(std::string("item is ") + (item.is_none() ? "None" : Py_TYPE(p)->tp_name) +
                   ", not str or dict",
               true);
    return true;
  }
  if (static_cast<size_t>(size) > std::numeric_limits<uint32_t>::max() - batch->data.size()) {
    if (batch->entries.empty()) return InvalidArgumentError("a single text of over 4 GiB");
    return false;
  }
  const std::string_view bytes(data, static_cast<size_t>(size));
  if (json) {
    batch->AddJson(bytes);
  } else {
    batch->Add(bytes);
  }
  return true;
}

}  // namespace

StatusOr<bool> PyIterableTexts::Next(size_t /*max_bytes*/, TextBatch* batch) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !queue_.empty() || finished_ || stopped_; });
  if (!queue_.empty()) {
    *batch = std::move(queue_.front());
    queue_.pop_front();
    cv_.notify_all();
    return true;
  }
  if (finished_) {
    TOKPACK_RETURN_IF_ERROR(end_);
    batch->Clear();
    return false;
  }
  return CancelledError(name() + ": cancelled");
}

void PyIterableTexts::Pump(const py::iterator& iterator, const std::function<void()>& poll) {
  TextBatch batch;
  auto started = std::chrono::steady_clock::now();
  while (true) {
    PyObject* next = PyIter_Next(iterator.ptr());
    if (next == nullptr) {
      if (PyErr_Occurred()) throw py::error_already_set();
      break;
    }
    const auto item = py::reinterpret_steal<py::object>(next);
    StatusOr<bool> added = Add(item, &batch);
    if (added.ok() && !*added) {
      // Over 4 GiB with the batch: the batch goes, the item starts the next.
      if (!Push(std::move(batch), poll)) return;
      batch = TextBatch();
      started = std::chrono::steady_clock::now();
      added = Add(item, &batch);
    }
    if (!added.ok()) return Finish(added.status());
    if (batch.data.size() >= kBatchBytes || batch.entries.size() >= kBatchEntries ||
        std::chrono::steady_clock::now() - started > kSlowItems) {
      if (!Push(std::move(batch), poll)) return;
      batch = TextBatch();
      started = std::chrono::steady_clock::now();
    }
  }
  if (!batch.entries.empty() && !Push(std::move(batch), poll)) return;
  Finish(Status::Ok());
}

bool PyIterableTexts::Push(TextBatch batch, const std::function<void()>& poll) {
  while (true) {
    bool room = false;
    {
      py::gil_scoped_release nogil;
      std::unique_lock<std::mutex> lock(mu_);
      room = cv_.wait_for(lock, std::chrono::duration<double>(py_convert::kSignalPollSeconds),
                          [&] { return stopped_ || queue_.size() < kQueuedBatches; });
      if (stopped_) return false;
      if (room) {
        queue_.push_back(std::move(batch));
        cv_.notify_all();
      }
    }
    poll();
    if (room) return true;
  }
}

void PyIterableTexts::Finish(Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  end_ = std::move(status);
  cv_.notify_all();
}

void PyIterableTexts::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  cv_.notify_all();
}

}  // namespace tokpack
