#include "tokpack/loader.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

#include "reader/batch_ring.h"
#include "reader/blend_schedule.h"
#include "reader/cursor.h"
#include "reader/sample_order.h"
#include "reader/wait_window.h"

namespace tokpack {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

const char* ShuffleName(ShuffleMode m) {
  switch (m) {
    case ShuffleMode::kNone:
      return "none";
    case ShuffleMode::kFull:
      return "full";
    case ShuffleMode::kBlock:
      return "block";
  }
  return "?";
}

class MallocMemory : public HostMemory {
 public:
  void* Allocate(size_t bytes) override {
    return std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  }
  void Free(void* p, size_t) override { std::free(p); }
};

class LoaderImpl : public Loader {
 public:
  LoaderImpl(std::vector<Source> sources, const LoaderOptions& o, std::vector<uint64_t> samples)
      : sources_(std::move(sources)),
        o_(o),
        samples_(std::move(samples)),
        ring_(std::make_shared<Ring>()),
        schedule_(Weights()),
        ahead_(Weights()) {
    for (size_t s = 0; s < sources_.size(); ++s) {
      orders_.emplace_back(samples_[s], o_.shuffle, o_.seed, s, o_.block_size, o_.block_window);
    }
    ring_->slots = std::vector<Slot>(static_cast<size_t>(o_.prefetch));
    for (Slot& slot : ring_->slots) slot.rows.resize(static_cast<size_t>(o_.batch_size));
    uint64_t total = 0;
    for (uint64_t n : samples_) total += n;
    limit_ = UINT64_MAX;
    const uint64_t global = GlobalBatch();
    if (o_.epochs > 0) limit_ = static_cast<uint64_t>(o_.epochs) * total;
    if (o_.max_steps > 0) limit_ = std::min(limit_, static_cast<uint64_t>(o_.max_steps) * global);
    consumer_counts_.assign(sources_.size(), 0);
    end_step_ = EndStep(0, 0);
    for (const Source& src : sources_) lookahead_ = lookahead_ || src.dataset->remote();
  }

  // Allocates the ring and starts the assembler threads.
  Status Start() {
    std::shared_ptr<HostMemory> host = o_.host_memory;
    if (!host) host = std::make_shared<MallocMemory>();
    const SlotLayout layout =
        SlotLayout::For(o_, static_cast<size_t>(TokenDtypeSize(sources_[0].dataset->dtype())));
    for (Slot& slot : ring_->slots) {
      if (!slot.Allocate(host, layout, o_.document_boundaries)) {
        return Status(StatusCode::kResourceExhausted,
                      "cannot allocate " + std::to_string(o_.prefetch) + " batch buffers of " +
                          std::to_string(layout.total) + " bytes");
      }
    }
    payload_bytes_ = layout.inputs_bytes + layout.targets_bytes;
    for (int i = 0; i < o_.threads; ++i) threads_.emplace_back([this] { AssembleLoop(); });
    return Status::Ok();
  }

  ~LoaderImpl() override {
    stopping_ = true;
    {
      std::lock_guard<std::mutex> lock(ring_->mu);
      stop_ = true;
    }
    ring_->cv.notify_all();
    for (auto& t : threads_) t.join();
  }

  StatusOr<std::shared_ptr<const Batch>> Next() override { return NextWithin(std::nullopt); }

  StatusOr<std::shared_ptr<const Batch>> Next(double timeout_seconds) override {
    return NextWithin(std::chrono::duration<double>(std::max(0.0, timeout_seconds)));
  }

  StatusOr<std::shared_ptr<const Batch>> NextWithin(
      std::optional<std::chrono::duration<double>> timeout) {
    std::unique_lock<std::mutex> lock(ring_->mu);
    if (end_step_ >= 0 && consume_step_ >= end_step_) {
      return std::shared_ptr<const Batch>();
    }
    if (HeldSlots() == ring_->slots.size()) {
      return FailedPreconditionError(
          "all " + std::to_string(o_.prefetch) +
          " batch buffers are still held by the caller; release old batches (or raise prefetch)");
    }
    const auto t0 = Clock::now();
    Slot* found = nullptr;
    const auto ready = [&] {
      for (Slot& s : ring_->slots) {
        if (s.state == Slot::State::kReady && s.step == consume_step_ &&
            s.generation == generation_) {
          found = &s;
          return true;
        }
      }
      return false;
    };
    if (!timeout) {
      ring_->cv.wait(lock, ready);
    } else if (!ring_->cv.wait_for(lock, *timeout, ready)) {
      // Counted into the step's wait once the batch arrives.
      pending_wait_ += Seconds(Clock::now() - t0);
      return Status(StatusCode::kDeadlineExceeded, "no batch ready within the timeout");
    }
    const double waited = Seconds(Clock::now() - t0) + pending_wait_;
    pending_wait_ = 0;
    Slot& slot = *found;
    if (!slot.status.ok()) return slot.status;
    slot.state = Slot::State::kHeld;
    consumer_counts_ = slot.counts_after;
    consumer_position_ = slot.position_after;
    ++consume_step_;
    waits_.Record(waited, &stats_);
    stats_.bytes_served += payload_bytes_;
    static_assert(sizeof(BatchView) <= sizeof(Slot::view_storage));
    BatchView* view = new (slot.view_storage) BatchView(&slot, o_);
    return std::shared_ptr<const Batch>(view, &BatchView::Destroy,
                                        SlotAllocator<char>(ring_, &slot));
  }

  std::string SaveState() const override {
    std::lock_guard<std::mutex> lock(ring_->mu);
    Cursor c = Settings();
    c.position = consumer_position_;
    for (size_t s = 0; s < sources_.size(); ++s) c.sources[s].consumed = consumer_counts_[s];
    return c.ToJson();
  }

  Status LoadState(const std::string& state) override {
    TOKPACK_ASSIGN_OR_RETURN(Cursor saved, Cursor::Parse(state));
    TOKPACK_RETURN_IF_ERROR(Settings().CheckCompatible(saved));
    std::vector<uint64_t> counts;
    for (const auto& s : saved.sources) counts.push_back(s.consumed);
    uint64_t ticket = 0, generation = 0;
    {
      std::lock_guard<std::mutex> lock(ring_->mu);
      generation = ++generation_;
      for (Slot& slot : ring_->slots) {
        if (slot.state == Slot::State::kReady) slot.state = Slot::State::kFree;
      }
      consumer_counts_ = counts;
      consumer_position_ = saved.position;
      // Step numbers keep rising across a reset: stale slots never match a fresh step.
      plan_step_ = consume_step_;
      end_step_ = EndStep(saved.position, consume_step_);
      ticket = next_ticket_++;
    }
    // Steps claimed before this call plan (or skip) first; steps claimed
    // after it plan from the reset schedule.
    {
      std::unique_lock<std::mutex> plan(plan_mu_);
      plan_cv_.wait(plan, [&] { return planned_tickets_ == ticket; });
      schedule_.Reset(counts);
      ahead_.Reset(counts);
      ahead_steps_ = 0;
      planned_generation_ = generation;
      ++planned_tickets_;
      plan_cv_.notify_all();
    }
    ring_->cv.notify_all();
    return Status::Ok();
  }

  int64_t Step() const override {
    std::lock_guard<std::mutex> lock(ring_->mu);
    return static_cast<int64_t>((consumer_position_ + GlobalBatch() - 1) / GlobalBatch());
  }

  int64_t RemainingSteps() const override {
    std::lock_guard<std::mutex> lock(ring_->mu);
    return end_step_ < 0 ? -1 : end_step_ - consume_step_;
  }

  LoaderStats Stats() const override {
    std::lock_guard<std::mutex> lock(ring_->mu);
    LoaderStats s = stats_;
    s.assemble_seconds_total = assemble_seconds_;
    waits_.Percentiles(&s);
    const ReadStats& c = *read_stats_;
    s.cache_hits = c.cache_hits.load();
    s.cache_misses = c.cache_misses.load();
    s.bytes_fetched = c.bytes_fetched.load();
    s.fetch_seconds = static_cast<double>(c.fetch_micros.load()) * 1e-6;
    return s;
  }

  std::vector<uint64_t> SamplesPerSource() const override { return samples_; }

 private:
  std::vector<double> Weights() const {
    std::vector<double> w;
    for (const auto& s : sources_) w.push_back(s.weight);
    return w;
  }
  uint64_t GlobalBatch() const {
    return static_cast<uint64_t>(o_.batch_size) * static_cast<uint64_t>(o_.world_size);
  }
  // The step number at which the data ends when step `step` starts at
  // global position `position`; -1 when endless.
  int64_t EndStep(uint64_t position, int64_t step) const {
    if (limit_ == UINT64_MAX) return -1;
    if (position >= limit_) return step;
    return step + static_cast<int64_t>((limit_ - position) / GlobalBatch());
  }
  // Any free slot takes the next step, so a batch the caller keeps for long
  // blocks only its own buffer, never the order. Under ring_->mu.
  Slot* FreeSlot() {
    for (Slot& s : ring_->slots) {
      if (s.state == Slot::State::kFree) return &s;
    }
    return nullptr;
  }
  size_t HeldSlots() const {
    size_t n = 0;
    for (const Slot& s : ring_->slots) n += s.state == Slot::State::kHeld;
    return n;
  }

  Cursor Settings() const {
    Cursor c;
    c.seed = o_.seed;
    c.seq_len = o_.seq_len;
    c.shuffle = ShuffleName(o_.shuffle);
    c.block_size = o_.shuffle == ShuffleMode::kBlock ? static_cast<uint64_t>(o_.block_size) : 0;
    c.block_window = o_.shuffle == ShuffleMode::kBlock ? static_cast<uint64_t>(o_.block_window) : 0;
    for (const auto& s : sources_) c.sources.push_back({s.dataset->fingerprint(), s.weight, 0});
    return c;
  }

  // Under plan_mu_, after a step was planned up to global position
  // `position`: walks the lookahead schedule to lookahead_steps steps past
  // it, telling each dataset which of this rank's windows come next.
  void PrefetchAhead(uint64_t position) {
    // The window opens one step per plan, up to lookahead_steps: at the start
    // (and after a LoadState) the chunks of the first steps are asked for
    // first, instead of sharing the bandwidth with everything ahead at once.
    ahead_steps_ = std::min<int64_t>(ahead_steps_ + 1, o_.lookahead_steps);
    const uint64_t target =
        std::min(limit_, position + static_cast<uint64_t>(ahead_steps_) * GlobalBatch());
    const uint64_t first = static_cast<uint64_t>(o_.rank) * o_.batch_size;
    const uint64_t L = static_cast<uint64_t>(o_.seq_len);
    if (ahead_.position() < position) {
      ahead_.Reset(schedule_.counts());  // Fell behind (or first use): catch up.
    }
    while (ahead_.position() < target && !stopping_.load(std::memory_order_relaxed)) {
      // Step boundaries lie at `position` + k * GlobalBatch() (also after an
      // elastic resume, whose positions need not be multiples of it).
      const uint64_t j = (ahead_.position() - position) % GlobalBatch();
      const size_t s = ahead_.Next();
      if (j >= first && j < first + static_cast<uint64_t>(o_.batch_size)) {
        const uint64_t sample = orders_[s].Sample(ahead_.counts()[s] - 1);
        sources_[s].dataset->Prefetch(sample * L, L + 1, read_stats_);
      }
    }
  }

  // Under plan_mu_: plans the rows of this rank for step `slot.step`.
  // False if the loader is being destroyed (a plan can take long).
  bool Plan(Slot& slot) {
    const uint64_t first = static_cast<uint64_t>(o_.rank) * o_.batch_size;
    const uint64_t last = first + o_.batch_size;
    for (uint64_t j = 0; j < GlobalBatch(); ++j) {
      if ((j & 0xffff) == 0xffff && stopping_.load(std::memory_order_relaxed)) return false;
      const size_t s = schedule_.Next();
      if (j >= first && j < last) {
        slot.rows[j - first] = {static_cast<uint32_t>(s),
                                orders_[s].Sample(schedule_.counts()[s] - 1)};
      }
    }
    slot.counts_after = schedule_.counts();
    slot.position_after = schedule_.position();
    slot.global_step = static_cast<int64_t>((slot.position_after - 1) / GlobalBatch());
    return true;
  }

  Status Assemble(Slot& slot) {
    switch (o_.dtype) {
      case OutputDtype::kInt32:
        return AssembleAs<int32_t>(slot);
      case OutputDtype::kInt64:
        return AssembleAs<int64_t>(slot);
      case OutputDtype::kStoredWindows:
        return AssembleAs<void>(slot);
    }
    return InternalError("unknown output dtype");
  }

  // T: the output token type, or void for windows as stored.
  template <typename T>
  Status AssembleAs(Slot& slot) {
    const uint64_t L = static_cast<uint64_t>(o_.seq_len);
    thread_local std::vector<uint64_t> starts;  // Reused: no steady-state allocation.
    slot.num_cu = 0;
    for (size_t b = 0; b < slot.rows.size(); ++b) {
      const Dataset& ds = *sources_[slot.rows[b].first].dataset;
      const uint64_t a = slot.rows[b].second * L;
      if constexpr (std::is_void_v<T>) {
        const size_t item = static_cast<size_t>(TokenDtypeSize(ds.dtype()));
        TOKPACK_RETURN_IF_ERROR(
            ds.ReadStoredTokens(a, L + 1, slot.inputs + b * (L + 1) * item, read_stats_.get()));
      } else {
        // One read of the window, then inputs and targets from it: half the
        // reads (which matters when each one goes through the chunk cache).
        thread_local std::vector<T> window;
        window.resize(L + 1);
        TOKPACK_RETURN_IF_ERROR(ds.ReadTokens(a, L + 1, window.data(), read_stats_.get()));
        std::memcpy(reinterpret_cast<T*>(slot.inputs) + b * L, window.data(), L * sizeof(T));
        std::memcpy(reinterpret_cast<T*>(slot.targets) + b * L, window.data() + 1, L * sizeof(T));
      }
      if (!o_.document_boundaries) continue;
      starts.clear();
      ds.DocumentStarts(a + 1, a + L, &starts);
      int32_t* pos = slot.position_ids + b * L;
      const int32_t row0 = static_cast<int32_t>(b * L);
      slot.cu_seqlens[slot.num_cu++] = row0;
      uint64_t seg = a;
      size_t k = 0;
      for (uint64_t j = 0; j < L; ++j) {
        if (k < starts.size() && starts[k] == a + j) {
          seg = a + j;
          slot.cu_seqlens[slot.num_cu++] = row0 + static_cast<int32_t>(j);
          ++k;
        }
        pos[j] = static_cast<int32_t>(a + j - seg);
      }
    }
    if (o_.document_boundaries) {
      slot.cu_seqlens[slot.num_cu++] = static_cast<int32_t>(o_.batch_size * o_.seq_len);
    }
    return Status::Ok();
  }

  // Claims the next step's slot under the ring lock, then plans it outside
  // that lock (planning walks the whole global batch, world_size *
  // batch_size positions) in claim order, so Next() never waits behind a
  // plan. Tickets order the planners and LoadState()'s schedule reset.
  void AssembleLoop() {
    while (true) {
      uint64_t ticket = 0, generation = 0;
      Slot* claimed = nullptr;
      {
        std::unique_lock<std::mutex> lock(ring_->mu);
        ring_->cv.wait(lock, [&] {
          if (stop_) return true;
          if (end_step_ >= 0 && plan_step_ >= end_step_) return false;
          return FreeSlot() != nullptr;
        });
        if (stop_) return;
        claimed = FreeSlot();
        claimed->step = plan_step_++;
        claimed->generation = generation = generation_;
        claimed->state = Slot::State::kAssembling;
        ticket = next_ticket_++;
      }
      Slot& slot = *claimed;
      bool planned = false;
      {
        std::unique_lock<std::mutex> plan(plan_mu_);
        plan_cv_.wait(plan, [&] { return planned_tickets_ == ticket; });
        // A LoadState() after the claim makes this step stale: skip it.
        if (generation == planned_generation_ && !stopping_.load()) {
          planned = Plan(slot);
          if (planned && lookahead_) PrefetchAhead(slot.position_after);
        }
        ++planned_tickets_;
        plan_cv_.notify_all();
      }
      Status s;
      double took = 0;
      if (planned) {
        const auto t0 = Clock::now();
        s = Assemble(slot);
        took = Seconds(Clock::now() - t0);
      }
      std::lock_guard<std::mutex> lock(ring_->mu);
      assemble_seconds_ += took;
      if (!planned || generation != generation_) {
        slot.state = Slot::State::kFree;
      } else {
        slot.status = s;
        slot.state = Slot::State::kReady;
      }
      ring_->cv.notify_all();
    }
  }

  std::vector<Source> sources_;
  LoaderOptions o_;
  std::vector<uint64_t> samples_;
  std::vector<SampleOrder> orders_;
  std::shared_ptr<Ring> ring_;
  // Planner side, under plan_mu_: planners (and LoadState's reset) take
  // tickets under ring_->mu and run in ticket order.
  std::mutex plan_mu_;
  std::condition_variable plan_cv_;
  BlendSchedule schedule_;
  BlendSchedule ahead_;  // Runs lookahead_steps ahead of schedule_ (remote data).
  bool lookahead_ = false;
  int64_t ahead_steps_ = 0;          // Current lookahead, growing to lookahead_steps.
  uint64_t planned_tickets_ = 0;     // Tickets done; under plan_mu_.
  uint64_t planned_generation_ = 0;  // Generation the schedule is at; under plan_mu_.
  uint64_t next_ticket_ = 0;         // Under ring_->mu.
  std::atomic<bool> stopping_{false};
  uint64_t limit_ = 0;     // Global positions available in all.
  int64_t end_step_ = -1;  // Step number where the data ends; -1: endless.
  int64_t plan_step_ = 0;
  int64_t consume_step_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<uint64_t> consumer_counts_;
  uint64_t consumer_position_ = 0;
  LoaderStats stats_;
  // This loader's remote traffic; shared with the prefetches it queued.
  std::shared_ptr<ReadStats> read_stats_ = std::make_shared<ReadStats>();
  WaitWindow waits_;
  size_t payload_bytes_ = 0;  // Bytes of inputs + targets per batch.
  double pending_wait_ = 0;   // Waited by Next(timeout) calls that timed out.
  double assemble_seconds_ = 0;
  std::vector<std::thread> threads_;
};

Status Validate(const std::vector<Loader::Source>& sources, const LoaderOptions& o) {
  if (sources.empty()) return InvalidArgumentError("a loader needs at least one dataset");
  if (o.seq_len < 1) return InvalidArgumentError("seq_len must be positive");
  if (o.batch_size < 1) return InvalidArgumentError("batch_size must be positive");
  if (o.world_size < 1) return InvalidArgumentError("world_size must be positive");
  if (o.rank < 0 || o.rank >= o.world_size) {
    return InvalidArgumentError("rank " + std::to_string(o.rank) + " is outside world_size " +
                                std::to_string(o.world_size));
  }
  if (o.threads < 1) return InvalidArgumentError("threads must be positive");
  if (o.prefetch < 1 || o.prefetch > 64) return InvalidArgumentError("prefetch must be 1..64");
  if (o.lookahead_steps < 0) return InvalidArgumentError("lookahead_steps must not be negative");
  if (o.batch_size * o.seq_len >= (int64_t{1} << 31)) {
    return InvalidArgumentError("batch_size * seq_len must be below 2^31");
  }
  if (o.epochs < 0 || o.max_steps < 0) {
    return InvalidArgumentError("epochs and max_steps must not be negative");
  }
  if (o.shuffle == ShuffleMode::kBlock && (o.block_size < 1 || o.block_window < 1)) {
    return InvalidArgumentError("block_size and block_window must be positive");
  }
  if (o.dtype == OutputDtype::kStoredWindows && sources[0].dataset) {
    for (const auto& s : sources) {
      if (s.dataset && s.dataset->dtype() != sources[0].dataset->dtype()) {
        return InvalidArgumentError("stored windows need one token dtype, but '" +
                                    s.dataset->path() + "' differs from '" +
                                    sources[0].dataset->path() + "'");
      }
    }
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!sources[i].dataset)
      return InvalidArgumentError("source " + std::to_string(i) + " is null");
    if (!(sources[i].weight > 0) || !std::isfinite(sources[i].weight)) {
      return InvalidArgumentError("weight of '" + sources[i].dataset->path() +
                                  "' must be positive and finite");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Loader>> Loader::Create(std::vector<Source> sources,
                                                 const LoaderOptions& options) {
  TOKPACK_RETURN_IF_ERROR(Validate(sources, options));
  std::vector<uint64_t> samples;
  for (const Source& s : sources) {
    const uint64_t tokens = s.dataset->num_tokens();
    const uint64_t n = tokens > 0 ? (tokens - 1) / static_cast<uint64_t>(options.seq_len) : 0;
    if (n == 0) {
      return OutOfRangeError("seq_len " + std::to_string(options.seq_len) + " is too long for '" +
                             s.dataset->path() + "' (" + std::to_string(tokens) +
                             " tokens: a sample needs seq_len + 1)");
    }
    samples.push_back(n);
  }
  auto loader = std::make_unique<LoaderImpl>(std::move(sources), options, std::move(samples));
  TOKPACK_RETURN_IF_ERROR(loader->Start());
  return std::unique_ptr<Loader>(std::move(loader));
}

}  // namespace tokpack
