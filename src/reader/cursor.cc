#include "reader/cursor.h"

#include <simdjson.h>

#include <cmath>
#include <cstdlib>

#include "tokpack/json_writer.h"
#include "tokpack/manifest.h"

namespace tokpack {
namespace {

bool IsHex(std::string_view s) {
  for (char ch : s) {
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F'))) {
      return false;
    }
  }
  return true;
}

// Reads a JSON array of at most Cursor::kMaxEntries numbers of type T.
template <typename T>
bool ReadArray(simdjson::dom::element e, std::vector<T>* out) {
  simdjson::dom::array arr;
  if (e.get_array().get(arr) != simdjson::SUCCESS || arr.size() > Cursor::kMaxEntries) return false;
  for (simdjson::dom::element v : arr) {
    T x;
    if (v.get<T>().get(x) != simdjson::SUCCESS) return false;
    out->push_back(x);
  }
  return true;
}

}  // namespace

Status Cursor::Bad(const std::string& what) {
  return InvalidArgumentError("invalid loader state: " + what);
}

Cursor Cursor::Of(const LoaderOptions& o, const std::vector<Loader::Source>& sources,
                  const std::vector<MixturePhase>& phases, const std::vector<uint64_t>& caps,
                  const MixtureState& state) {
  Cursor c;
  c.seed = o.seed;
  c.seq_len = o.seq_len;
  c.shuffle = std::get<std::string>(*o.Get("shuffle"));
  c.block_size = o.shuffle == ShuffleMode::kBlock ? static_cast<uint64_t>(o.block_size) : 0;
  c.block_window = o.shuffle == ShuffleMode::kBlock ? static_cast<uint64_t>(o.block_window) : 0;
  c.window_chunks = o.shuffle == ShuffleMode::kWindow ? static_cast<uint64_t>(o.window_chunks) : 0;
  c.packing = std::get<std::string>(*o.Get("packing"));
  c.max_docs_per_sequence =
      o.packing == Packing::kBestFit ? static_cast<uint64_t>(o.max_docs_per_sequence) : 0;
  c.allow_mixed_tokenizers = o.allow_mixed_tokenizers;
  c.position = state.Position();
  c.step = state.step;
  const std::vector<uint64_t> totals = state.Totals(sources.size());
  for (size_t s = 0; s < sources.size(); ++s) {
    c.sources.push_back({sources[s].dataset->fingerprint(), totals[s], caps[s]});
  }
  for (size_t j = 0; j < state.phases.size(); ++j) {
    const MixturePhase& p = phases[j];
    c.phases.push_back(
        {p.start_step, p.weights, state.phases[j].counts, p.ramp_steps, state.phases[j].ramp});
  }
  c.run = state.run;
  return c;
}

std::string Cursor::ToJson() const {
  // Compact on purpose: the state travels inside checkpoints.
  const bool packed = packing != "concat";
  bool scheduled = false;
  for (const Source& s : sources) scheduled = scheduled || s.cap != kNoCap;
  for (const Phase& p : phases) scheduled = scheduled || p.ramp_steps > 0;
  scheduled = scheduled || !run.empty();
  const int version = scheduled ? kScheduleVersion : packed ? kPackedVersion : kVersion;
  std::string out = "{\"tokpack_cursor\":" + std::to_string(version) +
                    ",\"position\":" + std::to_string(position);
  if (step >= 0) out += ",\"step\":" + std::to_string(step);
  out += ",\"seed\":" + std::to_string(seed) + ",\"seq_len\":" + std::to_string(seq_len) +
         ",\"shuffle\":\"" + shuffle + "\",\"block_size\":" + std::to_string(block_size) +
         ",\"block_window\":" + std::to_string(block_window) +
         ",\"window_chunks\":" + std::to_string(window_chunks);
  // Concat cursors stay as they were before packing existed.
  if (packed) {
    out += ",\"packing\":\"" + packing +
           "\",\"max_docs_per_sequence\":" + std::to_string(max_docs_per_sequence);
  }
  if (allow_mixed_tokenizers) out += ",\"allow_mixed_tokenizers\":true";
  out += ",\"sources\":[";
  for (size_t i = 0; i < sources.size(); ++i) {
    if (i) out += ',';
    out += "{\"fingerprint\":\"" + HashToHex(sources[i].fingerprint) +
           "\",\"consumed\":" + std::to_string(sources[i].consumed);
    if (sources[i].cap != kNoCap) out += ",\"cap\":" + std::to_string(sources[i].cap);
    out += "}";
  }
  out += "],\"phases\":[";
  for (size_t j = 0; j < phases.size(); ++j) {
    if (j) out += ',';
    out += "{\"start_step\":" + std::to_string(phases[j].start_step) + ",\"weights\":[";
    for (size_t s = 0; s < phases[j].weights.size(); ++s) {
      out += (s ? "," : "") + ShortestDouble(phases[j].weights[s]);
    }
    out += "],\"counts\":[";
    for (size_t s = 0; s < phases[j].counts.size(); ++s) {
      out += (s ? "," : "") + std::to_string(phases[j].counts[s]);
    }
    out += "]";
    if (phases[j].ramp_steps > 0) {
      out += ",\"ramp_steps\":" + std::to_string(phases[j].ramp_steps) +
             ",\"ramp\":" + std::to_string(phases[j].ramp);
    }
    out += "}";
  }
  out += "]";
  if (!run.empty()) {
    out += ",\"run\":[";
    for (size_t s = 0; s < run.size(); ++s) out += (s ? "," : "") + std::to_string(run[s]);
    out += "]";
  }
  return out + "}";
}

StatusOr<Cursor> Cursor::Parse(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS) {
    return Bad("not JSON");
  }
  Cursor c;
  int64_t version = 0;
  if (root["tokpack_cursor"].get_int64().get(version) != simdjson::SUCCESS) {
    return Bad("not a tokpack loader state (no 'tokpack_cursor' version)");
  }
  if (version < 1 || version > kScheduleVersion) {
    return Bad("version " + std::to_string(version) +
               " is not supported (this tokpack reads 1 to " + std::to_string(kScheduleVersion) +
               ")");
  }
  std::string_view shuffle;
  if (root["position"].get_uint64().get(c.position) != simdjson::SUCCESS ||
      root["seed"].get_uint64().get(c.seed) != simdjson::SUCCESS ||
      root["seq_len"].get_int64().get(c.seq_len) != simdjson::SUCCESS ||
      root["shuffle"].get_string().get(shuffle) != simdjson::SUCCESS ||
      root["block_size"].get_uint64().get(c.block_size) != simdjson::SUCCESS ||
      root["block_window"].get_uint64().get(c.block_window) != simdjson::SUCCESS) {
    return Bad("missing or mistyped position, seed, seq_len, shuffle or block fields");
  }
  // Absent from version 1 and from cursors converted from it: unknown.
  simdjson::dom::element step;
  if (version >= kVersion && root["step"].get(step) == simdjson::SUCCESS &&
      (step.get_int64().get(c.step) != simdjson::SUCCESS || c.step < 0)) {
    return Bad("step is not a step number (an integer >= 0)");
  }
  // Absent from cursors made before shuffle="window".
  simdjson::dom::element window;
  if (root["window_chunks"].get(window) == simdjson::SUCCESS &&
      window.get_uint64().get(c.window_chunks) != simdjson::SUCCESS) {
    return Bad("window_chunks is not an unsigned integer");
  }
  if ((shuffle == "window") != (c.window_chunks > 0) || shuffle == "auto") {
    return Bad("shuffle '" + std::string(shuffle) + "' with window_chunks " +
               std::to_string(c.window_chunks) +
               " is not an order a loader saves (\"window\" has a positive window_chunks, the "
               "other modes 0; \"auto\" is saved as the mode it chose)");
  }
  // The loader's option table knows the mode names.
  LoaderOptions names;
  if (Status s = names.Set("shuffle", std::string(shuffle)); !s.ok()) return Bad(s.message());
  c.shuffle = std::string(shuffle);
  // Absent from cursors made before packing (and from concat ones).
  simdjson::dom::element packing, max_docs;
  if (root["packing"].get(packing) == simdjson::SUCCESS) {
    std::string_view mode;
    if (packing.get_string().get(mode) != simdjson::SUCCESS) return Bad("packing is not a string");
    if (Status s = names.Set("packing", std::string(mode)); !s.ok()) return Bad(s.message());
    c.packing = std::string(mode);
  }
  if (version != kScheduleVersion && (version == kPackedVersion) != (c.packing != "concat")) {
    return Bad(
        "version " + std::to_string(version) + " with packing '" + c.packing +
        "' is not a state a loader saves (a packed state is version 3 or 4, a concat one 1, 2 "
        "or 4)");
  }
  if (root["max_docs_per_sequence"].get(max_docs) == simdjson::SUCCESS &&
      (max_docs.get_uint64().get(c.max_docs_per_sequence) != simdjson::SUCCESS ||
       c.max_docs_per_sequence > INT32_MAX ||
       (c.max_docs_per_sequence > 0 && c.packing != "best_fit"))) {
    return Bad(
        "max_docs_per_sequence is not a cap a loader saves (an integer up to 2^31 - 1, "
        "0 unless packing is \"best_fit\")");
  }
  // Absent unless true.
  simdjson::dom::element mixed;
  if (root["allow_mixed_tokenizers"].get(mixed) == simdjson::SUCCESS &&
      mixed.get_bool().get(c.allow_mixed_tokenizers) != simdjson::SUCCESS) {
    return Bad("allow_mixed_tokenizers is not a boolean");
  }
  simdjson::dom::array arr;
  if (root["sources"].get_array().get(arr) != simdjson::SUCCESS) return Bad("no sources");
  if (arr.size() > kMaxEntries) {
    return Bad(std::to_string(arr.size()) + " sources, more than the " +
               std::to_string(kMaxEntries) + " a loader saves");
  }
  Phase v1;  // Version 1: the sources' weights and counts, one phase at step 0.
  for (simdjson::dom::element e : arr) {
    Source s;
    std::string_view fp;
    if (e["fingerprint"].get_string().get(fp) != simdjson::SUCCESS || fp.size() != 16 ||
        !IsHex(fp) || e["consumed"].get_uint64().get(s.consumed) != simdjson::SUCCESS) {
      return Bad("malformed source entry");
    }
    if (version == 1) {
      double w = 0;
      if (e["weight"].get_double().get(w) != simdjson::SUCCESS)
        return Bad("malformed source entry");
      v1.weights.push_back(w);
      v1.counts.push_back(s.consumed);
    }
    simdjson::dom::element cap;
    if (e["cap"].get(cap) == simdjson::SUCCESS &&
        (version < kScheduleVersion || cap.get_uint64().get(s.cap) != simdjson::SUCCESS ||
         s.cap == 0 || s.cap == kNoCap)) {
      return Bad("sources[" + std::to_string(c.sources.size()) +
                 "].cap is not a cap a loader saves (a positive integer, in version 4)");
    }
    s.fingerprint = std::strtoull(std::string(fp).c_str(), nullptr, 16);
    c.sources.push_back(s);
  }
  if (version == 1) {
    c.phases.push_back(std::move(v1));
  } else {
    if (root["phases"].get_array().get(arr) != simdjson::SUCCESS) return Bad("no phases");
    if (arr.size() > kMaxEntries) {
      return Bad(std::to_string(arr.size()) + " phases, more than the " +
                 std::to_string(kMaxEntries) + " a loader saves");
    }
    for (simdjson::dom::element e : arr) {
      Phase p;
      simdjson::dom::element weights, counts;
      if (e["start_step"].get_int64().get(p.start_step) != simdjson::SUCCESS ||
          e["weights"].get(weights) != simdjson::SUCCESS ||
          e["counts"].get(counts) != simdjson::SUCCESS || !ReadArray(weights, &p.weights) ||
          !ReadArray(counts, &p.counts)) {
        return Bad("malformed phase entry (phases[" + std::to_string(c.phases.size()) + "])");
      }
      simdjson::dom::element ramp_steps, ramp;
      const bool has_steps = e["ramp_steps"].get(ramp_steps) == simdjson::SUCCESS;
      if (has_steps != (e["ramp"].get(ramp) == simdjson::SUCCESS) ||
          (has_steps && (version < kScheduleVersion ||
                         ramp_steps.get_int64().get(p.ramp_steps) != simdjson::SUCCESS ||
                         ramp.get_uint64().get(p.ramp) != simdjson::SUCCESS || p.ramp_steps <= 0 ||
                         p.ramp == 0 || p.ramp > kMaxPosition))) {
        return Bad("phases[" + std::to_string(c.phases.size()) +
                   "] has no ramp a loader saves (ramp_steps and ramp together, positive, "
                   "in version 4)");
      }
      c.phases.push_back(std::move(p));
    }
    simdjson::dom::element run;
    if (root["run"].get(run) == simdjson::SUCCESS &&
        (version < kScheduleVersion || !ReadArray(run, &c.run) || c.run.empty())) {
      return Bad("run is not a run a loader saves (the draws of each source, in version 4)");
    }
  }
  if (version == kScheduleVersion) {
    bool scheduled = false;
    for (const Source& s : c.sources) scheduled = scheduled || s.cap != kNoCap;
    for (const Phase& p : c.phases) scheduled = scheduled || p.ramp_steps > 0;
    if (!scheduled) {
      return Bad("version 4 without a ramp or a cap is not a state a loader saves");
    }
  }
  TOKPACK_RETURN_IF_ERROR(c.CheckReachable());
  // Nothing begun yet: a version 1 cursor at position 0 names no phase.
  if (version == 1 && c.position == 0) c.phases.clear();
  return c;
}

Status Cursor::CheckReachable() const {
  if (position > kMaxPosition) {
    return Bad("position " + std::to_string(position) +
               " is past the last a loader reaches (2^63 - 1)");
  }
  if (step >= 0 && (static_cast<uint64_t>(step) > position || (step == 0) != (position == 0))) {
    return Bad("step " + std::to_string(step) + " is not a step number of position " +
               std::to_string(position) + " (0 exactly at position 0, at most one per position)");
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].consumed > position - sum) {  // sum <= position so far.
      return Bad("sources[" + std::to_string(i) + "].consumed " +
                 std::to_string(sources[i].consumed) +
                 " takes the source counts past the position " + std::to_string(position));
    }
    sum += sources[i].consumed;
  }
  if (sum != position) {
    return Bad("the sources' consumed counts add up to " + std::to_string(sum) +
               ", not the position " + std::to_string(position));
  }
  if (position > 0 && phases.empty()) {
    return Bad("no phases at position " + std::to_string(position));
  }
  std::vector<uint64_t> totals(sources.size(), 0);
  uint64_t drawn = 0;
  for (size_t j = 0; j < phases.size(); ++j) {
    const std::string field = "phases[" + std::to_string(j) + "]";
    if (j == 0 && phases[j].start_step != 0) {
      return Bad(field + ".start_step is " + std::to_string(phases[j].start_step) +
                 "; the first phase starts at step 0");
    }
    if (j > 0 && phases[j].start_step <= phases[j - 1].start_step) {
      return Bad(field + ".start_step " + std::to_string(phases[j].start_step) +
                 " does not follow phases[" + std::to_string(j - 1) + "].start_step " +
                 std::to_string(phases[j - 1].start_step) + ": start steps increase");
    }
    if (phases[j].ramp_steps > 0 && j == 0) {
      return Bad(field + " ramps, but the first phase has nothing to ramp from");
    }
    if (phases[j].weights.size() != sources.size() || phases[j].counts.size() != sources.size()) {
      return Bad(field + " has " + std::to_string(phases[j].weights.size()) + " weights and " +
                 std::to_string(phases[j].counts.size()) + " counts for " +
                 std::to_string(sources.size()) + " sources");
    }
    for (size_t s = 0; s < sources.size(); ++s) {
      if (phases[j].counts[s] > position - drawn) {  // drawn <= position so far.
        return Bad(field + ".counts[" + std::to_string(s) + "] " +
                   std::to_string(phases[j].counts[s]) +
                   " takes the phases' counts past the position " + std::to_string(position));
      }
      drawn += phases[j].counts[s];
    }
    TOKPACK_RETURN_IF_ERROR(CheckPhase(j, totals));
    for (size_t s = 0; s < sources.size(); ++s) totals[s] += phases[j].counts[s];
    if (step >= 0 && phases[j].start_step >= step) {
      return Bad(field + ".start_step " + std::to_string(phases[j].start_step) +
                 " is not before the step " + std::to_string(step) +
                 ": a phase that has begun started at an earlier step");
    }
  }
  for (size_t s = 0; s < sources.size(); ++s) {
    if (totals[s] != sources[s].consumed) {
      return Bad("sources[" + std::to_string(s) + "].consumed is " +
                 std::to_string(sources[s].consumed) + " at position " + std::to_string(position) +
                 ", but its counts in the phases add up to " + std::to_string(totals[s]));
    }
    if (totals[s] > sources[s].cap) {
      return Bad("sources[" + std::to_string(s) + "].consumed " + std::to_string(totals[s]) +
                 " is past its cap of " + std::to_string(sources[s].cap) + " draws");
    }
  }
  return CheckCapRun(totals);
}

Status Cursor::CheckCapRun(const std::vector<uint64_t>& totals) const {
  if (run.empty()) return Status::Ok();
  if (phases.empty() || run.size() != sources.size()) {
    return Bad("run has " + std::to_string(run.size()) + " counts for " +
               std::to_string(sources.size()) + " sources and " + std::to_string(phases.size()) +
               " phases begun");
  }
  const Phase& last = phases.back();
  std::vector<uint64_t> before(sources.size());  // The totals when the run began.
  uint64_t offset = 0;
  bool reached = false;  // A source reached its cap in the phase before the run.
  for (size_t s = 0; s < sources.size(); ++s) {
    if (run[s] > last.counts[s]) {
      return Bad("run[" + std::to_string(s) + "] " + std::to_string(run[s]) +
                 " is more than the draws of the phase drawing now, " +
                 std::to_string(last.counts[s]));
    }
    before[s] = totals[s] - run[s];
    offset += last.counts[s] - run[s];
    reached = reached || (before[s] >= sources[s].cap &&
                          before[s] - (last.counts[s] - run[s]) < sources[s].cap);
  }
  if (!reached) {
    return Bad(
        "run: no source reached its cap in the phase drawing now before the run began "
        "(a run begins when one does)");
  }
  return CheckRun(phases.size() - 1, run, offset, before);
}

Status Cursor::CheckPhase(size_t j, const std::vector<uint64_t>& totals) const {
  const Phase& phase = phases[j];
  const std::string field = "phases[" + std::to_string(j) + "]";
  double weights = 0;
  for (size_t s = 0; s < phase.weights.size(); ++s) {
    if (!(phase.weights[s] >= 0) || !std::isfinite(phase.weights[s])) {
      return Bad(field + ".weights[" + std::to_string(s) + "] " + ShortestDouble(phase.weights[s]) +
                 " is not finite and >= 0");
    }
    weights += phase.weights[s];
  }
  if (!(weights > 0) || !std::isfinite(weights)) {
    return Bad(field + ".weights " + FormatWeights(phase.weights) +
               " do not add up to a positive finite sum");
  }
  // A phase in which a source reached its cap was drawn in runs whose
  // counts the cursor does not keep (but the current run's): its counts are
  // only bounded by its length, and by the run's check (CheckCapRun).
  bool runs = false;
  for (size_t s = 0; s < sources.size(); ++s) {
    runs = runs || (totals[s] < sources[s].cap && totals[s] + phase.counts[s] >= sources[s].cap);
  }
  if (!runs) return CheckRun(j, phase.counts, 0, totals);
  for (size_t s = 0; s < sources.size(); ++s) {
    if ((phase.weights[s] == 0 || totals[s] >= sources[s].cap) && phase.counts[s] != 0) {
      return Bad(field + ".counts[" + std::to_string(s) + "] is " +
                 std::to_string(phase.counts[s]) + ", but the source has weight " +
                 ShortestDouble(phase.weights[s]) +
                 (phase.weights[s] == 0 ? "" : " and had reached its cap") + " there");
    }
  }
  return Status::Ok();
}

Status Cursor::CheckRun(size_t j, const std::vector<uint64_t>& counts, uint64_t offset,
                        const std::vector<uint64_t>& totals) const {
  const Phase& phase = phases[j];
  const std::string field = "phases[" + std::to_string(j) + "]";
  // The run's curve, as the schedule draws it: the sources at their cap
  // when it began left out, ramping from the phase before.
  std::vector<bool> capped(sources.size());
  for (size_t s = 0; s < sources.size(); ++s) capped[s] = totals[s] >= sources[s].cap;
  MixturePhase previous;
  if (j > 0) previous = {phases[j - 1].start_step, phases[j - 1].weights};
  const ShareCurve curve = RunCurve(j > 0 ? &previous : nullptr, {phase.start_step, phase.weights},
                                    capped, phase.ramp, offset);
  uint64_t length = 0;  // No overflow: CheckReachable bounded the counts.
  for (uint64_t c : counts) length += c;
  // The schedule keeps each count within one draw of its share of the
  // run; the slack covers the rounding of doubles at large positions.
  const double len = static_cast<double>(length);
  const double slack = 2 + len * 0x1p-40;
  for (size_t s = 0; s < counts.size(); ++s) {
    const double share = curve.Share(s, len);
    const double count = static_cast<double>(counts[s]);
    if ((!curve.Present(s) && counts[s] != 0) || std::fabs(count - share) > slack) {
      return Bad(field + ".counts[" + std::to_string(s) + "] is " + std::to_string(counts[s]) +
                 " in a phase of " + std::to_string(length) + " positions, but its weight " +
                 ShortestDouble(phase.weights[s]) + (capped[s] ? " (capped)" : "") +
                 " draws about " + ShortestDouble(std::round(share)) +
                 " there: the phase schedule never reaches these counts");
    }
  }
  return Status::Ok();
}

}  // namespace tokpack
