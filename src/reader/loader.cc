#include "tokpack/loader.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "reader/blend_schedule.h"
#include "reader/cursor.h"
#include "reader/sample_order.h"

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

// One ring buffer and the plan of the step it holds.
struct Slot {
  enum class State { kFree, kAssembling, kReady, kHeld };
  State state = State::kFree;
  uint64_t generation = 0;
  int64_t step = 0;  // Local step index (since the last reset).
  int64_t global_step = 0;
  std::vector<char> inputs, targets;
  std::vector<int32_t> position_ids, cu_seqlens;
  int64_t num_cu = 0;
  std::vector<std::pair<uint32_t, uint64_t>> rows;  // (source, sample) per row.
  std::vector<uint64_t> counts_after;               // Cursor after this step.
  uint64_t position_after = 0;
  Status status;
  // Storage for the Batch handed out and its shared_ptr control block, so
  // handing out a batch allocates nothing and outlives the loader.
  alignas(std::max_align_t) unsigned char view_storage[128];
  alignas(std::max_align_t) unsigned char control_block[128];
};

// State shared by the loader and the batches it handed out, so a batch stays
// valid after the loader is gone.
struct Ring {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Slot> slots;
};

// Places a batch's shared_ptr control block in its slot. deallocate() is the
// last access to that block, so it is where the slot goes back to the ring;
// the allocator's own reference keeps the ring alive until then.
template <typename T>
struct SlotAllocator {
  using value_type = T;
  SlotAllocator(std::shared_ptr<Ring> r, Slot* s) : ring(std::move(r)), slot(s) {}
  template <typename U>
  SlotAllocator(const SlotAllocator<U>& o) : ring(o.ring), slot(o.slot) {}  // NOLINT: rebind
  T* allocate(size_t n) {
    static_assert(alignof(T) <= alignof(std::max_align_t));
    if (n * sizeof(T) > sizeof(slot->control_block)) throw std::bad_alloc();
    return reinterpret_cast<T*>(slot->control_block);
  }
  void deallocate(T*, size_t) {
    std::lock_guard<std::mutex> lock(ring->mu);
    slot->state = Slot::State::kFree;
    ring->cv.notify_all();
  }
  template <typename U>
  bool operator==(const SlotAllocator<U>& o) const {
    return slot == o.slot;
  }
  template <typename U>
  bool operator!=(const SlotAllocator<U>& o) const {
    return slot != o.slot;
  }
  std::shared_ptr<Ring> ring;
  Slot* slot;
};

class BatchView : public Batch {
 public:
  BatchView(const Slot* slot, const LoaderOptions& o)
      : slot_(slot),
        b_(o.batch_size),
        l_(o.seq_len),
        dtype_(o.dtype),
        boundaries_(o.document_boundaries) {}
  int64_t batch_size() const override { return b_; }
  int64_t seq_len() const override { return l_; }
  OutputDtype dtype() const override { return dtype_; }
  int64_t step() const override { return slot_->global_step; }
  const void* inputs() const override { return slot_->inputs.data(); }
  const void* targets() const override { return slot_->targets.data(); }
  const int32_t* position_ids() const override {
    return boundaries_ ? slot_->position_ids.data() : nullptr;
  }
  const int32_t* cu_seqlens() const override {
    return boundaries_ ? slot_->cu_seqlens.data() : nullptr;
  }
  int64_t num_cu_seqlens() const override { return boundaries_ ? slot_->num_cu : 0; }

  // The shared_ptr deleter: the object lives in its slot's storage.
  static void Destroy(BatchView* b) { b->~BatchView(); }

 private:
  const Slot* slot_;
  int64_t b_, l_;
  OutputDtype dtype_;
  bool boundaries_;
};

class LoaderImpl : public Loader {
 public:
  LoaderImpl(std::vector<Source> sources, const LoaderOptions& o, std::vector<uint64_t> samples)
      : sources_(std::move(sources)),
        o_(o),
        samples_(std::move(samples)),
        ring_(std::make_shared<Ring>()),
        schedule_(Weights()) {
    for (size_t s = 0; s < sources_.size(); ++s) {
      orders_.emplace_back(samples_[s], o_.shuffle, o_.seed, s, o_.block_size, o_.block_window);
    }
    const size_t item = o_.dtype == OutputDtype::kInt32 ? 4 : 8;
    const size_t cells = static_cast<size_t>(o_.batch_size * o_.seq_len);
    ring_->slots = std::vector<Slot>(static_cast<size_t>(o_.prefetch));
    for (Slot& slot : ring_->slots) {
      slot.inputs.resize(cells * item);
      slot.targets.resize(cells * item);
      if (o_.document_boundaries) {
        slot.position_ids.resize(cells);
        slot.cu_seqlens.resize(cells + 1);
      }
      slot.rows.resize(static_cast<size_t>(o_.batch_size));
    }
    uint64_t total = 0;
    for (uint64_t n : samples_) total += n;
    limit_ = UINT64_MAX;
    const uint64_t global = GlobalBatch();
    if (o_.epochs > 0) limit_ = static_cast<uint64_t>(o_.epochs) * total;
    if (o_.max_steps > 0) limit_ = std::min(limit_, static_cast<uint64_t>(o_.max_steps) * global);
    consumer_counts_.assign(sources_.size(), 0);
    end_step_ = EndStep(0, 0);
    for (int i = 0; i < o_.threads; ++i) threads_.emplace_back([this] { AssembleLoop(); });
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
    stats_.steps++;
    stats_.wait_seconds_last = waited;
    stats_.wait_seconds_total += waited;
    stats_.wait_seconds_max = std::max(stats_.wait_seconds_max, waited);
    stats_.bytes_served += slot.inputs.size() + slot.targets.size();
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

  template <typename T>
  Status Assemble(Slot& slot) {
    T* in = reinterpret_cast<T*>(slot.inputs.data());
    T* tg = reinterpret_cast<T*>(slot.targets.data());
    const uint64_t L = static_cast<uint64_t>(o_.seq_len);
    thread_local std::vector<uint64_t> starts;  // Reused: no steady-state allocation.
    slot.num_cu = 0;
    for (size_t b = 0; b < slot.rows.size(); ++b) {
      const Dataset& ds = *sources_[slot.rows[b].first].dataset;
      const uint64_t a = slot.rows[b].second * L;
      TOKPACK_RETURN_IF_ERROR(ds.ReadTokens(a, L, in + b * L));
      TOKPACK_RETURN_IF_ERROR(ds.ReadTokens(a + 1, L, tg + b * L));
      if (!o_.document_boundaries) continue;
      starts.clear();
      ds.DocumentStarts(a + 1, a + L, &starts);
      int32_t* pos = slot.position_ids.data() + b * L;
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
        if (generation == planned_generation_ && !stopping_.load()) planned = Plan(slot);
        ++planned_tickets_;
        plan_cv_.notify_all();
      }
      Status s;
      double took = 0;
      if (planned) {
        const auto t0 = Clock::now();
        s = o_.dtype == OutputDtype::kInt32 ? Assemble<int32_t>(slot) : Assemble<int64_t>(slot);
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
  double pending_wait_ = 0;  // Waited by Next(timeout) calls that timed out.
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
  if (o.batch_size * o.seq_len >= (int64_t{1} << 31)) {
    return InvalidArgumentError("batch_size * seq_len must be below 2^31");
  }
  if (o.epochs < 0 || o.max_steps < 0) {
    return InvalidArgumentError("epochs and max_steps must not be negative");
  }
  if (o.shuffle == ShuffleMode::kBlock && (o.block_size < 1 || o.block_window < 1)) {
    return InvalidArgumentError("block_size and block_window must be positive");
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
  return std::unique_ptr<Loader>(new LoaderImpl(std::move(sources), options, std::move(samples)));
}

}  // namespace tokpack
