// LoaderOptions' table: the one declaration of each loader option (name,
// type, default, validation, doc line). The CLI flags, the Python keyword
// arguments and the stubs are made from it.
#include <algorithm>
#include <climits>
#include <cstdlib>

#include "base/option_table.h"
#include "reader/cursor.h"
#include "reader/loader_internal.h"
#include "tokpack/loader.h"

namespace tokpack {
namespace {

using O = LoaderOptions;

// A Device option: text in, text out, through Device::Parse.
OptionTable<O>::Entry DeviceOption() {
  return {{"device",
           OptionType::kString,
           "",
           "Where batches are delivered: cpu, cuda (device 0) or cuda:N",
           {},
           "",
           {}},
          [](const O& o) -> OptionValue { return o.device.ToString(); },
          [](O& o, const OptionValue& v) {
            TOKPACK_ASSIGN_OR_RETURN(o.device, Device::Parse(std::get<std::string>(v)));
            return Status::Ok();
          }};
}

}  // namespace

template <>
const OptionTable<O>& OptionTableOf<O>() {
  static const OptionTable<O>* table = new OptionTable<O>({
      IntOption<O>(
          "seq_len", "Tokens per sample (the model's context length)",
          [](auto& o) -> auto& { return o.seq_len; }, 1, INT32_MAX),
      IntOption<O>(
          "batch_size", "Samples per rank per step", [](auto& o) -> auto& { return o.batch_size; },
          1, INT32_MAX),
      UIntOption<O>(
          "seed", "Shuffle seed", [](auto& o) -> auto& { return o.seed; }),
      IntOption<O>(
          "rank", "This rank (data-parallel index)", [](auto& o) -> auto& { return o.rank; }, 0,
          INT32_MAX - 1),
      IntOption<O>(
          "world_size", "Number of data-parallel ranks",
          [](auto& o) -> auto& { return o.world_size; }, 1, INT32_MAX),
      EnumOption<O, ShuffleMode>(
          "shuffle",
          "Sample order: auto (window for remote data larger than its cache, else full), full "
          "(a fresh permutation each epoch), window (each fetch chunk read once per epoch), "
          "block or none",
          [](auto& o) -> auto& { return o.shuffle; },
          {{"auto", ShuffleMode::kAuto},
           {"full", ShuffleMode::kFull},
           {"window", ShuffleMode::kWindow},
           {"block", ShuffleMode::kBlock},
           {"none", ShuffleMode::kNone}}),
      IntOption<O>(
          "block_size", "shuffle=block: samples per block",
          [](auto& o) -> auto& { return o.block_size; }, 1, INT64_MAX),
      IntOption<O>(
          "block_window", "shuffle=block: blocks shuffled together",
          [](auto& o) -> auto& { return o.block_window; }, 1, INT64_MAX),
      IntOption<O>(
          "window_chunks",
          "shuffle=window: fetch chunks per window (0: 24 GiB of chunks with a remote source, "
          "64 chunks for local data)",
          [](auto& o) -> auto& { return o.window_chunks; }, 0, int64_t{1} << 30),
      EnumOption<O, OutputDtype>("dtype", "Integer type of input_ids and labels",
                                 [](auto& o) -> auto& { return o.dtype; },
                                 {{"int64", OutputDtype::kInt64}, {"int32", OutputDtype::kInt32}}),
      EnumOption<O, LabelsMode>(
          "labels",
          "labels: next (the token after each input, for a loss computed directly) or same "
          "(equal to input_ids, for models that shift internally such as Hugging Face causal LMs)",
          [](auto& o) -> auto& { return o.labels; },
          {{"next", LabelsMode::kNext}, {"same", LabelsMode::kSame}}),
      BoolOption<O>(
          "document_boundaries", "Also return position_ids and cu_seqlens (document boundaries)",
          [](auto& o) -> auto& { return o.document_boundaries; }),
      BoolOption<O>(
          "loss_mask",
          "Also return loss_mask: 1 where a label carries loss, 0 where it is -100 (labels are "
          "-100 where a dataset's loss mask says so either way)",
          [](auto& o) -> auto& { return o.loss_mask; }),
      EnumOption<O, Packing>(
          "packing",
          "What a sample is: concat (a window of the token stream) or best_fit (whole "
          "documents packed by best-fit decreasing, padded, labels -100 across documents)",
          [](auto& o) -> auto& { return o.packing; },
          {{"concat", Packing::kConcat}, {"best_fit", Packing::kBestFit}}),
      IntOption<O>(
          "max_docs_per_sequence",
          "packing=best_fit: at most this many documents per sample (0: no cap)",
          [](auto& o) -> auto& { return o.max_docs_per_sequence; }, 0, INT32_MAX),
      BoolOption<O>(
          "allow_mixed_tokenizers",
          "Serve a mixture of datasets with different tokenizers or BOS/EOS settings (only "
          "for one vocabulary exported twice; refused otherwise)",
          [](auto& o) -> auto& { return o.allow_mixed_tokenizers; }),
      IntOption<O>(
          "epochs", "Stop after this many passes over the data (0: endless)",
          [](auto& o) -> auto& { return o.epochs; }, 0, INT64_MAX),
      IntOption<O>(
          "max_steps", "Stop after this many steps from the start (0: no limit)",
          [](auto& o) -> auto& { return o.max_steps; }, 0, INT64_MAX),
      IntOption<O>(
          "threads", "Assembler threads", [](auto& o) -> auto& { return o.threads; }, 1, 256),
      IntOption<O>(
          "prefetch", "Host ring depth: batches assembled ahead",
          [](auto& o) -> auto& { return o.prefetch; }, 1, 64),
      IntOption<O>(
          "lookahead_steps",
          "Remote datasets: steps ahead whose chunks are fetched in the background",
          [](auto& o) -> auto& { return o.lookahead_steps; }, 0, 1 << 20),
      DeviceOption(),
      IntOption<O>(
          "device_prefetch", "With a CUDA device: device ring depth",
          [](auto& o) -> auto& { return o.device_prefetch; }, 1, 64),
  });
  return *table;
}

template class OptionSet<O>;

StatusOr<Device> Device::Parse(const std::string& text) {
  const auto invalid = [&] {
    return InvalidArgumentError("device must be 'cpu', 'cuda' or 'cuda:N', not '" + text + "'");
  };
  if (text == "cpu") return Device{};
  if (text == "cuda") return Device{Kind::kCuda, 0};
  if (text.rfind("cuda:", 0) != 0 || text.size() == 5 || text.size() > 9) return invalid();
  int index = 0;
  for (size_t i = 5; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return invalid();
    index = index * 10 + (text[i] - '0');
  }
  return Device{Kind::kCuda, index};
}

std::string Device::ToString() const {
  return kind == Kind::kCpu ? "cpu" : "cuda:" + std::to_string(index);
}

Status LoaderOptions::Validate() const {
  TOKPACK_RETURN_IF_ERROR(CheckFields());  // Fields assigned directly, too.
  if (rank >= world_size) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " is outside world_size " +
                                std::to_string(world_size));
  }
  if (batch_size * seq_len >= (int64_t{1} << 31)) {
    return InvalidArgumentError("batch_size * seq_len must be below 2^31");
  }
  if (packing != Packing::kBestFit && max_docs_per_sequence != 0) {
    return InvalidArgumentError("max_docs_per_sequence " + std::to_string(max_docs_per_sequence) +
                                " applies only with packing=\"best_fit\"");
  }
  if (packing == Packing::kBestFit && shuffle == ShuffleMode::kWindow) {
    // A window order walks fetch chunks of the stream; bins gather documents
    // from anywhere in a shard, so they have no chunk to be read once with.
    return InvalidArgumentError(
        "shuffle=\"window\" does not go with packing=\"best_fit\" (bins are not windows of "
        "fetch chunks); use shuffle=\"full\" or \"auto\" (which picks full)");
  }
  if (packing == Packing::kBestFit && device.is_cuda()) {
    // The device stage widens compact windows into shifted labels; a packed
    // row's labels and padding are made on the host.
    return InvalidArgumentError(
        "packing=\"best_fit\" delivers batches on device=\"cpu\" only "
        "(move them with .to(device)), not on \"" +
        device.ToString() + "\"");
  }
  return Status::Ok();
}

StatusOr<uint64_t> PositionLimit(const LoaderOptions& o, const std::vector<uint64_t>& samples,
                                 const std::vector<MixturePhase>& phases, uint64_t position,
                                 int64_t step) {
  uint64_t limit = UINT64_MAX;
  const auto too_far = [](const std::string& what) {
    return InvalidArgumentError(what +
                                " is more than the 2^63 - 1 positions a loader reaches; "
                                "use 0 for an endless loader");
  };
  if (o.epochs > 0) {
    uint64_t total = 0;
    for (size_t s = 0; s < samples.size(); ++s) {
      bool drawn = false;  // A source no phase draws adds nothing to an epoch.
      for (const MixturePhase& phase : phases) drawn = drawn || phase.weights[s] > 0;
      if (drawn) total = samples[s] > UINT64_MAX - total ? UINT64_MAX : total + samples[s];
    }
    limit = SaturatingMul(static_cast<uint64_t>(o.epochs), total);
    if (limit > Cursor::kMaxPosition) {
      return too_far("epochs " + std::to_string(o.epochs) + " times " + std::to_string(total) +
                     " samples per epoch");
    }
  }
  if (o.max_steps > step) {
    const uint64_t global = static_cast<uint64_t>(o.batch_size) * o.world_size;
    const uint64_t left = SaturatingMul(static_cast<uint64_t>(o.max_steps - step), global);
    if (left > Cursor::kMaxPosition - std::min(position, Cursor::kMaxPosition)) {
      return too_far("max_steps " + std::to_string(o.max_steps) + " (from step " +
                     std::to_string(step) + " at position " + std::to_string(position) +
                     ") times " + std::to_string(global) +
                     " samples per step (batch_size * world_size)");
    }
    limit = std::min(limit, position + left);
  } else if (o.max_steps > 0) {
    limit = std::min(limit, position);
  }
  return limit;
}

}  // namespace tokpack
