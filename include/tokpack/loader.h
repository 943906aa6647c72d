// Loader: serves batches of fixed-length token sequences from one or more
// weighted datasets, shuffled, partitioned across data-parallel ranks, with a
// checkpointable cursor (docs/reader.md), on the CPU or a GPU.
//
// Sample i of a dataset with sequence length L is the window of L+1 tokens at
// stream offset i*L (inputs = first L, targets = last L; with
// LabelsMode::kSame the targets are the inputs); with Packing::kBestFit it
// is bin i of the dataset's packing plan: whole documents, padded to L
// (docs/reader.md, "The packed view"). Training consumes
// global positions in order; a global batch is the next world_size*batch_size
// positions and rank r takes its contiguous slice, so all ranks run the same
// number of steps and a saved cursor resumes exactly, with any world size.
//
// Pipeline: assembler threads gather each step's rows into a fixed ring of
// host buffers (no allocation in steady state). With a CUDA `device`, the
// rows are gathered in the datasets' compact dtype into page-locked buffers
// and a copy stage of the same loader moves them to a ring of device buffers
// on its own stream, widening them there (docs/gpu.md).
//
// Next(), SaveState() and LoadState() must be called from one thread at a
// time; Batch objects may be read and released from any thread.
#ifndef TOKPACK_LOADER_H_
#define TOKPACK_LOADER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokpack/cancel.h"
#include "tokpack/dataset.h"
#include "tokpack/options.h"
#include "tokpack/status.h"

namespace tokpack {

enum class ShuffleMode {
  kAuto,    // kWindow for remote data larger than its chunk cache, else kFull;
            // resolved when the loader is created (Loader::options()).
  kNone,    // Samples in stream order, every epoch.
  kFull,    // A fresh keyed permutation of all samples each epoch.
  kBlock,   // Blocks of consecutive samples permuted, samples shuffled within
            // a window of blocks.
  kWindow,  // Fetch chunks permuted, samples shuffled within windows of
            // window_chunks chunks: each chunk read once per epoch
            // (docs/reader.md; a few samples at chunk-group edges are left out).
};

enum class OutputDtype { kInt32, kInt64 };

// What a sample is (docs/reader.md, "The packed view").
enum class Packing {
  kConcat,   // The window of L + 1 tokens at stream offset i * L.
  kBestFit,  // Bin i of the source's best-fit-decreasing plan: whole
             // documents (pieces of L tokens for longer ones), padded to L,
             // with labels ignored (-100) across document edges and
             // position_ids/cu_seqlens per document.
};

// What a batch's labels hold. Both modes read the same samples in the same
// order; only the labels array differs.
enum class LabelsMode {
  kNext,  // labels[j] = the token after input_ids[j]: for loops that compute
          // the loss directly against the labels.
  kSame,  // labels = input_ids: for models that shift labels themselves, as
          // every Hugging Face causal LM does.
};

// Where a loader delivers its batches: "cpu", "cuda" (device 0) or "cuda:N".
struct Device {
  enum class Kind { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int index = 0;

  // The one parser of device names; InvalidArgument for anything else
  // ("cuda:x", "cuda:-1", "gpu").
  static StatusOr<Device> Parse(const std::string& text);
  std::string ToString() const;
  bool is_cuda() const { return kind == Kind::kCuda; }
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
};

// True if this build has CUDA and a device is usable; else false and, if
// `why` is given, the reason (no CUDA in the build, no driver, no device).
bool CudaAvailable(std::string* why);

// A loader's settings. Each field is declared once, with its name, default,
// validation and documentation, in the table behind Describe(); the CLI
// flags and the Python keyword arguments are made from that table.
struct LoaderOptions : OptionSet<LoaderOptions> {
  int64_t seq_len = 2048;
  int64_t batch_size = 8;  // Per rank.
  uint64_t seed = 0;
  int rank = 0;
  int world_size = 1;
  ShuffleMode shuffle = ShuffleMode::kAuto;
  int64_t block_size = 64;    // kBlock: samples per block.
  int64_t block_window = 16;  // kBlock: blocks shuffled together.
  // kWindow: fetch chunks per window (whole units, at least one); 0: from
  // the remote sources' cache limit (docs/reader.md).
  int64_t window_chunks = 0;
  OutputDtype dtype = OutputDtype::kInt64;
  LabelsMode labels = LabelsMode::kNext;
  // Also produce position_ids and cu_seqlens (document boundaries). Always
  // on with Packing::kBestFit (options() shows it resolved).
  bool document_boundaries = false;
  // Also produce Batch::loss_mask(): 1 where a label carries loss, 0 where
  // it is -100. Labels are -100 where a dataset's loss mask says so with
  // or without it (docs/format.md 3.1).
  bool loss_mask = false;
  Packing packing = Packing::kConcat;
  // kBestFit: at most this many pieces per sample (0: no cap).
  int64_t max_docs_per_sequence = 0;
  // Serve a mixture whose sources record different token identities
  // (tokenizer or BOS/EOS settings, src/format/token_identity.h), which
  // Create otherwise refuses: for one vocabulary exported twice. Recorded in
  // the cursor; a resume must pass the same.
  bool allow_mixed_tokenizers = false;
  // Stop after this many passes over the data (0: endless). With several
  // sources, one pass is the sum of the sample counts of those that some
  // phase draws from.
  int64_t epochs = 0;
  // Stop when the step count reaches this (0: no limit). Steps count from
  // the start of the data and continue across resumes, whatever the global
  // batch of the loaders before.
  int64_t max_steps = 0;
  int threads = 2;   // Assembler threads.
  int prefetch = 4;  // Host ring depth: batches assembled ahead.
  // For remote datasets: how many steps ahead the loader tells the storage
  // layer which chunks it will read (and at which step), so fetches run
  // ahead of need, soonest first; the step being assembled is told too, so
  // its rows' chunks are fetched side by side. 0: nothing is told.
  int lookahead_steps = 16;
  Device device;            // Where batches are delivered.
  int device_prefetch = 3;  // With a CUDA device: device ring depth.

  // CheckFields(), then what one field cannot check alone (rank <
  // world_size, the batch size limit, max_docs_per_sequence only with
  // best_fit, best_fit not with shuffle="window" or a CUDA device);
  // Loader::Create calls it.
  Status Validate() const;
};

// One rank's batch. Arrays are row-major [batch_size, seq_len] of the
// loader's output dtype, in host memory or, with a CUDA device, in device
// memory. The memory belongs to the loader's ring and returns to it when the
// last shared_ptr to the Batch is released; it stays valid and unchanged
// until then, even after the Loader is destroyed.
class Batch {
 public:
  virtual ~Batch() = default;
  virtual Device device() const = 0;
  virtual int64_t batch_size() const = 0;
  virtual int64_t seq_len() const = 0;
  virtual OutputDtype dtype() const = 0;
  // Step number since the start of the data: one per global batch, and a
  // resumed loader continues the count of the one that saved the cursor
  // (also with another world size or batch size).
  virtual int64_t step() const = 0;
  virtual const void* inputs() const = 0;
  // The labels: inputs shifted by one token, or the inputs themselves
  // (LoaderOptions::labels); -100 where the label's token carries no loss
  // in its dataset's loss mask (labels="next": the next token's bit;
  // "same": the token's own), and, packed, across document edges and on
  // the padding.
  virtual const void* targets() const = 0;
  // With LoaderOptions::loss_mask, else null: uint8 [batch_size, seq_len],
  // 1 where targets() carries loss and 0 where it is -100.
  virtual const uint8_t* loss_mask() const = 0;
  // With document_boundaries (always with packing), else null: int32
  // [batch_size, seq_len] positions restarting at 0 at each document start
  // (and at each row; packed: at each piece and at the padding).
  virtual const int32_t* position_ids() const = 0;
  // With document_boundaries, else null: int32 offsets into the flattened
  // [batch_size * seq_len] inputs where segments start, then the total; a
  // row start is always a segment start (flash-attention's cu_seqlens);
  // packed, each piece and the padding are segments.
  virtual const int32_t* cu_seqlens() const = 0;
  virtual int64_t num_cu_seqlens() const = 0;

  // For a device batch: makes work queued on `stream` (a cudaStream_t;
  // nullptr is the legacy default stream) after this call wait until the
  // batch is on the device, and registers the stream as a user, so the
  // buffer is refilled only after the work queued on it by the release has
  // finished. Read device arrays only from streams passed here. Thread-safe.
  // On the CPU it does nothing. Internal if CUDA refuses (an invalid stream).
  virtual Status UseOn(void* stream) const = 0;
};

// One phase of a mixture: from the first batch whose step() is at least
// `start_step` on, positions draw from source s with weight weights[s]
// (0: the source is absent), by the blend rule over the phase's own
// positions, so the change takes effect at its step (docs/reader.md).
// A source keeps its order and count across phases. With ramp_steps > 0
// the weights are reached gradually: over the phase's first ramp_steps
// steps they move linearly from the previous phase's weights to these
// (docs/reader.md, "Ramps").
struct MixturePhase {
  int64_t start_step = 0;
  std::vector<double> weights;  // One per source, finite, >= 0, not all 0.
  int64_t ramp_steps = 0;       // >= 0; 0 for the first phase.
};

// What one source has served: global counts over all ranks, from the start
// of the data to the last batch handed out (resumes included).
struct SourceStats {
  uint64_t samples = 0;           // Positions drawn from it.
  uint64_t tokens = 0;            // samples * seq_len (input tokens).
  uint64_t epochs_completed = 0;  // Full passes over its samples: repetition.
  uint64_t epoch_samples = 0;     // Samples drawn in the pass under way.
  // Labels of its rows that carry loss (not -100: masked tokens, and packed
  // piece edges and padding, are left out). Unlike the counts above, this
  // rank's rows only, in the batches handed out since the loader was created.
  uint64_t trainable_tokens = 0;
};

// One phase that has begun, as in the cursor: where it began and what each
// source drew in it (global counts).
struct PhaseStats {
  int64_t start_step = 0;
  uint64_t start_position = 0;
  std::vector<double> weights;
  std::vector<uint64_t> samples;  // Per source.
};

struct LoaderStats {
  int64_t steps = 0;
  double wait_seconds_total = 0;  // Time Next() blocked waiting for a batch.
  double wait_seconds_last = 0;
  double wait_seconds_max = 0;
  // Percentiles of the wait over the last 1024 steps.
  double wait_seconds_p50 = 0;
  double wait_seconds_p99 = 0;
  double assemble_seconds_total = 0;  // Summed over assembler threads.
  uint64_t bytes_served = 0;          // Bytes of inputs+targets handed out.
  // Remote storage, this loader's reads only: chunk cache hits and misses
  // (downloads), bytes downloaded, and seconds spent downloading (summed
  // over threads, its prefetches included).
  uint64_t cache_hits = 0;
  uint64_t cache_misses = 0;
  uint64_t bytes_fetched = 0;
  double fetch_seconds = 0;
  // The mixture as served (global, from the cursor's counts): per source,
  // and per phase begun.
  std::vector<SourceStats> sources;
  std::vector<PhaseStats> phases;
};

// What one row of a global batch was made of (Loader::Explain): the sample
// of a source it holds and the stretches of documents in it, in row order.
struct RowOrigin {
  int64_t step = 0;     // Batch::step().
  int rank = 0;         // The rank whose batch holds the row.
  int64_t row = 0;      // The row within that rank's batch.
  size_t source = 0;    // Index of the dataset among the loader's.
  uint64_t sample = 0;  // Its window (concat) or packed bin (best_fit).
  struct Span {
    uint64_t document = 0;  // Index in the source's dataset (or split view).
    uint64_t offset = 0;    // The stretch's first token, counted in the document.
    uint64_t length = 0;    // Tokens.
    // Where the stretch starts in the row. A concat window holds L + 1
    // tokens: column L is only the last label (labels="next").
    uint64_t column = 0;
  };
  std::vector<Span> spans;  // Empty documents, holding no token, are left out.
};

class Loader {
 public:
  struct Source {
    std::shared_ptr<Dataset> dataset;
    double weight = 1.0;
  };

  // Validates options (InvalidArgument naming the field; OutOfRange when
  // seq_len leaves a dataset with no sample; FailedPrecondition when the
  // CUDA device is not usable, saying why) and the sources (InvalidArgument
  // naming two whose token identities differ, and how, unless
  // allow_mixed_tokenizers) and starts the pipeline at the beginning of
  // the data. One mixture phase, with the sources' weights.
  static StatusOr<std::unique_ptr<Loader>> Create(std::vector<Source> sources,
                                                  const LoaderOptions& options);
  // As above, with a mixture that changes during the run: `phases` in
  // increasing start_step, the first at step 0, each with one weight per
  // dataset (InvalidArgument naming the phase otherwise). A dataset may be
  // absent (weight 0) from some phases.
  static StatusOr<std::unique_ptr<Loader>> Create(std::vector<std::shared_ptr<Dataset>> datasets,
                                                  std::vector<MixturePhase> phases,
                                                  const LoaderOptions& options);
  // As above, with caps for data-constrained mixtures: dataset s is drawn
  // at most max_epochs[s] epochs (0: no cap; empty: none), after which its
  // weight is shared out among the phase's other datasets in proportion to
  // theirs (docs/reader.md, "Caps"). Next() fails with OutOfRange, naming
  // the phase, when every dataset a phase weights has reached its cap.
  static StatusOr<std::unique_ptr<Loader>> Create(std::vector<std::shared_ptr<Dataset>> datasets,
                                                  std::vector<MixturePhase> phases,
                                                  std::vector<double> max_epochs,
                                                  const LoaderOptions& options);
  // Stops and joins the threads. Outstanding batches stay valid.
  virtual ~Loader() = default;

  // The next batch of this rank; nullptr once epochs/max_steps are reached.
  // OutOfRange, naming the position, from every call once an endless loader
  // has no room for another step before position 2^63 - 1 (docs/reader.md):
  // it stops rather than wrap its position or step count.
  // Errors from the assembler threads (e.g. a read error) surface here.
  // FailedPrecondition if the consumer still holds every ring buffer.
  // Errors of CUDA surface here too.
  virtual StatusOr<std::shared_ptr<const Batch>> Next() = 0;
  // As Next(), but waits at most `timeout_seconds` for the batch to be
  // assembled; DeadlineExceeded (and no change) if it is not ready by then.
  // Lets a caller (the Python binding) stay responsive to interrupts.
  virtual StatusOr<std::shared_ptr<const Batch>> Next(double timeout_seconds) = 0;

  // The cursor after the last batch returned by Next(): a versioned JSON
  // string (about 250 bytes for one dataset and phase, a few dozen more per
  // dataset or phase begun), independent of rank, world size and batch
  // size (docs/reader.md).
  virtual std::string SaveState() const = 0;
  // Continues from a saved cursor: the next batch starts at its position.
  // The loader's phases that start before the cursor's step must be the
  // phases the saved run began, with the same weights; later phases may
  // differ and apply from their steps. The loader may list more datasets
  // than the saved run (appended, absent from the begun phases).
  // InvalidArgument if it was made for another dataset, seed, sequence
  // length, shuffle mode, block or window setting, or began other phases
  // (naming the phase, its step and the setting that resumes it), or is
  // malformed, or (an endless loader) leaves no room for a step before
  // position 2^63 - 1.
  virtual Status LoadState(const std::string& state) = 0;
  // As LoadState(state), continuing with `phases` instead of the loader's
  // own (checked against the saved run only): "resume, and change the
  // mixture from the saved step on". On an error nothing changes.
  virtual Status LoadState(const std::string& state, std::vector<MixturePhase> phases) = 0;
  // Replaces the phases from the next batch on, as LoadState() would with
  // the cursor of now: phases that started before Step() must stay as they
  // are (InvalidArgument naming the phase otherwise). A phase at Step()
  // starts with the next batch ("start a new phase now").
  virtual Status SetPhases(std::vector<MixturePhase> phases) = 0;
  // The phases in effect: those begun, then those to come.
  virtual std::vector<MixturePhase> Phases() const = 0;

  // The rows of every rank for `steps` steps from step `first`, in global
  // batch order (rank by rank, row by row): what a loss spike at a step was
  // trained on. Replays the loader's schedule from where it began (step 0,
  // or the cursor LoadState() took) with its phases and options, reading
  // no tokens: O((first + steps - begin) * world_size * batch_size * log
  // sources) time, Cancelled once `cancel` (may be null) is set. The
  // replay runs at this loader's global batch: a step the run served
  // before a resume at another global batch needs a loader with the
  // settings of then. At most 2^24 rows a call. InvalidArgument for steps
  // < 1, too many rows, or a step before that beginning; OutOfRange for a
  // step past the end of the data or one the schedule cannot fill (every
  // source of its phase capped), naming it and the last step served.
  // Thread-safe.
  virtual StatusOr<std::vector<RowOrigin>> Explain(int64_t first, int64_t steps,
                                                   const CancelFlag& cancel) const = 0;

  // The step number of the batch the next Next() returns (Batch::step()).
  virtual int64_t Step() const = 0;
  // Steps this rank will still return before the end (-1 when endless).
  virtual int64_t RemainingSteps() const = 0;
  virtual LoaderStats Stats() const = 0;
  // Positions of one epoch of each source: its samples at this sequence
  // length, less those shuffle="window" leaves out.
  virtual std::vector<uint64_t> SamplesPerSource() const = 0;
  // The options in effect: as given, with shuffle=auto and window_chunks=0
  // resolved to the mode and window the loader uses.
  virtual const LoaderOptions& options() const = 0;
};

}  // namespace tokpack

#endif  // TOKPACK_LOADER_H_
