#include "reader/cursor.h"

#include <simdjson.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tokpack/loader.h"
#include "tokpack/manifest.h"

namespace tokpack {
namespace {

std::string Double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

Status Bad(const std::string& what) {
  return InvalidArgumentError("invalid loader state: " + what);
}

}  // namespace

std::string Cursor::ToJson() const {
  // Compact on purpose: the state travels inside checkpoints.
  std::string out = "{\"tokpack_cursor\":" + std::to_string(kVersion) +
                    ",\"position\":" + std::to_string(position) +
                    ",\"seed\":" + std::to_string(seed) +
                    ",\"seq_len\":" + std::to_string(seq_len) + ",\"shuffle\":\"" + shuffle +
                    "\",\"block_size\":" + std::to_string(block_size) +
                    ",\"block_window\":" + std::to_string(block_window) +
                    ",\"window_chunks\":" + std::to_string(window_chunks) + ",\"sources\":[";
  for (size_t i = 0; i < sources.size(); ++i) {
    if (i) out += ',';
    out += "{\"fingerprint\":\"" + HashToHex(sources[i].fingerprint) +
           "\",\"weight\":" + Double(sources[i].weight) +
           ",\"consumed\":" + std::to_string(sources[i].consumed) + "}";
  }
  out += "]}";
  return out;
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
  if (version != kVersion) {
    return Bad("version " + std::to_string(version) + " is not supported (this tokpack reads " +
               std::to_string(kVersion) + ")");
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
  simdjson::dom::array arr;
  if (root["sources"].get_array().get(arr) != simdjson::SUCCESS) return Bad("no sources");
  for (simdjson::dom::element e : arr) {
    Source s;
    std::string_view fp;
    if (e["fingerprint"].get_string().get(fp) != simdjson::SUCCESS || fp.size() != 16 ||
        e["weight"].get_double().get(s.weight) != simdjson::SUCCESS ||
        e["consumed"].get_uint64().get(s.consumed) != simdjson::SUCCESS) {
      return Bad("malformed source entry");
    }
    s.fingerprint = std::strtoull(std::string(fp).c_str(), nullptr, 16);
    c.sources.push_back(s);
  }
  TOKPACK_RETURN_IF_ERROR(c.CheckReachable());
  return c;
}

Status Cursor::CheckReachable() const {
  if (position > kMaxPosition) {
    return Bad("position " + std::to_string(position) +
               " is past the last a loader reaches (2^63 - 1)");
  }
  uint64_t sum = 0;
  double weights = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string field = "sources[" + std::to_string(i) + "]";
    if (sources[i].consumed > position - sum) {  // sum <= position so far.
      return Bad(field + ".consumed " + std::to_string(sources[i].consumed) +
                 " takes the source counts past the position " + std::to_string(position));
    }
    sum += sources[i].consumed;
    if (!(sources[i].weight > 0) || !std::isfinite(sources[i].weight)) {
      return Bad(field + ".weight " + Double(sources[i].weight) + " is not positive and finite");
    }
    weights += sources[i].weight;
  }
  if (sum != position) {
    return Bad("the sources' consumed counts add up to " + std::to_string(sum) +
               ", not the position " + std::to_string(position));
  }
  if (!std::isfinite(weights)) return Bad("the sources' weights add up past the double range");
  // The schedule keeps each count within one draw of its share; the slack
  // covers the rounding of doubles at large positions.
  const double p = static_cast<double>(position);
  const double slack = 2 + p * 0x1p-40;
  for (size_t i = 0; i < sources.size(); ++i) {
    const double share = sources[i].weight / weights * p;
    if (std::fabs(static_cast<double>(sources[i].consumed) - share) > slack) {
      return Bad("sources[" + std::to_string(i) + "].consumed is " +
                 std::to_string(sources[i].consumed) + " at position " + std::to_string(position) +
                 ", but its weight draws about " + Double(std::round(share)) +
                 " there: the blend schedule never reaches these counts");
    }
  }
  return Status::Ok();
}

Status Cursor::CheckCompatible(const Cursor& saved) const {
  if (saved.sources.size() != sources.size()) {
    return Bad("it has " + std::to_string(saved.sources.size()) + " sources, this loader " +
               std::to_string(sources.size()));
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    if (saved.sources[i].fingerprint != sources[i].fingerprint) {
      return Bad("source " + std::to_string(i) + " is a different dataset (fingerprint " +
                 HashToHex(saved.sources[i].fingerprint) + ", this loader has " +
                 HashToHex(sources[i].fingerprint) + ")");
    }
    if (saved.sources[i].weight != sources[i].weight) {
      return Bad("source " + std::to_string(i) + " has weight " + Double(saved.sources[i].weight) +
                 ", this loader " + Double(sources[i].weight));
    }
  }
  if (saved.seed != seed) {
    return Bad("it was made with seed " + std::to_string(saved.seed) + ", this loader uses " +
               std::to_string(seed));
  }
  if (saved.seq_len != seq_len) {
    return Bad("it was made with seq_len " + std::to_string(saved.seq_len) + ", this loader uses " +
               std::to_string(seq_len));
  }
  if (saved.shuffle != shuffle || saved.block_size != block_size ||
      saved.block_window != block_window || saved.window_chunks != window_chunks) {
    return Bad("it was made with " + saved.OrderOptions() + ", this loader uses " + OrderOptions() +
               ": pass " + saved.OrderOptions() + " to resume it");
  }
  return Status::Ok();
}

std::string Cursor::OrderOptions() const {
  std::string out = "shuffle=\"" + shuffle + "\"";
  if (shuffle == "block") {
    out += ", block_size=" + std::to_string(block_size) +
           ", block_window=" + std::to_string(block_window);
  }
  if (shuffle == "window") out += ", window_chunks=" + std::to_string(window_chunks);
  return out;
}

}  // namespace tokpack
