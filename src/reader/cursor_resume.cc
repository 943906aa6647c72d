// The resume side of Cursor (cursor.h): whether a saved state fits the
// loader that loads it, and the schedule state it continues from.
#include <string>
#include <vector>

#include "reader/cursor.h"
#include "tokpack/json_writer.h"
#include "tokpack/manifest.h"

namespace tokpack {

Status Cursor::CheckCompatible(const Cursor& saved) const {
  for (size_t i = 0; i < saved.sources.size(); ++i) {
    if (i >= sources.size()) {
      return Bad("it has " + std::to_string(saved.sources.size()) + " sources, this loader " +
                 std::to_string(sources.size()) + ": source " + std::to_string(i) +
                 " (fingerprint " + HashToHex(saved.sources[i].fingerprint) +
                 ") is missing; a resume may append datasets, not drop them (give a dataset "
                 "weight 0 in a new phase instead)");
    }
    if (saved.sources[i].fingerprint != sources[i].fingerprint) {
      return Bad("source " + std::to_string(i) + " is a different dataset (fingerprint " +
                 HashToHex(saved.sources[i].fingerprint) + ", this loader has " +
                 HashToHex(sources[i].fingerprint) + ")");
    }
  }
  for (size_t i = 0; i < saved.sources.size(); ++i) {
    if (saved.sources[i].cap != sources[i].cap) {
      const auto cap = [](uint64_t c) {
        return c == kNoCap ? std::string("no cap") : "a cap of " + std::to_string(c) + " draws";
      };
      return Bad("source " + std::to_string(i) + " had " + cap(saved.sources[i].cap) +
                 ", this loader gives it " + cap(sources[i].cap) +
                 ": pass the same max_epochs to resume it (caps decide the order)");
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
  if (saved.packing != packing || saved.max_docs_per_sequence != max_docs_per_sequence) {
    return Bad("it was made with " + saved.PackingOptions() + ", this loader uses " +
               PackingOptions() + ": pass " + saved.PackingOptions() +
               " to resume it (the samples are other ones)");
  }
  if (saved.allow_mixed_tokenizers != allow_mixed_tokenizers) {
    const auto option = [](bool allow) {
      return std::string("allow_mixed_tokenizers=") + (allow ? "true" : "false");
    };
    return Bad("it was made with " + option(saved.allow_mixed_tokenizers) + ", this loader uses " +
               option(allow_mixed_tokenizers) + ": pass " + option(saved.allow_mixed_tokenizers) +
               " to resume it");
  }
  if (saved.shuffle != shuffle || saved.block_size != block_size ||
      saved.block_window != block_window || saved.window_chunks != window_chunks) {
    return Bad("it was made with " + saved.OrderOptions() + ", this loader uses " + OrderOptions() +
               ": pass " + saved.OrderOptions() + " to resume it");
  }
  return Status::Ok();
}

Status Cursor::CheckPhases(const std::vector<MixturePhase>& loader) const {
  const size_t n = loader.empty() ? sources.size() : loader[0].weights.size();
  // The begun phases as the loader would list them (absent sources at 0).
  std::vector<MixturePhase> begun;
  for (const Phase& p : phases) {
    begun.push_back({p.start_step, p.weights, p.ramp_steps});
    begun.back().weights.resize(n, 0);
  }
  const auto refuse = [&](const std::string& what) {
    return InvalidArgumentError(
        "at step " + std::to_string(step) + ", " + what +
        "; phases the run began cannot change: pass phases=" + FormatPhases(begun) +
        " (weights in dataset order), then any phases at steps >= " + std::to_string(step));
  };
  for (size_t j = 0; j < begun.size(); ++j) {
    const std::string name = PhaseName(j, begun[j].start_step);
    if (j >= loader.size()) return refuse("the run began " + name + ", which this loader lacks");
    if (loader[j].start_step != begun[j].start_step || loader[j].weights != begun[j].weights) {
      return refuse("the run began " + name + " with weights " + FormatWeights(begun[j].weights) +
                    ", this loader has " + PhaseName(j, loader[j].start_step) + " with weights " +
                    FormatWeights(loader[j].weights));
    }
    if (loader[j].ramp_steps != begun[j].ramp_steps) {
      return refuse("the run began " + name + " with ramp_steps " +
                    std::to_string(begun[j].ramp_steps) + ", this loader's has ramp_steps " +
                    std::to_string(loader[j].ramp_steps));
    }
  }
  const size_t j = begun.size();
  if (j < loader.size() && loader[j].start_step < step) {
    return refuse("this loader's " + PhaseName(j, loader[j].start_step) + " with weights " +
                  FormatWeights(loader[j].weights) + " starts before step " + std::to_string(step) +
                  ", but the run did not begin it");
  }
  return Status::Ok();
}

StatusOr<MixtureState> Cursor::Resume(std::string_view json,
                                      const std::vector<MixturePhase>& loader,
                                      uint64_t global_batch) const {
  TOKPACK_ASSIGN_OR_RETURN(Cursor saved, Parse(json));
  TOKPACK_RETURN_IF_ERROR(CheckCompatible(saved));
  if (saved.step < 0) {
    saved.step =
        static_cast<int64_t>(saved.position / global_batch + (saved.position % global_batch != 0));
  }
  TOKPACK_RETURN_IF_ERROR(saved.CheckPhases(loader));
  MixtureState state;
  state.step = saved.step;
  for (const Phase& p : saved.phases) {
    state.phases.push_back({p.counts, p.ramp});
    state.phases.back().counts.resize(sources.size(), 0);
  }
  state.run = saved.run;
  if (!state.run.empty()) state.run.resize(sources.size(), 0);
  return state;
}

std::string Cursor::PackingOptions() const {
  std::string out = "packing=\"" + packing + "\"";
  if (packing == "best_fit") {
    out += ", max_docs_per_sequence=" + std::to_string(max_docs_per_sequence);
  }
  return out;
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
