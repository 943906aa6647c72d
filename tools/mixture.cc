#include "tools/mixture.h"

#include <simdjson.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace tokpack::cli {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Bounds on an untrusted file; a real mixture is far smaller. Its size is
// capped by kMaxPhasesFileBytes (tokpack/files.h).
constexpr size_t kMaxSources = 4096;
constexpr size_t kMaxPhases = 4096;

// Errors naming the file and the field, as the manifest reader words them.
class Fields {
 public:
  explicit Fields(const std::string& source) : source_(source) {}
  Status Error(const std::string& field, const std::string& what) const {
    return InvalidArgumentError(source_ + ": field '" + field + "' " + what);
  }
  // Only `allowed` keys, each once: a misspelled or repeated one is an
  // error, not ignored.
  Status Keys(const object& o, const std::string& field,
              const std::vector<std::string>& allowed) const {
    std::vector<std::string_view> seen;
    for (const auto& kv : o) {
      for (std::string_view k : seen) {
        if (k == kv.key) return Error(Join(field, std::string(kv.key)), "is given twice");
      }
      seen.push_back(kv.key);
      bool known = false;
      for (const std::string& k : allowed) known = known || kv.key == k;
      if (!known) {
        return Error(Join(field, std::string(kv.key)), "is not a field of a phases file here");
      }
    }
    return Status::Ok();
  }
  static std::string Join(const std::string& field, const std::string& key) {
    return field.empty() ? key : field + "." + key;
  }

 private:
  const std::string& source_;
};

// A source given as {"path": ..., "split": "949,50,1", ...}: the path, and
// its dataset options as text, each checked here so that an error names
// the field.
Status ReadSourceObject(const Fields& f, const object& o, const std::string& field,
                        std::string_view* location,
                        std::vector<std::pair<std::string, std::string>>* options) {
  if (o["path"].get_string().get(*location) != simdjson::SUCCESS || location->empty()) {
    return f.Error(field + ".path", "is missing or not a path or URL (a non-empty string)");
  }
  DatasetOptions check;
  for (const auto& kv : o) {
    const std::string key(kv.key);
    if (key == "path") continue;
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
      return f.Error(Fields::Join(field, key), "is not a string, integer or boolean");
    }
    if (Status st = check.SetText(key, text); !st.ok()) {
      return f.Error(Fields::Join(field, key), "is refused: " + st.message());
    }
    options->emplace_back(key, std::move(text));
  }
  return Status::Ok();
}

Status ReadSources(const Fields& f, const object& root, MixtureFile* out) {
  object sources;
  if (root["sources"].get_object().get(sources) != simdjson::SUCCESS) {
    return f.Error("sources", "is missing or not an object {name: path or URL}");
  }
  for (const auto& kv : sources) {
    const std::string name(kv.key);
    const std::string field = "sources." + name;
    std::string_view location;
    std::vector<std::pair<std::string, std::string>> options;
    object o;
    if (kv.value.get_object().get(o) == simdjson::SUCCESS) {
      TOKPACK_RETURN_IF_ERROR(ReadSourceObject(f, o, field, &location, &options));
    } else if (kv.value.get_string().get(location) != simdjson::SUCCESS || location.empty()) {
      return f.Error(field,
                     "is not a path or URL (a non-empty string) or an object {\"path\", "
                     "dataset options}");
    }
    for (const std::string& seen : out->names) {
      if (seen == name) return f.Error(field, "is given twice");
    }
    if (out->names.size() == kMaxSources) {
      return f.Error("sources", "has more than " + std::to_string(kMaxSources) + " sources");
    }
    out->names.push_back(name);
    out->locations.emplace_back(location);
    out->options.push_back(std::move(options));
  }
  if (out->names.empty()) return f.Error("sources", "is empty");
  return Status::Ok();
}

Status ReadWeights(const Fields& f, const object& weights, const std::string& field,
                   const MixtureFile& file, MixturePhase* phase) {
  phase->weights.assign(file.names.size(), 0.0);
  std::vector<bool> given(file.names.size(), false);
  bool any = false;
  for (const auto& kv : weights) {
    const std::string name(kv.key);
    const std::string where = field + "." + name;
    size_t s = 0;
    while (s < file.names.size() && file.names[s] != name) ++s;
    if (s == file.names.size()) {
      std::string known;
      for (const std::string& n : file.names) known += (known.empty() ? "" : ", ") + n;
      return f.Error(where, "names no source (the sources are " + known + ")");
    }
    if (given[s]) return f.Error(where, "is given twice");
    double w = 0;
    if (kv.value.get_double().get(w) != simdjson::SUCCESS) {
      return f.Error(where, "is not a number");
    }
    if (!std::isfinite(w) || w < 0) {
      return f.Error(where, "is " + ShortestDouble(w) + "; weights must be finite and >= 0");
    }
    given[s] = true;
    phase->weights[s] = w;
    any = any || w > 0;
  }
  if (!any) return f.Error(field, "has no positive weight: a phase needs at least one source");
  return Status::Ok();
}

Status ReadPhases(const Fields& f, const object& root, MixtureFile* out) {
  array phases;
  if (root["phases"].get_array().get(phases) != simdjson::SUCCESS) {
    return f.Error("phases", "is missing or not an array of {start_step, weights}");
  }
  size_t i = 0;
  for (element e : phases) {
    const std::string field = "phases[" + std::to_string(i) + "]";
    if (i++ == kMaxPhases) {
      return f.Error("phases", "has more than " + std::to_string(kMaxPhases) + " phases");
    }
    object o;
    if (e.get_object().get(o) != simdjson::SUCCESS) {
      return f.Error(field, "is not an object {start_step, weights}");
    }
    TOKPACK_RETURN_IF_ERROR(f.Keys(o, field, {"start_step", "weights"}));
    MixturePhase phase;
    if (o["start_step"].get_int64().get(phase.start_step) != simdjson::SUCCESS ||
        phase.start_step < 0) {
      return f.Error(field + ".start_step", "is missing or not an integer >= 0");
    }
    if (out->phases.empty() && phase.start_step != 0) {
      return f.Error(field + ".start_step",
                     "is " + std::to_string(phase.start_step) + "; the first phase starts at 0");
    }
    if (!out->phases.empty() && phase.start_step <= out->phases.back().start_step) {
      return f.Error(field + ".start_step",
                     "is " + std::to_string(phase.start_step) + ", not after the " +
                         std::to_string(out->phases.back().start_step) + " before it");
    }
    object weights;
    if (o["weights"].get_object().get(weights) != simdjson::SUCCESS) {
      return f.Error(field + ".weights", "is missing or not an object {name: weight}");
    }
    TOKPACK_RETURN_IF_ERROR(ReadWeights(f, weights, field + ".weights", *out, &phase));
    out->phases.push_back(std::move(phase));
  }
  if (out->phases.empty()) return f.Error("phases", "is empty");
  return Status::Ok();
}

std::string Epochs(uint64_t samples, uint64_t per_epoch) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f",
                per_epoch ? static_cast<double>(samples) / static_cast<double>(per_epoch) : 0.0);
  return buf;
}

}  // namespace

StatusOr<MixtureFile> ParseMixtureJson(std::string_view json, const std::string& source) {
  if (json.size() > kMaxPhasesFileBytes) {
    return InvalidArgumentError(source + ": a phases file of over " +
                                std::to_string(kMaxPhasesFileBytes) + " bytes");
  }
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json);
  element root;
  if (auto err = parser.parse(padded).get(root); err != simdjson::SUCCESS) {
    return InvalidArgumentError(source + ": not JSON: " + simdjson::error_message(err));
  }
  object o;
  if (root.get_object().get(o) != simdjson::SUCCESS) {
    return InvalidArgumentError(source + ": not a JSON object {\"sources\", \"phases\"}");
  }
  const Fields f(source);
  TOKPACK_RETURN_IF_ERROR(f.Keys(o, "", {"sources", "phases"}));
  MixtureFile out;
  TOKPACK_RETURN_IF_ERROR(ReadSources(f, o, &out));
  TOKPACK_RETURN_IF_ERROR(ReadPhases(f, o, &out));
  return out;
}

StatusOr<MixtureFile> ReadMixtureFile(const std::string& path) {
  TOKPACK_ASSIGN_OR_RETURN(const std::string text,
                           ReadSmallFile(path, kMaxPhasesFileBytes, "a phases file"));
  return ParseMixtureJson(text, path);
}

StatusOr<Mixture> OpenMixtureFile(const std::string& path, const StorageOptions& storage,
                                  const DatasetOptions& defaults) {
  TOKPACK_ASSIGN_OR_RETURN(MixtureFile file, ReadMixtureFile(path));
  Mixture m;
  for (size_t s = 0; s < file.locations.size(); ++s) {
    DatasetOptions options = defaults;
    for (const auto& [key, text] : file.options[s]) {
      TOKPACK_RETURN_IF_ERROR(options.SetText(key, text));  // Checked while reading.
    }
    StatusOr<std::shared_ptr<Dataset>> ds = Dataset::Open(file.locations[s], storage, options);
    if (!ds.ok()) return ds.status().WithContext(path + ": source '" + file.names[s] + "'");
    m.datasets.push_back(*std::move(ds));
  }
  m.names = std::move(file.names);
  m.phases = std::move(file.phases);
  return m;
}

void PrintMixtureSummary(const std::vector<std::string>& names, const LoaderStats& stats,
                         const std::vector<uint64_t>& samples_per_source) {
  std::printf("summary (global counts, all ranks, from the start of the data):\n");
  for (size_t s = 0; s < stats.sources.size() && s < names.size(); ++s) {
    const SourceStats& x = stats.sources[s];
    std::printf(
        "source %s: samples %llu, tokens %llu, epochs %s (%llu completed, %llu "
        "samples into the current one)\n",
        names[s].c_str(), static_cast<unsigned long long>(x.samples),
        static_cast<unsigned long long>(x.tokens), Epochs(x.samples, samples_per_source[s]).c_str(),
        static_cast<unsigned long long>(x.epochs_completed),
        static_cast<unsigned long long>(x.epoch_samples));
  }
  for (size_t k = 0; k < stats.phases.size(); ++k) {
    const PhaseStats& p = stats.phases[k];
    std::string weights, samples;
    for (size_t s = 0; s < names.size() && s < p.weights.size() && s < p.samples.size(); ++s) {
      weights += " " + names[s] + "=" + ShortestDouble(p.weights[s]);
      samples += " " + names[s] + "=" + std::to_string(p.samples[s]);
    }
    std::printf("phase %zu: start_step %lld, start_position %llu, weights%s, samples%s\n", k,
                static_cast<long long>(p.start_step),
                static_cast<unsigned long long>(p.start_position), weights.c_str(),
                samples.c_str());
  }
}

void WriteMixtureJson(const std::vector<std::string>& names, const LoaderStats& stats,
                      const std::vector<uint64_t>& samples_per_source, JsonWriter* w) {
  w->BeginObject("mixture");
  w->BeginArray("sources");
  for (size_t s = 0; s < stats.sources.size() && s < names.size(); ++s) {
    const SourceStats& x = stats.sources[s];
    w->BeginObject();
    w->String("name", names[s]);
    w->UInt("samples", x.samples);
    w->UInt("tokens", x.tokens);
    w->UInt("epochs_completed", x.epochs_completed);
    w->UInt("epoch_samples", x.epoch_samples);
    w->Double("epochs", samples_per_source[s] ? static_cast<double>(x.samples) /
                                                    static_cast<double>(samples_per_source[s])
                                              : 0.0);
    w->EndObject();
  }
  w->EndArray();
  w->BeginArray("phases");
  for (const PhaseStats& p : stats.phases) {
    w->BeginObject();
    w->Int("start_step", p.start_step);
    w->UInt("start_position", p.start_position);
    w->BeginObject("weights");
    for (size_t s = 0; s < names.size() && s < p.weights.size(); ++s)
      w->Double(names[s], p.weights[s]);
    w->EndObject();
    w->BeginObject("samples");
    for (size_t s = 0; s < names.size() && s < p.samples.size(); ++s)
      w->UInt(names[s], p.samples[s]);
    w->EndObject();
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();
}

}  // namespace tokpack::cli
