// The phases file's reader (tokpack/mixture.h): the JSON's shape and types
// here, with errors naming the field; the phase rules in ResolvePhases.
#include <simdjson.h>

#include <cmath>

#include "base/json_reader.h"
#include "reader/mixture_rules.h"
#include "tokpack/files.h"
#include "tokpack/mixture.h"

namespace tokpack {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Bounds on an untrusted file; a real mixture is far smaller. Its size is
// capped by kMaxPhasesFileBytes (tokpack/files.h).
constexpr size_t kMaxSources = 4096;
constexpr size_t kMaxPhases = 4096;

constexpr char kNotAField[] = "is not a field of a phases file here";

// A source given as {"path": ..., "split": "949,50,1", ...}: its dataset
// options as text, each checked here so that an error names the field.
Status ReadSourceObject(const JsonReader& o, MixtureSource* out) {
  std::string_view location;
  if (!o.Get("path", &location).ok() || location.empty()) {
    return o.Error("path", "is missing or not a path or URL (a non-empty string)");
  }
  out->location = std::string(location);
  DatasetOptions check;
  for (const auto& kv : o.obj()) {
    const std::string key(kv.key);
    if (key == "path") continue;
    if (key == "max_epochs") {
      if (kv.value.get_double().get(out->max_epochs) != simdjson::SUCCESS ||
          !(out->max_epochs > 0) || !std::isfinite(out->max_epochs)) {
        return o.Error(key, "is not a cap: a number of epochs > 0");
      }
      continue;
    }
    std::string text;
    std::string_view str;
    int64_t i = 0;
    bool b = false;
    if (kv.value.get_string().get(str) == simdjson::SUCCESS) {
      text = std::string(str);
    } else if (kv.value.get_int64().get(i) == simdjson::SUCCESS) {
      text = std::to_string(i);
    } else if (kv.value.get_bool().get(b) == simdjson::SUCCESS) {
      text = b ? "true" : "false";
    } else {
      return o.Error(key, "is not a string, integer or boolean");
    }
    if (Status st = check.SetText(key, text); !st.ok()) {
      return o.Error(key, "is refused: " + st.message());
    }
    out->options.emplace_back(key, std::move(text));
  }
  return Status::Ok();
}

Status ReadSources(const JsonReader& root, Mixture* out) {
  JsonReader sources;
  if (!root.Object("sources", &sources).ok()) {
    return root.Missing("sources", "an object {name: path or URL}");
  }
  for (const auto& kv : sources.obj()) {
    MixtureSource source;
    source.name = std::string(kv.key);
    object o;
    std::string_view location;
    if (kv.value.get_object().get(o) == simdjson::SUCCESS) {
      TOKPACK_RETURN_IF_ERROR(
          ReadSourceObject(JsonReader(o, sources.Path(kv.key), root.source()), &source));
    } else if (kv.value.get_string().get(location) == simdjson::SUCCESS && !location.empty()) {
      source.location = std::string(location);
    } else {
      return sources.Error(kv.key,
                           "is not a path or URL (a non-empty string) or an object {\"path\", "
                           "dataset options}");
    }
    for (const MixtureSource& seen : out->sources) {
      if (seen.name == source.name) return sources.Error(kv.key, "is given twice");
    }
    if (out->sources.size() == kMaxSources) {
      return root.Error("sources", "has more than " + std::to_string(kMaxSources) + " sources");
    }
    out->sources.push_back(std::move(source));
  }
  if (out->sources.empty()) return root.Error("sources", "is empty");
  return Status::Ok();
}

// One phase's shape and types; its values are ResolvePhases' to check.
Status ReadPhase(const JsonReader& p, NamedPhase* phase) {
  TOKPACK_RETURN_IF_ERROR(p.OnlyKeys({"start_step", "weights", "ramp_steps"}, kNotAField));
  if (!p.Get("start_step", &phase->start_step).ok()) {
    return p.Missing("start_step", "an integer >= 0");
  }
  if (p.Has("ramp_steps") && !p.Get("ramp_steps", &phase->ramp_steps).ok()) {
    return p.Error("ramp_steps", "is not an integer >= 0");
  }
  JsonReader weights;
  if (!p.Object("weights", &weights).ok()) {
    return p.Missing("weights", "an object {name: weight}");
  }
  for (const auto& kv : weights.obj()) {
    double w = 0;
    if (kv.value.get_double().get(w) != simdjson::SUCCESS) {
      return weights.Error(kv.key, "is not a number");
    }
    phase->weights.emplace_back(std::string(kv.key), w);
  }
  return Status::Ok();
}

Status ReadPhases(const JsonReader& root, std::vector<NamedPhase>* out) {
  array phases;
  if (!root.Array("phases", &phases).ok()) {
    return root.Missing("phases", "an array of {start_step, weights}");
  }
  size_t i = 0;
  for (element e : phases) {
    const std::string field = "phases[" + std::to_string(i) + "]";
    if (i++ == kMaxPhases) {
      return root.Error("phases", "has more than " + std::to_string(kMaxPhases) + " phases");
    }
    object o;
    if (e.get_object().get(o) != simdjson::SUCCESS) {
      return root.Error(field, "is not an object {start_step, weights}");
    }
    out->emplace_back();
    TOKPACK_RETURN_IF_ERROR(ReadPhase(JsonReader(o, field, root.source()), &out->back()));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Mixture> ParseMixtureJson(std::string_view json, const std::string& source) {
  if (json.size() > kMaxPhasesFileBytes) {
    return InvalidArgumentError(source + ": a phases file of over " +
                                std::to_string(kMaxPhasesFileBytes) + " bytes");
  }
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json);
  element e;
  if (auto err = parser.parse(padded).get(e); err != simdjson::SUCCESS) {
    return InvalidArgumentError(source + ": not JSON: " + simdjson::error_message(err));
  }
  object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) {
    return InvalidArgumentError(source + ": not a JSON object {\"sources\", \"phases\"}");
  }
  const JsonReader root(o, "", source);
  TOKPACK_RETURN_IF_ERROR(root.OnlyKeys({"sources", "phases"}, kNotAField));
  Mixture out;
  TOKPACK_RETURN_IF_ERROR(ReadSources(root, &out));
  std::vector<NamedPhase> phases;
  TOKPACK_RETURN_IF_ERROR(ReadPhases(root, &phases));
  TOKPACK_ASSIGN_OR_RETURN(out.phases,
                           ResolvePhases(out.Names(), phases, PhaseNaming::File(source)));
  return out;
}

StatusOr<Mixture> ReadMixtureFile(const std::string& path) {
  TOKPACK_ASSIGN_OR_RETURN(const std::string text,
                           ReadSmallFile(path, kMaxPhasesFileBytes, "a phases file"));
  return ParseMixtureJson(text, path);
}

}  // namespace tokpack
