#include "tokpack/loader.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "format/token_identity.h"
#include "reader/batch_assembler.h"
#include "reader/cursor.h"
#include "reader/device_stage.h"
#include "reader/loader_internal.h"
#include "reader/phase_schedule.h"
#include "reader/row_spans.h"
#include "reader/sample_order.h"
#include "reader/shuffle_plan.h"
#include "reader/slot_ring.h"
#include "reader/wait_window.h"
#include "tokpack/json_writer.h"

namespace tokpack {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Loader::Explain's bound on the rows of one call (about 1 GB of answer).
constexpr uint64_t kMaxExplainRows = uint64_t{1} << 24;

// How messages name Cursor::kMaxPosition.
constexpr const char* kLastPosition = "2^63 - 1, the last position a cursor records";

// The datasets' names in messages.
std::vector<std::string> Names(const std::vector<Loader::Source>& sources) {
  std::vector<std::string> names;
  for (const auto& s : sources) names.push_back(s.dataset->path());
  return names;
}

// The pipeline: T assembler threads fill the host ring in step order (a
// ticket per claimed step orders the planners); with a device stage one
// copy thread moves each host batch, in step order, into the device ring.
// Next() takes the step it wants from the last ring. Every counter below
// that is "under mu" is guarded by pipeline_->mu.
class LoaderImpl : public Loader {
 public:
  // `plan`: the resolved options and each source's order; `samples`: their
  // sizes; `limit`: the global positions available in all (PositionLimit).
  LoaderImpl(std::vector<Source> sources, std::vector<MixturePhase> phases,
             std::vector<uint64_t> caps, ShufflePlan plan, std::vector<uint64_t> samples,
             uint64_t limit, std::shared_ptr<DeviceStage> stage)
      : sources_(std::move(sources)),
        phases_(std::move(phases)),
        caps_(std::move(caps)),
        o_(plan.options),
        limit_(limit),
        orders_(std::move(plan.orders)),
        views_(std::move(plan.views)),
        samples_(std::move(samples)),
        pipeline_(std::make_shared<Pipeline>(
            static_cast<size_t>(o_.prefetch), stage ? static_cast<size_t>(o_.device_prefetch) : 0,
            static_cast<size_t>(std::max(1, std::min(o_.threads, o_.prefetch / 2))))),
        schedule_(phases_, GlobalBatch(), caps_),
        ahead_(schedule_) {
    pipeline_->stage = std::move(stage);
    pipeline_->options = o_;
    for (Slot& slot : pipeline_->host.slots()) slot.rows.resize(static_cast<size_t>(o_.batch_size));
    trainable_.assign(sources_.size(), 0);
    SetEnd(0, 0);
    ahead_limit_ = end_position_;
    for (const Source& src : sources_) lookahead_ = lookahead_ || src.dataset->remote();
    lookahead_ = lookahead_ && o_.lookahead_steps > 0;  // 0: no hints at all.
  }

  // Allocates the host ring (page-locked with a device stage) and starts
  // the threads.
  Status Start() {
    const std::shared_ptr<DeviceStage>& stage = pipeline_->stage;
    const size_t stored_item = static_cast<size_t>(TokenDtypeSize(sources_[0].dataset->dtype()));
    layout_ = HostLayout::For(o_, stage != nullptr, stored_item, AnyLossMasks(sources_));
    // inputs + targets as handed out, on either device.
    served_bytes_ = 2 * static_cast<size_t>(o_.batch_size * o_.seq_len) *
                    (o_.dtype == OutputDtype::kInt32 ? 4 : 8);
    for (Slot& slot : pipeline_->host.slots()) {
      char* p = static_cast<char*>(stage ? stage->AllocateHost(layout_.total)
                                         : std::aligned_alloc(64, layout_.total));
      if (p == nullptr) {
        return Status(StatusCode::kResourceExhausted,
                      "cannot allocate " + std::to_string(o_.prefetch) + " batch buffers of " +
                          std::to_string(layout_.total) + " bytes");
      }
      slot.memory = stage ? std::shared_ptr<char>(p, [stage](char* q) { stage->FreeHost(q); })
                          : std::shared_ptr<char>(p, [](char* q) { std::free(q); });
      layout_.Place(p, o_.document_boundaries, &slot);
    }
    for (Slot& slot : pipeline_->device.slots()) slot.arrays = stage->SlotArrays(slot.index);
    for (int i = 0; i < o_.threads; ++i) threads_.emplace_back([this] { AssembleLoop(); });
    if (stage) threads_.emplace_back([this] { CopyLoop(); });
    return Status::Ok();
  }

  ~LoaderImpl() override {
    stopping_ = true;
    {
      std::lock_guard<std::mutex> lock(pipeline_->mu);
      stop_ = true;
      pipeline_->host.WakeAll();
      pipeline_->device.WakeAll();
    }
    for (auto& t : threads_) t.join();
  }

  StatusOr<std::shared_ptr<const Batch>> Next() override { return NextWithin(-1); }

  StatusOr<std::shared_ptr<const Batch>> Next(double timeout_seconds) override {
    return NextWithin(std::max(0.0, timeout_seconds));
  }

  // No lock: consumer_* are the consumer's own (see their declaration), and
  // a trainer that saves the cursor after every batch would otherwise queue
  // behind the assembler threads the batch's release just woke.
  std::string SaveState() const override { return Now().ToJson(); }

  Status LoadState(const std::string& state) override { return LoadState(state, phases_); }

  Status LoadState(const std::string& state, std::vector<MixturePhase> phases) override {
    TOKPACK_RETURN_IF_ERROR(CheckPhases(phases, Names(sources_)));
    TOKPACK_ASSIGN_OR_RETURN(MixtureState saved, Now().Resume(state, phases, GlobalBatch()));
    return Restart(std::move(saved), std::move(phases), /*resume=*/true);
  }

  Status SetPhases(std::vector<MixturePhase> phases) override {
    TOKPACK_RETURN_IF_ERROR(CheckPhases(phases, Names(sources_)));
    TOKPACK_RETURN_IF_ERROR(Now().CheckPhases(phases));
    return Restart(consumer_state_, std::move(phases), /*resume=*/false);
  }

  std::vector<MixturePhase> Phases() const override {
    std::lock_guard<std::mutex> lock(pipeline_->mu);
    return phases_;
  }

  int64_t Step() const override { return consumer_state_.step; }

  StatusOr<std::vector<RowOrigin>> Explain(int64_t first, int64_t steps,
                                           const CancelFlag& cancel) const override {
    std::vector<MixturePhase> phases;
    MixtureState origin;
    {
      std::lock_guard<std::mutex> lock(pipeline_->mu);
      phases = phases_;
      origin = origin_;
    }
    const uint64_t global = GlobalBatch();
    if (global > kMaxExplainRows) {
      return InvalidArgumentError("a global batch of " + std::to_string(global) +
                                  " rows is more than Explain returns at once (2^24 rows)");
    }
    if (steps < 1 || static_cast<uint64_t>(steps) > kMaxExplainRows / global) {
      return InvalidArgumentError("explain 1 to " + std::to_string(kMaxExplainRows / global) +
                                  " steps of " + std::to_string(global) + " rows at a time, not " +
                                  std::to_string(steps));
    }
    if (first < origin.step) {
      if (origin.step == 0)
        return InvalidArgumentError("steps count from 0, not " + std::to_string(first));
      return InvalidArgumentError(
          "step " + std::to_string(first) + " comes before step " + std::to_string(origin.step) +
          ", where this loader resumed: explain it with a loader made with the run's settings at "
          "that step (world size, batch size) and resumed from the cursor of its latest resume "
          "at or before it (or started from the beginning if there was none)");
    }
    // The steps the loader serves from its beginning, as SetEnd counts them.
    const uint64_t position = origin.Position();
    TOKPACK_ASSIGN_OR_RETURN(const uint64_t limit,
                             PositionLimit(o_, samples_, phases, position, origin.step));
    const uint64_t room = Room(position, origin.step);
    const uint64_t data =
        limit == UINT64_MAX ? UINT64_MAX : (limit - std::min(limit, position)) / global;
    const uint64_t served = std::min(room, data);
    const uint64_t skip = static_cast<uint64_t>(first - origin.step);
    if (skip >= served || static_cast<uint64_t>(steps) > served - skip) {
      return OutOfRangeError(
          "step " + std::to_string(std::max(skip, served) + origin.step) + " lies past " +
          (data <= room ? "the end of the data" : std::string("the room before ") + kLastPosition) +
          (served == 0 ? std::string(": this loader serves no more steps")
                       : ": the last step this loader serves is " +
                             std::to_string(served + origin.step - 1)));
    }
    PhaseSchedule schedule(phases, global, caps_);
    schedule.Reset(origin);
    // A step the schedule cannot fill is named, with the last it fills.
    const auto exhausted = [&](uint64_t k) {
      const uint64_t step = origin.step + k / global;
      return OutOfRangeError("the loader serves no step " + std::to_string(step) +
                             " (the last it serves is " + std::to_string(step - 1) +
                             "): " + Exhausted(schedule, phases).message());
    };
    std::vector<RowOrigin> rows;
    rows.reserve(static_cast<size_t>(steps) * global);
    const uint64_t L = static_cast<uint64_t>(o_.seq_len);
    // Draws before `first`'s step are replayed only to move the schedule on.
    const uint64_t first_draw = skip * global;
    for (uint64_t k = 0; k < (skip + static_cast<uint64_t>(steps)) * global; ++k) {
      if ((k & 0xffff) == 0xffff && IsCancelled(cancel)) {
        return CancelledError("explain: cancelled");
      }
      const size_t s = schedule.Next();
      if (s == PhaseSchedule::kExhausted) return exhausted(k);
      if (k < first_draw) continue;
      const uint64_t j = k % global;
      RowOrigin row;
      row.step = origin.step + static_cast<int64_t>(k / global);
      row.rank = static_cast<int>(j / static_cast<uint64_t>(o_.batch_size));
      row.row = static_cast<int64_t>(j % static_cast<uint64_t>(o_.batch_size));
      row.source = s;
      row.sample = orders_[s].Sample(schedule.totals()[s] - 1);
      TOKPACK_RETURN_IF_ERROR(RowSpans(*sources_[s].dataset,
                                       views_.empty() ? nullptr : views_[s].get(), row.sample, L,
                                       &row.spans));
      rows.push_back(std::move(row));
    }
    return rows;
  }

  int64_t RemainingSteps() const override {
    std::lock_guard<std::mutex> lock(pipeline_->mu);
    return limit_ == UINT64_MAX ? -1 : end_step_ - consume_step_;
  }

  LoaderStats Stats() const override {
    std::lock_guard<std::mutex> lock(pipeline_->mu);
    LoaderStats s = stats_;
    s.assemble_seconds_total = assemble_seconds_;
    waits_.Percentiles(&s);
    const ReadStats& c = *read_stats_;
    s.cache_hits = c.cache_hits.load();
    s.cache_misses = c.cache_misses.load();
    s.bytes_fetched = c.bytes_fetched.load();
    s.fetch_seconds = static_cast<double>(c.fetch_micros.load()) * 1e-6;
    AddMixtureStats(consumer_state_, phases_, samples_, o_.seq_len, &s);
    for (size_t i = 0; i < s.sources.size(); ++i) s.sources[i].trainable_tokens = trainable_[i];
    return s;
  }

  std::vector<uint64_t> SamplesPerSource() const override { return samples_; }

  const LoaderOptions& options() const override { return o_; }

 private:
  // The ring Next() takes batches from.
  SlotRing& Last() const { return pipeline_->stage ? pipeline_->device : pipeline_->host; }

  // Continues at `state` (the consumer's, or a loaded cursor's) with
  // `phases`: the batches planned for the old state are dropped, and the
  // schedule restarts there. InvalidArgument (and no change) when the
  // epochs or max_steps limit from there is out of range, or when an
  // endless loader there has no room for a step (Room()). `resume`: the
  // state is a loaded cursor, where Explain() replays from from now on.
  Status Restart(MixtureState state, std::vector<MixturePhase> phases, bool resume) {
    const uint64_t position = state.Position();
    TOKPACK_ASSIGN_OR_RETURN(const uint64_t limit,
                             PositionLimit(o_, samples_, phases, position, state.step));
    // A loader with epochs or max_steps ends within the room (PositionLimit
    // keeps its limit at or below Cursor::kMaxPosition, and a cursor's step
    // is at most its position); an endless one would stop at once.
    if (limit == UINT64_MAX && Room(position, state.step) == 0) {
      return InvalidArgumentError(
          "at position " + std::to_string(position) + " (step " + std::to_string(state.step) +
          ") there is no room for another step of " + std::to_string(GlobalBatch()) +
          " positions (batch_size * world_size) before " + kLastPosition);
    }
    PhaseSchedule schedule(phases, GlobalBatch(), caps_);
    schedule.Reset(state);
    const int64_t state_step = state.step;
    uint64_t ticket = 0, generation = 0, ahead_limit = 0;
    {
      std::lock_guard<std::mutex> lock(pipeline_->mu);
      generation = ++generation_;
      if (resume) origin_ = state;
      consumer_state_ = std::move(state);
      phases_ = std::move(phases);
      limit_ = limit;
      // Steps restart at the consumer's; slots still filling for the old
      // generation are told apart by it (FindReady, Finish).
      plan_step_ = copy_step_ = consume_step_;
      SetEnd(position, state_step);
      ahead_limit = end_position_;
      ticket = next_ticket_++;
      pipeline_->host.Reset();
      pipeline_->device.Reset();
    }
    // Steps claimed before this call plan (or skip) first; steps claimed
    // after it plan from the reset schedule.
    {
      std::unique_lock<std::mutex> plan(plan_mu_);
      plan_cv_.wait(plan, [&] { return planned_tickets_ == ticket; });
      schedule_ = schedule;
      ahead_ = std::move(schedule);
      ahead_steps_ = 0;
      ahead_limit_ = ahead_limit;
      planned_generation_ = generation;
      ++planned_tickets_;
      plan_cv_.notify_all();
    }
    return Status::Ok();
  }

  // timeout < 0: wait as long as it takes.
  StatusOr<std::shared_ptr<const Batch>> NextWithin(double timeout) {
    std::unique_lock<std::mutex> lock(pipeline_->mu);
    if (consume_step_ >= end_step_) {
      if (!out_of_room_) return std::shared_ptr<const Batch>();
      return OutOfRangeError("the loader is at position " + std::to_string(end_position_) +
                             " (step " + std::to_string(consumer_state_.step) +
                             "), and another step of " + std::to_string(GlobalBatch()) +
                             " positions (batch_size * world_size) would pass " + kLastPosition +
                             ": a loader stops there rather than wrap its position or step count");
    }
    SlotRing& ring = Last();
    if (ring.Held() == ring.slots().size()) {
      const bool device = pipeline_->stage != nullptr;
      return FailedPreconditionError(
          "all " + std::to_string(ring.slots().size()) + (device ? " device" : "") +
          " batch buffers are still held by the caller; release old batches (or raise " +
          (device ? "device_prefetch)" : "prefetch)"));
    }
    const auto t0 = Clock::now();
    Slot* found = nullptr;
    const auto ready = [&] {
      found = ring.FindReady(consume_step_, generation_);
      return found != nullptr;
    };
    if (!ready() && !ring.WaitForReady(lock, timeout, ready)) {
      // Counted into the step's wait once the batch arrives.
      pending_wait_ += Seconds(Clock::now() - t0);
      return Status(StatusCode::kDeadlineExceeded, "no batch ready within the timeout");
    }
    const double waited = Seconds(Clock::now() - t0) + pending_wait_;
    pending_wait_ = 0;
    if (!found->status.ok()) return found->status;
    consumer_state_ = found->info.state_after;
    ++consume_step_;
    waits_.Record(waited, &stats_);
    stats_.bytes_served += served_bytes_;
    for (const auto& [source, kept] : found->info.trainable) trainable_[source] += kept;
    return HandOut(pipeline_, &ring, found);
  }

  uint64_t GlobalBatch() const {
    return static_cast<uint64_t>(o_.batch_size) * static_cast<uint64_t>(o_.world_size);
  }
  // The steps a loader whose next batch starts at global position
  // `position` with step number `step` can take before its position would
  // pass Cursor::kMaxPosition or its step INT64_MAX: every cursor it saves
  // stays one that resumes. (The step bound follows from the position's for
  // a valid cursor, whose step is at most its position; both are kept.)
  uint64_t Room(uint64_t position, int64_t step) const {
    if (position >= Cursor::kMaxPosition || step < 0) return 0;
    return std::min((Cursor::kMaxPosition - position) / GlobalBatch(),
                    static_cast<uint64_t>(INT64_MAX - step));
  }
  // Under mu: where this loader stops when the batch of local step
  // consume_step_ (step number `step`) starts at global position
  // `position`: at the end of the data (limit_), or, first, at the end of
  // the Room() (out_of_room_, an error for Next()).
  void SetEnd(uint64_t position, int64_t step) {
    const uint64_t room = Room(position, step);
    uint64_t steps = room;
    out_of_room_ = true;
    if (limit_ != UINT64_MAX) {
      const uint64_t data = position >= limit_ ? 0 : (limit_ - position) / GlobalBatch();
      if (data <= room) {
        steps = data;
        out_of_room_ = false;
      }
    }
    // Local steps count this process's batches from 0: the sum saturates
    // only ~2^63 batches from now, never reached.
    steps = std::min(steps, static_cast<uint64_t>(INT64_MAX - consume_step_));
    end_step_ = consume_step_ + static_cast<int64_t>(steps);
    end_position_ = position + steps * GlobalBatch();
  }
  // Under mu: whether local step `step` lies past the end.
  bool PastEnd(int64_t step) const { return step >= end_step_; }

  // The cursor after the last batch handed out. On the consumer's thread.
  Cursor Now() const { return Cursor::Of(o_, sources_, phases_, caps_, consumer_state_); }

  // Under plan_mu_, after `slot` was planned: hints the chunks of its own
  // rows (the prefetch threads fetch them side by side while its assembler
  // reads the first), then walks the lookahead schedule up to
  // lookahead_steps steps past it, telling each dataset which of this
  // rank's windows come next and at which global step, so the soonest are
  // fetched first.
  void PrefetchAhead(const Slot& slot) {
    // The step's own rows, unless a full lookahead hinted them already (each
    // hint costs a lookup; in steady state, per row, the same again).
    if (ahead_steps_ < o_.lookahead_steps) {
      for (const auto& [s, sample] : slot.rows) Hint(s, sample, slot.info.global_step);
    }
    // The window opens one step per plan: at the start (and after a
    // LoadState) the first steps' chunks do not share the link with the
    // whole lookahead's, which the queue's order cannot prevent once they
    // are all in flight.
    ahead_steps_ = std::min<int64_t>(ahead_steps_ + 1, o_.lookahead_steps);
    const uint64_t position = slot.info.position_after;
    const uint64_t ahead = SaturatingMul(static_cast<uint64_t>(ahead_steps_), GlobalBatch());
    const uint64_t target =
        ahead > ahead_limit_ - std::min(ahead_limit_, position) ? ahead_limit_ : position + ahead;
    const uint64_t first = static_cast<uint64_t>(o_.rank) * o_.batch_size;
    if (ahead_.position() < position) ahead_ = schedule_;  // Fell behind (or first use).
    while (ahead_.position() < target && !stopping_.load(std::memory_order_relaxed)) {
      // Step boundaries lie at `position` + k * GlobalBatch() (also after an
      // elastic resume, whose positions need not be multiples of it).
      const uint64_t past = ahead_.position() - position;
      const uint64_t j = past % GlobalBatch();
      const size_t s = ahead_.Next();
      if (s == PhaseSchedule::kExhausted) break;
      if (j >= first && j < first + static_cast<uint64_t>(o_.batch_size)) {
        const uint64_t sample = orders_[s].Sample(ahead_.totals()[s] - 1);
        const int64_t step = slot.info.global_step + 1 + static_cast<int64_t>(past / GlobalBatch());
        Hint(s, sample, step);
      }
    }
  }

  // The error of `schedule`, of `phases`, whose phase has no source left
  // (Plan() passes its own, under plan_mu_).
  Status Exhausted(const PhaseSchedule& schedule, const std::vector<MixturePhase>& phases) const {
    const size_t j = schedule.phase();
    const MixturePhase& phase = phases[j];
    std::string capped;
    for (size_t s = 0; s < sources_.size(); ++s) {
      if (phase.weights[s] > 0) {
        capped += std::string(capped.empty() ? "" : ", ") + "'" + sources_[s].dataset->path() +
                  "' (" + std::to_string(caps_[s]) + " draws)";
      }
    }
    return OutOfRangeError("at position " + std::to_string(schedule.position()) + ", " +
                           PhaseName(j, phase.start_step) +
                           " has no source left: every source it weights reached its cap (" +
                           capped +
                           "); begin a phase that weights other sources by then (SetPhases, or "
                           "LoadState with phases from a cursor saved before it)");
  }

  // Under plan_mu_: tells source s's dataset that `sample` is read at `step`.
  void Hint(size_t s, uint64_t sample, int64_t step) {
    PrefetchSample(*sources_[s].dataset, views_.empty() ? nullptr : views_[s].get(), sample,
                   static_cast<uint64_t>(o_.seq_len), step, read_stats_, &hint_pieces_);
  }

  // Under plan_mu_: plans the rows of this rank for step `slot.step`.
  // False if the loader is being destroyed (a plan can take long); an
  // error in *error when every source of the phase reached its cap.
  bool Plan(Slot& slot, Status* error) {
    const uint64_t first = static_cast<uint64_t>(o_.rank) * o_.batch_size;
    const uint64_t last = first + o_.batch_size;
    for (uint64_t j = 0; j < GlobalBatch(); ++j) {
      if ((j & 0xffff) == 0xffff && stopping_.load(std::memory_order_relaxed)) return false;
      const size_t s = schedule_.Next();
      if (s == PhaseSchedule::kExhausted) {
        *error = Exhausted(schedule_, phases_);
        return true;
      }
      if (j >= first && j < last) {
        slot.rows[j - first] = {static_cast<uint32_t>(s),
                                orders_[s].Sample(schedule_.totals()[s] - 1)};
      }
    }
    slot.info.state_after = schedule_.state();
    slot.info.position_after = schedule_.position();
    slot.info.global_step = slot.info.state_after.step - 1;  // The step just planned.
    return true;
  }

  // Claims the next step's slot under mu, then plans it outside that lock
  // (planning walks the whole global batch, world_size * batch_size
  // positions) in claim order, so Next() never waits behind a plan.
  // Tickets order the planners and LoadState()'s schedule reset.
  void AssembleLoop() {
    SlotRing& ring = pipeline_->host;
    while (true) {
      uint64_t ticket = 0, generation = 0;
      Slot* slot = nullptr;
      {
        std::unique_lock<std::mutex> lock(pipeline_->mu);
        ring.WaitForFree(lock, [&] { return stop_ || (!PastEnd(plan_step_) && ring.FreeSlot()); });
        if (stop_) return;
        slot = ring.FreeSlot();
        slot->seq = plan_step_++;
        slot->generation = generation = generation_;
        slot->state = Slot::State::kFilling;
        ticket = next_ticket_++;
      }
      bool planned = false;
      Status plan_error;
      {
        std::unique_lock<std::mutex> plan(plan_mu_);
        plan_cv_.wait(plan, [&] { return planned_tickets_ == ticket; });
        // A LoadState() after the claim makes this step stale: skip it.
        if (generation == planned_generation_ && !stopping_.load()) {
          planned = Plan(*slot, &plan_error);
          if (planned && plan_error.ok() && lookahead_) PrefetchAhead(*slot);
        }
        ++planned_tickets_;
        plan_cv_.notify_all();
      }
      Status s = plan_error;
      double took = 0;
      if (planned && s.ok()) {
        const auto t0 = Clock::now();
        s = AssembleRows(sources_, views_, o_, layout_, read_stats_.get(), *slot);
        took = Seconds(Clock::now() - t0);
      }
      std::lock_guard<std::mutex> lock(pipeline_->mu);
      assemble_seconds_ += took;
      if (planned) {
        ring.Finish(slot, std::move(s), generation, generation_);
      } else {
        ring.Free(slot);
      }
    }
  }

  // The device stage: takes host batches in step order and moves each into
  // a free device slot.
  void CopyLoop() {
    SlotRing& host = pipeline_->host;
    SlotRing& device = pipeline_->device;
    std::unique_lock<std::mutex> lock(pipeline_->mu);
    while (true) {
      device.WaitForFree(lock,
                         [&] { return stop_ || (!PastEnd(copy_step_) && device.FreeSlot()); });
      if (stop_) return;
      const uint64_t generation = generation_;
      const int64_t seq = copy_step_++;
      Slot* out = device.FreeSlot();
      out->seq = seq;
      out->generation = generation;
      out->state = Slot::State::kFilling;
      Slot* in = nullptr;
      host.WaitForReady(lock, -1, [&] {
        if (stop_ || generation_ != generation) return true;
        in = host.FindReady(seq, generation);
        return in != nullptr;
      });
      if (stop_) return;
      if (in == nullptr) {  // LoadState() began a new generation.
        device.Free(out);
        continue;
      }
      in->state = Slot::State::kHeld;
      lock.unlock();
      Status s = in->status;
      if (s.ok()) s = pipeline_->stage->Copy(in->arrays, out->index);
      out->arrays.num_cu = in->arrays.num_cu;
      out->info = in->info;
      lock.lock();
      host.Free(in);
      device.Finish(out, std::move(s), generation, generation_);
    }
  }

  std::vector<Source> sources_;
  // The mixture, begun phases then those to come; changed by SetPhases()
  // (under mu, on the consumer's thread).
  std::vector<MixturePhase> phases_;
  std::vector<uint64_t> caps_;  // Per source: the most draws (kNoCap: none).
  LoaderOptions o_;             // As resolved by PlanShuffle.
  // Global positions available in all (UINT64_MAX: endless), from the
  // phases and the step count: under mu. ahead_limit_, under plan_mu_:
  // end_position_ of the latest restart, where the lookahead stops.
  uint64_t limit_;
  uint64_t ahead_limit_;
  std::vector<SampleOrder> orders_;
  std::vector<std::shared_ptr<const PackedView>> views_;  // packing="best_fit": per source.
  std::vector<uint64_t> samples_;                         // Per source: positions per epoch.
  std::shared_ptr<Pipeline> pipeline_;
  HostLayout layout_;
  size_t served_bytes_ = 0;  // Per batch, for LoaderStats::bytes_served.
  // Planner side, under plan_mu_: planners (and LoadState's reset) take
  // tickets under mu and run in ticket order.
  std::mutex plan_mu_;
  std::condition_variable plan_cv_;
  PhaseSchedule schedule_;
  PhaseSchedule ahead_;  // Runs lookahead_steps ahead of schedule_ (remote data).
  bool lookahead_ = false;
  std::vector<TokenRange> hint_pieces_;  // Hint()'s scratch.
  int64_t ahead_steps_ = 0;              // Current lookahead, growing to lookahead_steps.
  uint64_t planned_tickets_ = 0;         // Tickets done; under plan_mu_.
  uint64_t planned_generation_ = 0;      // Generation the schedule is at; under plan_mu_.
  std::atomic<bool> stopping_{false};
  // Under mu:
  uint64_t next_ticket_ = 0;
  // Local step where Next() stops (SetEnd): the end of the data, or of the
  // positions a cursor records (out_of_room_); end_position_ is its global
  // position.
  int64_t end_step_ = 0;
  uint64_t end_position_ = 0;
  bool out_of_room_ = false;
  int64_t plan_step_ = 0;  // Next step an assembler claims.
  int64_t copy_step_ = 0;  // Next step the copy stage moves.
  int64_t consume_step_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  // The cursor after the last batch handed out. Written only (under mu) by
  // Next(), LoadState() and SetPhases(), which run on the consumer's thread
  // (one at a time): SaveState() and Step(), on that thread too, need no
  // lock; Stats() takes mu.
  MixtureState consumer_state_;
  // Where the order this loader serves began: the start of the data, or
  // the cursor LoadState() took (Explain() replays from it). Under mu.
  MixtureState origin_;
  LoaderStats stats_;
  std::vector<uint64_t> trainable_;  // Per source: SourceStats::trainable_tokens.
  // This loader's remote traffic; shared with the prefetches it queued.
  std::shared_ptr<ReadStats> read_stats_ = std::make_shared<ReadStats>();
  WaitWindow waits_;
  double pending_wait_ = 0;  // Waited by Next(timeout) calls that timed out.
  double assemble_seconds_ = 0;
  std::vector<std::thread> threads_;
};

Status Validate(const std::vector<Loader::Source>& sources, const std::vector<MixturePhase>& phases,
                const LoaderOptions& o) {
  if (sources.empty()) return InvalidArgumentError("a loader needs at least one dataset");
  TOKPACK_RETURN_IF_ERROR(o.Validate());
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!sources[i].dataset) {
      return InvalidArgumentError("source " + std::to_string(i) + " is null");
    }
  }
  if (!o.allow_mixed_tokenizers) {
    std::vector<NamedManifest> named;
    for (const auto& s : sources) named.push_back({s.dataset->path(), &s.dataset->manifest()});
    if (Status identity = CheckTokenIdentity(named); !identity.ok()) {
      return InvalidArgumentError(
          "a mixture serves one token identity, but " + identity.message() +
          "; pass allow_mixed_tokenizers=true only if their ids mean the same text (one "
          "vocabulary exported twice)");
    }
  }
  return CheckPhases(phases, Names(sources));
}

// The datasets as sources (their weights: the first phase's, which the
// shuffle plan and assembler do not read).
std::vector<Loader::Source> AsSources(std::vector<std::shared_ptr<Dataset>> datasets,
                                      const std::vector<MixturePhase>& phases) {
  std::vector<Loader::Source> sources;
  for (size_t i = 0; i < datasets.size(); ++i) {
    const bool weighted = !phases.empty() && i < phases[0].weights.size();
    sources.push_back({std::move(datasets[i]), weighted ? phases[0].weights[i] : 0.0});
  }
  return sources;
}

// The sources' weights as one phase at step 0. A weighted source is drawn:
// weight 0 would leave it out of every step (phases say when a source is
// absent), and its samples would still count in an epoch.
StatusOr<std::vector<MixturePhase>> OnePhase(const std::vector<Loader::Source>& sources) {
  MixturePhase phase;
  for (const auto& s : sources) {
    if (s.dataset && (!(s.weight > 0) || !std::isfinite(s.weight))) {
      return InvalidArgumentError("the weight of '" + s.dataset->path() + "' is " +
                                  ShortestDouble(s.weight) +
                                  "; weights must be positive and finite (a source absent "
                                  "for a while is weight 0 in a mixture phase)");
    }
    phase.weights.push_back(s.weight);
  }
  return std::vector<MixturePhase>{phase};
}

StatusOr<std::unique_ptr<Loader>> Make(std::vector<Loader::Source> sources,
                                       std::vector<MixturePhase> phases,
                                       const std::vector<double>& max_epochs,
                                       const LoaderOptions& options,
                                       std::shared_ptr<DeviceStage> stage) {
  TOKPACK_RETURN_IF_ERROR(Validate(sources, phases, options));
  TOKPACK_RETURN_IF_ERROR(CheckMaxEpochs(max_epochs, Names(sources)));
  if (stage) {
    // The device stage copies compact windows: one token size for all.
    for (const auto& s : sources) {
      if (s.dataset->dtype() != sources[0].dataset->dtype()) {
        return InvalidArgumentError("a device loader needs one token dtype, but '" +
                                    s.dataset->path() + "' differs from '" +
                                    sources[0].dataset->path() + "'");
      }
    }
  }
  TOKPACK_ASSIGN_OR_RETURN(auto views, OpenPackedViews(sources, options));
  TOKPACK_ASSIGN_OR_RETURN(ShufflePlan plan, PlanShuffle(sources, options, std::move(views)));
  std::vector<uint64_t> samples;
  for (const SampleOrder& order : plan.orders) samples.push_back(order.size());
  std::vector<uint64_t> caps = CapsOf(max_epochs, samples);
  TOKPACK_ASSIGN_OR_RETURN(const uint64_t limit, PositionLimit(options, samples, phases, 0, 0));
  // Once per run, not once per rank.
  if (!plan.notice.empty() && options.rank == 0) std::fprintf(stderr, "%s\n", plan.notice.c_str());
  auto loader =
      std::make_unique<LoaderImpl>(std::move(sources), std::move(phases), std::move(caps),
                                   std::move(plan), std::move(samples), limit, std::move(stage));
  TOKPACK_RETURN_IF_ERROR(loader->Start());
  return std::unique_ptr<Loader>(std::move(loader));
}

}  // namespace

StatusOr<std::unique_ptr<Loader>> CreateLoader(std::vector<Loader::Source> sources,
                                               const LoaderOptions& options,
                                               std::shared_ptr<DeviceStage> stage) {
  TOKPACK_ASSIGN_OR_RETURN(std::vector<MixturePhase> phases, OnePhase(sources));
  return Make(std::move(sources), std::move(phases), {}, options, std::move(stage));
}

StatusOr<std::unique_ptr<Loader>> Loader::Create(std::vector<Source> sources,
                                                 const LoaderOptions& options) {
  TOKPACK_ASSIGN_OR_RETURN(std::vector<MixturePhase> phases, OnePhase(sources));
  std::vector<std::shared_ptr<Dataset>> datasets;
  for (auto& s : sources) datasets.push_back(std::move(s.dataset));
  return Create(std::move(datasets), std::move(phases), options);
}

StatusOr<std::unique_ptr<Loader>> Loader::Create(std::vector<std::shared_ptr<Dataset>> datasets,
                                                 std::vector<MixturePhase> phases,
                                                 const LoaderOptions& options) {
  return Create(std::move(datasets), std::move(phases), {}, options);
}

StatusOr<std::unique_ptr<Loader>> Loader::Create(std::vector<std::shared_ptr<Dataset>> datasets,
                                                 std::vector<MixturePhase> phases,
                                                 std::vector<double> max_epochs,
                                                 const LoaderOptions& options) {
  std::vector<Source> sources = AsSources(std::move(datasets), phases);
  TOKPACK_RETURN_IF_ERROR(Validate(sources, phases, options));
  std::shared_ptr<DeviceStage> stage;
  if (options.device.is_cuda()) {
    const size_t item = static_cast<size_t>(TokenDtypeSize(sources[0].dataset->dtype()));
    TOKPACK_ASSIGN_OR_RETURN(stage, DeviceStage::Create(options, item, AnyLossMasks(sources)));
  }
  return Make(std::move(sources), std::move(phases), max_epochs, options, std::move(stage));
}

}  // namespace tokpack
