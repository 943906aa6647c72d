// OptionTable<T>: the one declaration of an options struct's fields (see
// include/tokpack/options.h). Each entry couples an OptionInfo with a getter
// and a checking setter over a field of T, so setting by name from a flag, a
// keyword argument or JSON goes through the same validation.
//
// Entries are made with the builders below from an accessor lambda
// `[](auto& o) -> auto& { return o.field; }`, which reaches nested fields too.
// A table is immutable once built; share it as a function-local static.
#ifndef TOKPACK_SRC_BASE_OPTION_TABLE_H_
#define TOKPACK_SRC_BASE_OPTION_TABLE_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tokpack/options.h"
#include "tokpack/status.h"

namespace tokpack {

// Converts `v` to the option's type (integers widen to floats, non-negative
// integers cross between kInt and kUInt); InvalidArgument naming `name` if
// it does not fit.
StatusOr<OptionValue> CoerceOptionValue(const std::string& name, OptionType type,
                                        const OptionValue& v);
// Parses CLI text by type ("true"/"false"/"1"/"0" for bools).
StatusOr<OptionValue> ParseOptionText(const std::string& name, OptionType type,
                                      const std::string& text);
// The option names closest to `name`, for "unknown option" messages.
std::string SuggestOption(const std::string& name, const std::vector<OptionInfo>& infos);
// {"name": value, ...} on one line, in the order given.
std::string OptionsToJson(const std::vector<std::pair<std::string, OptionValue>>& values);
// InvalidArgument: "<name> must be one of 'a', 'b', not '<value>'".
Status NotAChoice(const std::string& name, const std::vector<std::string>& choices,
                  const std::string& value);

template <typename T>
class OptionTable {
 public:
  struct Entry {
    OptionInfo info;
    std::function<OptionValue(const T&)> get;
    // Receives a value already coerced to info.type.
    std::function<Status(T&, const OptionValue&)> set;
  };

  explicit OptionTable(std::vector<Entry> entries) : entries_(std::move(entries)) {
    const T defaults{};
    for (Entry& e : entries_) {
      e.info.default_text = FormatOptionValue(e.get(defaults));
      infos_.push_back(e.info);
    }
  }

  const std::vector<OptionInfo>& infos() const { return infos_; }

  Status Set(T& o, const std::string& name, const OptionValue& v) const {
    TOKPACK_ASSIGN_OR_RETURN(const Entry* e, Find(name));
    TOKPACK_ASSIGN_OR_RETURN(OptionValue typed, CoerceOptionValue(name, e->info.type, v));
    return e->set(o, typed);
  }
  Status SetText(T& o, const std::string& name, const std::string& text) const {
    TOKPACK_ASSIGN_OR_RETURN(const Entry* e, Find(name));
    TOKPACK_ASSIGN_OR_RETURN(OptionValue typed, ParseOptionText(name, e->info.type, text));
    return e->set(o, typed);
  }
  StatusOr<OptionValue> Get(const T& o, const std::string& name) const {
    TOKPACK_ASSIGN_OR_RETURN(const Entry* e, Find(name));
    return e->get(o);
  }
  // Every option and its value, in table order.
  std::vector<std::pair<std::string, OptionValue>> Values(const T& o) const {
    std::vector<std::pair<std::string, OptionValue>> out;
    for (const Entry& e : entries_) out.emplace_back(e.info.name, e.get(o));
    return out;
  }

 private:
  StatusOr<const Entry*> Find(const std::string& name) const {
    for (const Entry& e : entries_) {
      if (e.info.name == name) return &e;
    }
    return InvalidArgumentError("unknown option '" + name + "'" + SuggestOption(name, infos_));
  }

  std::vector<Entry> entries_;
  std::vector<OptionInfo> infos_;
};

// The table of T, defined (specialized) next to T's declaration of its
// options, which also instantiates OptionSet<T> there.
template <typename T>
const OptionTable<T>& OptionTableOf();

template <typename T>
const std::vector<OptionInfo>& OptionSet<T>::Describe() {
  return OptionTableOf<T>().infos();
}
template <typename T>
Status OptionSet<T>::Set(const std::string& name, const OptionValue& value) {
  return OptionTableOf<T>().Set(static_cast<T&>(*this), name, value);
}
template <typename T>
Status OptionSet<T>::SetText(const std::string& name, const std::string& text) {
  return OptionTableOf<T>().SetText(static_cast<T&>(*this), name, text);
}
template <typename T>
StatusOr<OptionValue> OptionSet<T>::Get(const std::string& name) const {
  return OptionTableOf<T>().Get(static_cast<const T&>(*this), name);
}
template <typename T>
std::string OptionSet<T>::ToJson() const {
  return OptionsToJson(OptionTableOf<T>().Values(static_cast<const T&>(*this)));
}
template <typename T>
Status OptionSet<T>::CheckFields() const {
  T fresh;
  for (const auto& [name, value] : OptionTableOf<T>().Values(static_cast<const T&>(*this))) {
    TOKPACK_RETURN_IF_ERROR(fresh.Set(name, value));
  }
  return Status::Ok();
}

// Builders. `ref` is an accessor lambda; `doc` one line.
template <typename T, typename Ref>
typename OptionTable<T>::Entry BoolOption(std::string name, std::string doc, Ref ref,
                                          std::string flag = "") {
  return {{name, OptionType::kBool, "", std::move(doc), {}, std::move(flag), {}},
          [ref](const T& o) -> OptionValue { return ref(o); },
          [ref](T& o, const OptionValue& v) {
            ref(o) = std::get<bool>(v);
            return Status::Ok();
          }};
}

// An integer field of any integral type, checked against [min, max].
template <typename T, typename Ref>
typename OptionTable<T>::Entry IntOption(std::string name, std::string doc, Ref ref, int64_t min,
                                         int64_t max) {
  return {{name, OptionType::kInt, "", std::move(doc), {}, "", {}},
          [ref](const T& o) -> OptionValue { return static_cast<int64_t>(ref(o)); },
          [ref, name, min, max](T& o, const OptionValue& v) {
            const int64_t x = std::get<int64_t>(v);
            if (x < min || x > max) {
              return InvalidArgumentError(name + " must be " + DescribeIntRange(min, max) +
                                          ", not " + std::to_string(x));
            }
            ref(o) = static_cast<std::remove_reference_t<decltype(ref(o))>>(x);
            return Status::Ok();
          }};
}

template <typename T, typename Ref>
typename OptionTable<T>::Entry UIntOption(std::string name, std::string doc, Ref ref,
                                          uint64_t min = 0) {
  return {{name, OptionType::kUInt, "", std::move(doc), {}, "", {}},
          [ref](const T& o) -> OptionValue { return static_cast<uint64_t>(ref(o)); },
          [ref, name, min](T& o, const OptionValue& v) {
            const uint64_t x = std::get<uint64_t>(v);
            if (x < min) {
              return InvalidArgumentError(name + " must be " + DescribeIntRange(min, UINT64_MAX) +
                                          ", not " + std::to_string(x));
            }
            ref(o) = x;
            return Status::Ok();
          }};
}

template <typename T, typename Ref>
typename OptionTable<T>::Entry StringOption(std::string name, std::string doc, Ref ref,
                                            std::vector<std::string> choices = {}) {
  return {{name, OptionType::kString, "", std::move(doc), choices, "", {}},
          [ref](const T& o) -> OptionValue { return ref(o); },
          [ref, name, choices](T& o, const OptionValue& v) {
            const std::string& s = std::get<std::string>(v);
            if (!choices.empty() && std::find(choices.begin(), choices.end(), s) == choices.end()) {
              return NotAChoice(name, choices, s);
            }
            ref(o) = s;
            return Status::Ok();
          }};
}

// An enumeration field named by strings: `names` pairs each name with its value.
template <typename T, typename E, typename Ref>
typename OptionTable<T>::Entry EnumOption(std::string name, std::string doc, Ref ref,
                                          std::vector<std::pair<std::string, E>> names) {
  std::vector<std::string> choices;
  for (const auto& n : names) choices.push_back(n.first);
  return {{name, OptionType::kString, "", std::move(doc), choices, "", {}},
          [ref, names](const T& o) -> OptionValue {
            for (const auto& n : names) {
              if (n.second == ref(o)) return n.first;
            }
            return std::string("?");
          },
          [ref, name, names, choices](T& o, const OptionValue& v) {
            const std::string& s = std::get<std::string>(v);
            for (const auto& n : names) {
              if (n.first == s) {
                ref(o) = n.second;
                return Status::Ok();
              }
            }
            return NotAChoice(name, choices, s);
          }};
}

}  // namespace tokpack

#endif  // TOKPACK_SRC_BASE_OPTION_TABLE_H_
