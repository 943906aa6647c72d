// Options: the declared-once description of an options struct (LoaderOptions,
// BuildOptions, DatasetOptions, StorageOptions), from which the CLI flags, the
// Python keyword arguments and attributes, the type stubs and the reading of
// the environment are generated.
//
// Every option has one entry: its name, type, default, documentation line and,
// for an enumeration, its choices. The entry also validates a value when it
// is set, so a bad value is refused with the option's name in the message
// wherever it came from (a flag, a keyword argument, a JSON file).
//
// OptionInfo and OptionValue are plain values, safe to copy between threads.
#ifndef TOKPACK_OPTIONS_H_
#define TOKPACK_OPTIONS_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "tokpack/status.h"

namespace tokpack {

enum class OptionType {
  kBool,
  kInt,   // A signed 64-bit integer.
  kUInt,  // An unsigned 64-bit integer (seeds, byte counts).
  kFloat,
  kString,  // Free text, or one of `choices` when that is not empty.
};

// A value as set by a caller: the binding and the CLI convert to these.
using OptionValue = std::variant<bool, int64_t, uint64_t, double, std::string>;

struct OptionInfo {
  std::string name;  // snake_case: the Python keyword and the JSON key.
  OptionType type = OptionType::kString;
  std::string default_text;  // The default, as FormatOptionValue writes it.
  std::string doc;           // One line, for --help, docstrings and stubs.
  std::vector<std::string> choices;
  // The CLI flag when it is not --name-with-dashes (e.g. "--bos" for
  // add_bos); a flag that starts with "--no-" sets the option to false.
  std::string flag;
  // Where FromEnvironment() takes the value from, in order, the first that
  // gives one winning: an environment variable's name (set and not empty),
  // "~/path" (the path under $HOME, when $HOME is set) or "/path" (that
  // path). Empty for an option the environment does not set.
  std::vector<std::string> env;
};

// "true"/"false", integers in decimal, floats with round-trip precision,
// strings as they are.
std::string FormatOptionValue(const OptionValue& value);

// The CLI flag of an option: info.flag, or "--" + name with '_' -> '-'.
std::string OptionFlag(const OptionInfo& info);

// How every integer range check words its range, in integers: "at least 1"
// when `max` is the type's largest value, else "between 1 and 64". Option
// tables and CLI flags say "<name> must be " + this + ", not <value>".
std::string DescribeIntRange(int64_t min, int64_t max);
std::string DescribeIntRange(uint64_t min, uint64_t max);

// Access by name to the options of a struct T (LoaderOptions, BuildOptions)
// through T's table: T derives from OptionSet<T>. Not thread-safe to set
// concurrently; a const T may be read from many threads.
template <typename T>
class OptionSet {
 public:
  // The declaration of every option of T, in order.
  static const std::vector<OptionInfo>& Describe();
  // Sets option `name`; InvalidArgument naming it for an unknown name, a
  // value of the wrong type or out of range (and nothing changes).
  Status Set(const std::string& name, const OptionValue& value);
  // As Set, from text (CLI flags, files).
  Status SetText(const std::string& name, const std::string& text);
  // The value of option `name`; InvalidArgument for an unknown name.
  StatusOr<OptionValue> Get(const std::string& name) const;
  // Every option as one JSON object line ({"seq_len": 2048, ...}).
  std::string ToJson() const;
  // Checks every field as Set would (for fields assigned directly).
  Status CheckFields() const;
};

}  // namespace tokpack

#endif  // TOKPACK_OPTIONS_H_
