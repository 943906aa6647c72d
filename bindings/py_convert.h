// Conversions at the Python boundary of tokpack._core: Status to Python
// exceptions (ThrowStatus, the one place), Python integers and option values
// to C++ with errors that name the argument, and the interruptible wait that
// every blocking call makes with the GIL released. Used by
// tokpack_module.cc only; call with the GIL held.
#ifndef TOKPACK_BINDINGS_PY_CONVERT_H_
#define TOKPACK_BINDINGS_PY_CONVERT_H_

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tokpack/options.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack::py_convert {

namespace py = pybind11;

// How often a blocked call wakes up to look for Ctrl-C.
inline constexpr double kSignalPollSeconds = 0.05;

[[noreturn]] inline void ThrowStatus(const Status& s) {
  PyObject* type = PyExc_RuntimeError;
  std::string message = s.message();
  switch (s.code()) {
    case StatusCode::kNotFound:
      type = PyExc_FileNotFoundError;
      break;
    case StatusCode::kInvalidArgument:
      type = PyExc_ValueError;
      break;
    case StatusCode::kOutOfRange:
      type = PyExc_IndexError;
      break;
    default:
      message = s.ToString();  // Keep the code name: "data_loss: ...".
  }
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

inline void Check(const Status& s) {
  if (!s.ok()) ThrowStatus(s);
}

template <typename T>
T Unwrap(StatusOr<T> r) {
  if (!r.ok()) ThrowStatus(r.status());
  return std::move(r).value();
}

// Every integer argument of the module comes through here: pybind's own
// conversion refuses one out of range with "incompatible function
// arguments" or "Unable to cast Python instance to C++ type '?'", naming
// neither the argument nor the range. TypeError when `v` is not an integer
// (anything with __index__ is), ValueError naming `name` outside T's range.
template <typename T>
T IntArg(const py::handle& v, const std::string& name) {
  if (!PyIndex_Check(v.ptr())) {
    PyErr_Format(PyExc_TypeError, "%s must be an integer, not %s", name.c_str(),
                 Py_TYPE(v.ptr())->tp_name);
    throw py::error_already_set();
  }
  const auto i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
  if (!i) throw py::error_already_set();
  using Limits = std::numeric_limits<T>;
  if (i < py::int_(Limits::min()) || i > py::int_(Limits::max())) {
    ThrowStatus(InvalidArgumentError(
        name + " must be an integer from " + std::to_string(Limits::min()) + " to " +
        std::to_string(Limits::max()) + ", not " + std::string(py::str(i))));
  }
  return i.cast<T>();
}

// A tuple's or sequence's integers, each checked as "name[k]".
template <typename T>
std::vector<T> IntListArg(const py::handle& v, const std::string& name) {
  std::vector<T> out;
  size_t k = 0;
  for (const py::handle item : py::iter(v)) {
    out.push_back(IntArg<T>(item, name + "[" + std::to_string(k++) + "]"));
  }
  return out;
}

// Special tokens as (text, id) pairs; ids checked as "special['text']".
inline std::vector<std::pair<std::string, int64_t>> SpecialTokensArg(const py::handle& v) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const py::handle item : py::iter(v)) {
    const auto pair = item.cast<std::pair<std::string, py::object>>();
    out.emplace_back(pair.first, IntArg<int64_t>(pair.second, "special['" + pair.first + "']"));
  }
  return out;
}

// An integer field of a bound struct, set through IntArg.
template <typename Class, typename T>
void DefIntField(py::class_<Class>& cls, const char* name, T Class::*field) {
  cls.def_property(
      name, [field](const Class& c) { return c.*field; },
      [field, name](Class& c, const py::object& v) { c.*field = IntArg<T>(v, name); });
}

// A Python value as an option value: bool, int, float or str.
inline OptionValue ToOptionValue(const std::string& name, const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (PyIndex_Check(v.ptr())) {  // int, numpy integers, anything with __index__.
    // Negative values as int64, others as uint64; the option's table
    // checks its own range then.
    if (py::int_(py::reinterpret_borrow<py::object>(v)) < py::int_(0)) {
      return IntArg<int64_t>(v, name);
    }
    return IntArg<uint64_t>(v, name);
  }
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  ThrowStatus(InvalidArgumentError(name + " must be a bool, int, float or str, not " +
                                   std::string(py::str(py::type::handle_of(v).attr("__name__")))));
}

// Options given as keyword arguments, set through the core's table (which
// names the option in every error).
template <typename Options>
Options ParseOptions(const py::dict& kw) {
  Options o;
  for (auto item : kw) {
    const std::string key = item.first.cast<std::string>();
    Check(o.Set(key, ToOptionValue(key, item.second)));
  }
  return o;
}

// Every option of `o` by name, as Python values.
template <typename Options>
py::dict OptionsDict(const Options& o) {
  py::dict d;
  for (const OptionInfo& info : Options::Describe()) {
    std::visit([&](const auto& v) { d[info.name.c_str()] = v; }, Unwrap(o.Get(info.name)));
  }
  return d;
}

// The table of an options struct as a list of dicts, for the Python layer
// (docstrings, signatures) and the stub generator.
inline py::list DescribeOptions(const std::vector<OptionInfo>& infos) {
  static const char* const kTypes[] = {"bool", "int", "int", "float", "str"};
  py::list out;
  for (const OptionInfo& info : infos) {
    py::dict d;
    d["name"] = info.name;
    d["type"] = kTypes[static_cast<int>(info.type)];
    d["default"] = info.default_text;
    d["doc"] = info.doc;
    d["choices"] = info.choices;
    d["flag"] = OptionFlag(info);
    d["env"] = info.env;
    out.append(d);
  }
  return out;
}

// The caller's storage settings, or by default those of the environment
// (TOKPACK_CACHE_DIR, AWS_*, ...), read now.
inline StorageOptions StorageOrEnvironment(const std::optional<StorageOptions>& storage) {
  return storage ? *storage : Unwrap(StorageOptions::FromEnvironment());
}

// Waits for `result` with the GIL released, waking every
// kSignalPollSeconds, and once it is ready, to call `poll` with the GIL held;
// `poll` raises to stop (KeyboardInterrupt from PyErr_CheckSignals, a
// progress callback's error). Then it sets `cancel`, waits for the work to
// end (it must not outlive the state it uses; everything it runs polls the
// flag) and rethrows. The one wait of every call that runs on a worker.
template <typename T>
T WaitInterruptibly(std::future<T>& result, std::atomic<bool>& cancel,
                    const std::function<void()>& poll) {
  while (true) {
    bool done = false;
    {
      py::gil_scoped_release nogil;
      done = result.wait_for(std::chrono::duration<double>(kSignalPollSeconds)) ==
             std::future_status::ready;
    }
    try {
      poll();
    } catch (...) {
      cancel.store(true);
      py::gil_scoped_release nogil;
      result.wait();
      throw;
    }
    if (done) return result.get();
  }
}

inline void CheckSignals() {
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

// Runs fn(options) on a worker thread; Ctrl-C sets the options' cancel flag
// (which stops their HTTP requests within about a second, lock waits and
// verify_on_open at once) and raises KeyboardInterrupt once fn has ended.
// For opening and reading datasets.
template <typename F>
auto RunInterruptibly(StorageOptions options, F fn) {
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  options.cancel = cancel;
  auto result = std::async(std::launch::async, [&fn, options] { return fn(options); });
  return WaitInterruptibly(result, *cancel, CheckSignals);
}

}  // namespace tokpack::py_convert

#endif  // TOKPACK_BINDINGS_PY_CONVERT_H_
