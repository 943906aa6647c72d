#include "tokpack/builder.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "build/batch_encoder.h"
#include "build/builder_internal.h"
#include "build/document_reader.h"
#include "format/shard_writer.h"
#include "format/staging_dir.h"
#include "inputs/input_files.h"
#include "storage/object_url.h"
#include "tokpack/tokenizer.h"
#include "tokpack/version.h"

namespace tokpack {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Buffers a pooled batch keeps for reuse; one grown past this by a huge
// document is freed instead.
constexpr size_t kPoolKeepBytes = size_t{8} << 20;
// Input bytes in flight (read, not yet written) at which the reader waits:
// at least this, or a full window of 1 MiB batches.
constexpr uint64_t kMinInflightBytes = uint64_t{64} << 20;

// Reader thread -> encoder threads -> the calling thread, which writes in
// input order. At most `max_inflight_` batches, holding at most
// `inflight_budget_` bytes of input plus one batch (so one document), are in
// flight at once, so memory is bounded whatever the input and the thread
// count: huge documents are encoded one after another, not side by side. Batches are recycled
// through pools, so their buffers keep their capacity and steady state
// allocates (almost) nothing, which also keeps malloc's high-water mark flat.
class Pipeline {
 public:
  Pipeline(DocumentReader* reader, const Tokenizer* tokenizer, const BuildSettings& settings,
           TokenDtype dtype, ShardWriter* writer, int threads, const CancelFlag& cancel)
      : reader_(reader),
        tokenizer_(tokenizer),
        settings_(settings),
        dtype_(dtype),
        writer_(writer),
        threads_(threads),
        cancel_(cancel),
        max_inflight_(static_cast<uint64_t>(2 * threads + 2)),
        inflight_budget_(std::max(kMinInflightBytes, max_inflight_ << 20)) {}

  Status Run(BuildCounts* counts);

  std::atomic<uint64_t> documents{0};
  std::atomic<uint64_t> tokens{0};
  // With document sources: what became of each input's records.
  std::vector<InputCounts> input_counts;
  uint64_t cache_lookups = 0, cache_hits = 0;  // Written by Write(), read after Run().

 private:
  void Fail(Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) error_ = std::move(s);
    abort_ = true;
    cv_.notify_all();
  }
  bool Cancelled() const { return cancel_ && cancel_->load(std::memory_order_relaxed); }
  void ReadLoop();
  void EncodeLoop();
  // "file:line" of a dropped record ("file" for a whole-file document).
  std::string RecordName(const EncodedBatch::Dropped& d) const {
    std::string where = reader_->inputs()[d.file].path;
    if (where == "-") where = "<stdin>";
    if (d.line > 0) where += ":" + std::to_string(d.line);
    return where;
  }
  Status Write(const EncodedBatch& batch, BuildCounts* counts);

  DocumentReader* reader_;
  const Tokenizer* tokenizer_;
  BuildSettings settings_;
  TokenDtype dtype_;
  ShardWriter* writer_;
  int threads_;
  CancelFlag cancel_;
  const uint64_t max_inflight_;
  const uint64_t inflight_budget_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RawBatch> work_;
  std::map<uint64_t, EncodedBatch> done_;
  std::vector<RawBatch> raw_pool_;
  std::vector<EncodedBatch> encoded_pool_;
  uint64_t produced_ = 0;
  uint64_t consumed_ = 0;
  uint64_t inflight_bytes_ = 0;  // Input bytes of batches produced, not yet consumed.
  bool reader_done_ = false;
  bool abort_ = false;
  Status error_;
};

void Pipeline::ReadLoop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return abort_ ||
               (produced_ - consumed_ < max_inflight_ && inflight_bytes_ < inflight_budget_);
      });
      if (abort_) return;
    }
    if (Cancelled()) return Fail(CancelledError("build interrupted"));
    RawBatch batch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!raw_pool_.empty()) {
        batch = std::move(raw_pool_.back());
        raw_pool_.pop_back();
      }
    }
    StatusOr<bool> more = reader_->Next(&batch);
    if (!more.ok()) return Fail(more.status());
    std::lock_guard<std::mutex> lock(mu_);
    if (!*more) {
      reader_done_ = true;
      cv_.notify_all();
      return;
    }
    batch.seq = produced_++;
    inflight_bytes_ += batch.data.size();
    work_.push_back(std::move(batch));
    cv_.notify_all();
  }
}

void Pipeline::EncodeLoop() {
  BatchEncoder encoder(tokenizer_, settings_, dtype_);
  while (true) {
    RawBatch batch;
    EncodedBatch out;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return abort_ || !work_.empty() || reader_done_; });
      if (abort_ || work_.empty()) return;
      batch = std::move(work_.front());
      work_.pop_front();
      if (!encoded_pool_.empty()) {
        out = std::move(encoded_pool_.back());
        encoded_pool_.pop_back();
      }
    }
    Status s = encoder.Encode(batch, &out);
    if (!s.ok()) return Fail(s);
    if (batch.data.capacity() > kPoolKeepBytes) batch = RawBatch();
    std::lock_guard<std::mutex> lock(mu_);
    done_.emplace(out.seq, std::move(out));
    raw_pool_.push_back(std::move(batch));
    cv_.notify_all();
  }
}

Status Pipeline::Write(const EncodedBatch& batch, BuildCounts* counts) {
  const bool sources = settings_.doc_sources;
  for (const EncodedBatch::Dropped& d : batch.dropped) {
    InputCounts* per_input = sources ? &input_counts[d.file] : nullptr;
    switch (d.why) {
      case Drop::kEmpty:
        ++counts->skipped_empty;
        if (per_input) ++per_input->skipped_empty;
        break;
      case Drop::kInvalidUtf8:
        ++counts->skipped_invalid_utf8;
        if (per_input) ++per_input->skipped_invalid_utf8;
        break;
      case Drop::kBadLine:
        if (!settings_.skip_bad_lines) {
          return InvalidArgumentError(RecordName(d) + ": " + d.message +
                                      " (pass --skip-bad-lines, skip_bad_lines=True in Python, "
                                      "to skip such records)");
        }
        ++counts->bad_lines;
        if (per_input) ++per_input->bad_lines;
        break;
      case Drop::kFailed:
        return Status(d.code, RecordName(d) + ": " + d.message);
    }
  }
  counts->utf8_repaired += batch.utf8_repaired;
  counts->unknown_tokens += static_cast<uint64_t>(batch.counts.unknown);
  counts->byte_fallback_tokens += static_cast<uint64_t>(batch.counts.byte_fallback);
  cache_lookups += static_cast<uint64_t>(batch.counts.cache_lookups);
  cache_hits += static_cast<uint64_t>(batch.counts.cache_hits);
  const size_t item = TokenDtypeSize(dtype_);
  size_t offset = 0;
  size_t token = 0;  // Index of the document's first token in batch.loss.
  const std::string_view loss = batch.loss;
  if (sources && batch.origins.size() != batch.doc_tokens.size()) {
    return InternalError("an encoded batch without one origin per document");
  }
  for (size_t i = 0; i < batch.doc_tokens.size(); ++i) {
    const uint32_t n = batch.doc_tokens[i];
    DocumentOrigin origin;
    if (sources) {
      const EncodedBatch::Origin& o = batch.origins[i];
      origin.input = o.file;
      origin.record = o.line;
      if (o.has_id) {
        origin.id = std::string_view(batch.ids).substr(o.id_begin, o.id_end - o.id_begin);
      }
      ++input_counts[o.file].documents;
    }
    TOKPACK_RETURN_IF_ERROR(writer_->AddDocument(
        std::string_view(batch.tokens).substr(offset, n * item), n,
        loss.empty() ? std::string_view() : loss.substr(token, n), sources ? &origin : nullptr));
    offset += n * item;
    token += n;
    counts->tokens += n;
    ++counts->documents;
  }
  documents.store(counts->documents, std::memory_order_relaxed);
  tokens.store(counts->tokens, std::memory_order_relaxed);
  return Status::Ok();
}

Status Pipeline::Run(BuildCounts* counts) {
  std::vector<std::thread> threads;
  threads.emplace_back([this] { ReadLoop(); });
  for (int i = 0; i < threads_; ++i) threads.emplace_back([this] { EncodeLoop(); });
  while (true) {
    EncodedBatch batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return abort_ || done_.count(consumed_) > 0 || (reader_done_ && consumed_ == produced_);
      });
      if (abort_ || done_.count(consumed_) == 0) break;
      auto it = done_.find(consumed_);
      batch = std::move(it->second);
      done_.erase(it);
    }
    Status s = Cancelled() ? CancelledError("build interrupted") : Write(batch, counts);
    if (!s.ok()) {
      Fail(s);
      break;
    }
    const uint64_t input_bytes = batch.input_bytes;
    if (batch.tokens.capacity() > kPoolKeepBytes) batch = EncodedBatch();
    std::lock_guard<std::mutex> lock(mu_);
    encoded_pool_.push_back(std::move(batch));
    ++consumed_;
    inflight_bytes_ -= input_bytes;
    cv_.notify_all();
  }
  for (auto& t : threads) t.join();
  return error_;
}

// Calls the progress callback every interval until stopped, and once more
// when stopped: a build shorter than one interval still reports its totals.
class ProgressThread {
 public:
  ProgressThread(const BuildOptions& o, std::function<BuildProgress()> snapshot)
      : options_(o), snapshot_(std::move(snapshot)) {
    if (options_.progress) thread_ = std::thread([this] { Loop(); });
  }
  ~ProgressThread() { Join(); }
  void Stop() {
    if (!thread_.joinable()) return;
    Join();
    options_.progress(snapshot_());
  }

 private:
  void Join() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    auto interval = std::chrono::duration<double>(options_.progress_interval_seconds);
    while (!cv_.wait_for(lock, interval, [&] { return stop_; })) {
      options_.progress(snapshot_());
    }
  }
  const BuildOptions& options_;
  std::function<BuildProgress()> snapshot_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

StatusOr<BuildSummary> BuildWithFileSystem(const BuildOptions& o, FileSystem* fs) {
  const auto t0 = Clock::now();
  TOKPACK_RETURN_IF_ERROR(o.Validate());
  TOKPACK_ASSIGN_OR_RETURN(auto tokenizer, Tokenizer::Load(o.tokenizer_model, o.tokenizer_options));
  const TokenizerInfo& tok = tokenizer->info();
  if (o.settings.add_bos && tok.bos_id < 0) {
    return InvalidArgumentError("--bos: tokenizer '" + o.tokenizer_model + "' has no BOS id");
  }
  if (o.settings.add_eos && tok.eos_id < 0) {
    return InvalidArgumentError("tokenizer '" + o.tokenizer_model +
                                "' has no EOS id; pass --no-eos");
  }
  ExpandedInputs expanded;
  if (o.texts) {
    expanded.inputs.push_back({o.texts->name(), 0});
  } else {
    TOKPACK_ASSIGN_OR_RETURN(
        expanded, ExpandInputs(o.inputs, o.storage, o.settings.input_format, o.skip_unknown_files));
  }
  std::vector<InputRecord> inputs = expanded.inputs;
  if (o.part_count > 1) {
    for (const auto& in : inputs) {
      if (in.path == "-") return InvalidArgumentError("--part cannot split stdin ('-')");
    }
    TOKPACK_ASSIGN_OR_RETURN(
        inputs, SelectPartByRowGroups(inputs, o.part_index, o.part_count, o.settings.input_format,
                                      o.settings.text_key, o.storage));
  }
  uint64_t bytes_total = 0;
  for (const auto& in : inputs) bytes_total += in.bytes;

  std::atomic<uint64_t> bytes_read{0};
  DocumentReader reader(inputs, o.texts, o.settings, o.storage, &bytes_read, o.cancel,
                        o.max_document_bytes);
  TOKPACK_RETURN_IF_ERROR(reader.Init());
  // The local files read, which the output must not replace.
  std::vector<std::string> read_paths = {o.tokenizer_model};
  for (const auto& in : inputs) {
    if (in.path != "-" && !IsRemoteUrl(in.path)) read_paths.push_back(in.path);
  }
  TOKPACK_ASSIGN_OR_RETURN(auto staging,
                           StagingDir::Create(o.output, o.force, std::move(read_paths)));

  Manifest m;
  m.dtype = DtypeForVocab(tok.vocab_size);
  m.chunk_bytes = o.chunk_bytes;
  m.tokenizer = tok;
  m.provenance.version = Version();
  m.provenance.kind = "build";
  m.provenance.part_index = o.part_index;
  m.provenance.part_count = o.part_count;
  m.provenance.settings = o.settings;
  m.provenance.inputs = inputs;

  int threads = o.threads > 0 ? o.threads
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ShardWriter writer(fs, staging->path(), m.dtype, o.chunk_bytes, o.settings.shard_tokens,
                     o.settings.loss_masks, o.settings.doc_sources ? inputs.size() : 0);
  Pipeline pipeline(&reader, tokenizer.get(), o.settings, m.dtype, &writer, threads, o.cancel);
  if (o.settings.doc_sources) pipeline.input_counts.resize(inputs.size());
  ProgressThread progress(o, [&] {
    BuildProgress p;
    p.bytes_read = bytes_read.load(std::memory_order_relaxed);
    p.bytes_total = bytes_total;
    p.documents = pipeline.documents.load(std::memory_order_relaxed);
    p.tokens = pipeline.tokens.load(std::memory_order_relaxed);
    p.elapsed_seconds = SecondsSince(t0);
    return p;
  });
  TOKPACK_RETURN_IF_ERROR(pipeline.Run(&m.provenance.counts));
  m.provenance.input_counts = std::move(pipeline.input_counts);
  if (o.texts) m.provenance.inputs[0].bytes = bytes_read.load();
  progress.Stop();
  TOKPACK_ASSIGN_OR_RETURN(m.shards, writer.Finish());
  TOKPACK_RETURN_IF_ERROR(CopyFile(fs, o.tokenizer_model,
                                   JoinPath(staging->path(), m.tokenizer.file), kMaxTokenizerBytes,
                                   "a tokenizer file"));
  if (m.provenance.inputs.size() > Provenance::kMaxListedInputs) {
    TOKPACK_RETURN_IF_ERROR(WriteFileAtomically(fs, staging->path(), Provenance::kInputsFileName,
                                                InputListFile(m.provenance.inputs)));
  }
  if (o.cancel && o.cancel->load()) return CancelledError("build interrupted");
  TOKPACK_RETURN_IF_ERROR(staging->Commit(fs, m.ToJson()));

  BuildSummary summary;
  summary.manifest = std::move(m);
  summary.input_bytes = bytes_read.load();
  summary.text_bytes = reader.text_bytes();
  summary.skipped_files = std::move(expanded.skipped);
  summary.seconds = SecondsSince(t0);
  summary.piece_cache_lookups = pipeline.cache_lookups;
  summary.piece_cache_hits = pipeline.cache_hits;
  return summary;
}

}  // namespace tokpack
