#include "reader/plan_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/chunk_hasher.h"
#include "base/file_system.h"
#include "storage/cache_files.h"
#include "tokpack/files.h"
#include "tokpack/manifest.h"

namespace tokpack {
namespace {

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint32_t GetU32(std::string_view b, uint64_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(b[at + i])) << (8 * i);
  return v;
}
uint64_t GetU64(std::string_view b, uint64_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(b[at + i])) << (8 * i);
  return v;
}

// Runs fn(i) for i in [0, n) on up to `threads` threads (0: one per core);
// the error of the smallest failing i, so the outcome does not depend on
// scheduling.
Status ParallelFor(size_t n, int threads, const std::function<Status(size_t)>& fn) {
  size_t t = threads > 0 ? static_cast<size_t>(threads) : std::thread::hardware_concurrency();
  t = std::max<size_t>(1, std::min(t, n));
  std::vector<Status> errors(n);
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) errors[i] = fn(i);
  };
  std::vector<std::thread> pool;
  for (size_t i = 1; i < t; ++i) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
  for (Status& s : errors) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

bool Writable(const std::string& dir) {
  return CreateDirs(dir).ok() && ::access(dir.c_str(), W_OK) == 0;
}

// The directory holding a local dataset's shards: the dataset directory, or
// a bare Megatron prefix's directory.
std::string DatasetDirectory(const Dataset& dataset) {
  if (dataset.has_manifest()) return dataset.path();
  const std::string& p = dataset.path();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash + 1);
}

}  // namespace

uint64_t PlanShardKey(const std::vector<uint64_t>& lengths) {
  std::string bytes;
  bytes.reserve(8 * lengths.size());
  for (uint64_t n : lengths) PutU64(&bytes, n);
  return Xxh3(bytes);
}

std::string PlanFileName(size_t shard, uint64_t key, const PackingSettings& settings) {
  char name[128];
  std::snprintf(name, sizeof(name), "s%05zu.L%" PRId64 ".m%" PRId64 ".v%u.%s.plan", shard,
                settings.seq_len, settings.max_docs_per_sequence, kPlanFileVersion,
                HashToHex(key).c_str());
  return name;
}

std::string EncodePlanFile(const ShardPlan& plan, const PackingSettings& settings, uint64_t key,
                           uint64_t documents) {
  std::string out(kPlanFileMagic);
  out.reserve(kPlanHeaderBytes + 8 * plan.bin_offsets.size() + 8 * plan.items.size() + 8);
  PutU32(&out, kPlanFileVersion);
  PutU32(&out, 0);  // Flags: none yet.
  PutU64(&out, key);
  PutU64(&out, documents);
  PutU64(&out, static_cast<uint64_t>(settings.seq_len));
  PutU64(&out, static_cast<uint64_t>(settings.max_docs_per_sequence));
  PutU64(&out, plan.bins());
  PutU64(&out, plan.items.size());
  for (uint64_t o : plan.bin_offsets) PutU64(&out, o);
  for (const PieceRef& p : plan.items) {
    PutU32(&out, p.document);
    PutU32(&out, p.piece);
  }
  PutU64(&out, Xxh3(out));
  return out;
}

StatusOr<ShardPlan> DecodePlanFile(std::string_view b, const std::string& name,
                                   const PackingSettings& settings,
                                   const std::vector<uint64_t>& lengths) {
  const auto bad = [&name](const std::string& what) { return DataLossError(name + ": " + what); };
  if (b.size() < kPlanHeaderBytes + 16 || b.substr(0, 8) != kPlanFileMagic) {
    return bad("not a tokpack plan file (no magic, or shorter than its header)");
  }
  if (const uint32_t v = GetU32(b, 8); v != kPlanFileVersion) {
    return bad("plan format version " + std::to_string(v) + ", expected " +
               std::to_string(kPlanFileVersion));
  }
  if (Xxh3(b.substr(0, b.size() - 8)) != GetU64(b, b.size() - 8)) {
    return bad("checksum mismatch (corrupt or truncated)");
  }
  // Reserved: a writer that sets them means something this reader does not know.
  if (const uint32_t flags = GetU32(b, 12); flags != 0) {
    return bad("flags " + std::to_string(flags) + " are not 0 (made by a newer tokpack?)");
  }
  const int64_t seq_len = static_cast<int64_t>(GetU64(b, 32));
  const int64_t cap = static_cast<int64_t>(GetU64(b, 40));
  if (seq_len != settings.seq_len || cap != settings.max_docs_per_sequence) {
    return bad("made for seq_len " + std::to_string(seq_len) + ", max_docs_per_sequence " +
               std::to_string(cap) + ", not " + std::to_string(settings.seq_len) + ", " +
               std::to_string(settings.max_docs_per_sequence));
  }
  if (GetU64(b, 16) != PlanShardKey(lengths) || GetU64(b, 24) != lengths.size()) {
    return bad("stale: made for other documents than the shard's");
  }
  const uint64_t bins = GetU64(b, 48), items = GetU64(b, 56);
  // Bounded by the size before any multiplication can overflow.
  const uint64_t words = (b.size() - kPlanHeaderBytes - 8) / 8;
  if (bins >= words || items > words ||
      kPlanHeaderBytes + 8 * (bins + 1) + 8 * items + 8 != b.size()) {
    return bad(std::to_string(b.size()) + " bytes do not hold " + std::to_string(bins) +
               " bins and " + std::to_string(items) + " items");
  }
  ShardPlan plan;
  plan.bin_offsets.resize(bins + 1);
  plan.items.resize(items);
  uint64_t at = kPlanHeaderBytes;
  for (uint64_t& o : plan.bin_offsets) o = GetU64(b, (at += 8) - 8);
  for (PieceRef& p : plan.items) {
    p.document = GetU32(b, at);
    p.piece = GetU32(b, at + 4);
    at += 8;
  }
  TOKPACK_RETURN_IF_ERROR(CheckShardPlan(lengths, settings, name, &plan));
  return plan;
}

std::vector<std::string> PlanDirectories(const Dataset& dataset, const StorageOptions& storage) {
  std::vector<std::string> dirs;
  if (!dataset.remote()) dirs.push_back(JoinPath(DatasetDirectory(dataset), "packing"));
  if (!storage.cache_dir.empty()) {
    dirs.push_back(
        JoinPath(JoinPath(storage.cache_dir, "packing"), HashToHex(dataset.fingerprint())));
  }
  return dirs;
}

namespace {

// One LoadOrBuildPackingPlan call: each shard's plan, loaded or built, and
// where it is.
class Planner {
 public:
  Planner(const Dataset& dataset, const PackingSettings& settings, const StorageOptions& storage,
          int threads, const PlanProgressFn& progress)
      : dataset_(dataset),
        settings_(settings),
        storage_(storage),
        threads_(threads),
        progress_(progress),
        plans_(dataset.num_shards()),
        files_(dataset.num_shards()),
        problems_(dataset.num_shards()),
        written_(dataset.num_shards(), 0) {}

  // Each shard's plan from the first of `dirs` that holds a usable one.
  Status LoadAll(const std::vector<std::string>& dirs) {
    return ParallelFor(plans_.size(), threads_, [&](size_t k) {
      TOKPACK_RETURN_IF_ERROR(Cancelled());
      const std::vector<uint64_t> lengths = ShardDocumentLengths(dataset_, k);
      for (const std::string& dir : dirs) {
        if (TryLoad(k, dir, lengths)) break;
      }
      return Status::Ok();
    });
  }

  std::vector<size_t> Missing() const {
    std::vector<size_t> missing;
    for (size_t k = 0; k < files_.size(); ++k) {
      if (files_[k].empty()) missing.push_back(k);
    }
    return missing;
  }

  // Builds the missing plans into `dir` under its lock. When `dir` cannot
  // take them (a full disk, a quota: its lock or a plan cannot be written),
  // *unwritable says why and the shards not written stay missing, for the
  // next directory.
  Status BuildIn(const std::string& dir, Status* unwritable) {
    const std::vector<size_t> missing = Missing();
    // Counted across directories: the shards missing when the first began.
    if (to_build_ == 0) to_build_ = missing.size();
    LockedFile lock;
    if (Status opened = lock.Open(JoinPath(dir, kPlanLockName), O_RDWR | O_CREAT); !opened.ok()) {
      *unwritable = opened;
      return Status::Ok();
    }
    if (Status held = lock.Lock(LOCK_EX | LOCK_NB); !held.ok()) {
      // Only "held by another process" is worth waiting for.
      if (held.code() != StatusCode::kFailedPrecondition) return held;
      Report({PlanProgress::Stage::kWaiting, built_, to_build_, dir, ""});
      ChunkCache::LockWait wait;
      // A build of billions of documents takes minutes; a dead holder's
      // flock is released by the kernel, so this only bounds a hung one.
      wait.limit = std::chrono::hours(2);
      wait.cancel = storage_.cancel;
      TOKPACK_RETURN_IF_ERROR(lock.Lock(LOCK_EX, wait));
    }
    std::atomic<bool> full{false};  // Set once a write failed: the rest skip `dir`.
    std::mutex mu;
    return ParallelFor(missing.size(), threads_, [&](size_t i) -> Status {
      TOKPACK_RETURN_IF_ERROR(Cancelled());
      if (full.load()) return Status::Ok();
      const size_t k = missing[i];
      const std::vector<uint64_t> lengths = ShardDocumentLengths(dataset_, k);
      if (TryLoad(k, dir, lengths)) return Status::Ok();  // Another process built it.
      // Why the stored plan (here, else elsewhere) was not used; empty: none.
      const std::string why = problems_[k];
      if (!why.empty()) {
        Report({PlanProgress::Stage::kRebuilding, built_, to_build_, dir, why});
      }
      const std::string shard = dataset_.path() + " shard " + std::to_string(k);
      TOKPACK_ASSIGN_OR_RETURN(ShardPlan plan,
                               PackShard(lengths, settings_, shard, storage_.cancel));
      const uint64_t key = PlanShardKey(lengths);
      const std::string name = PlanFileName(k, key, settings_);
      if (Status w = WriteFileAtomically(PosixFileSystem(), dir, name,
                                         EncodePlanFile(plan, settings_, key, lengths.size()));
          !w.ok()) {
        std::lock_guard<std::mutex> hold(mu);
        if (!full.exchange(true)) *unwritable = w;
        return Status::Ok();
      }
      plans_[k] = std::move(plan);
      files_[k] = JoinPath(dir, name);
      written_[k] = 1;
      Report({PlanProgress::Stage::kBuilding, ++built_, to_build_, dir, ""});
      return Status::Ok();
    });
  }

  // Interrupted, the call leaves the directories as it found them: a plan
  // made ahead is made whole (`tokpack pack` exits 0) or not at all.
  void RemoveWritten() const {
    for (size_t k = 0; k < files_.size(); ++k) {
      if (written_[k]) ::unlink(files_[k].c_str());
    }
  }

  void Report(const PlanProgress& p) {
    if (!progress_) return;
    std::lock_guard<std::mutex> lock(progress_mu_);
    progress_(p);
  }

  std::shared_ptr<const PackingPlan> Make() {
    return PackingPlan::Make(dataset_, settings_, plans_, std::move(files_));
  }

 private:
  Status Cancelled() const {
    if (storage_.cancel == nullptr || !storage_.cancel->load()) return Status::Ok();
    return CancelledError(dataset_.path() + ": planning cancelled");
  }

  // A plan found in `dir`, verified; false (and why, unless missing) if not.
  // It is read as any file from outside is (tokpack/files.h): a FIFO or a
  // link to /dev/zero put in its place is refused, not waited on or read
  // without end, and so is a file larger than the shard's plan can be.
  bool TryLoad(size_t k, const std::string& dir, const std::vector<uint64_t>& lengths) {
    const std::string path = JoinPath(dir, PlanFileName(k, PlanShardKey(lengths), settings_));
    const uint64_t L = static_cast<uint64_t>(settings_.seq_len);
    uint64_t pieces = 0;
    for (uint64_t n : lengths) pieces += n / L + (n % L != 0);
    // Header, bin offsets (at most one bin a piece), items, checksum.
    const uint64_t most = kPlanHeaderBytes + 8 * (pieces + 1) + 8 * pieces + 8;
    StatusOr<std::string> bytes = ReadSmallFile(path, most, "a packing plan file");
    if (!bytes.ok()) {
      if (bytes.status().code() != StatusCode::kNotFound) problems_[k] = bytes.status().message();
      return false;
    }
    StatusOr<ShardPlan> plan = DecodePlanFile(*bytes, path, settings_, lengths);
    if (!plan.ok()) {
      problems_[k] = plan.status().message();
      return false;
    }
    plans_[k] = std::move(*plan);
    files_[k] = path;
    return true;
  }

  const Dataset& dataset_;
  const PackingSettings settings_;
  const StorageOptions& storage_;
  const int threads_;
  const PlanProgressFn& progress_;
  std::mutex progress_mu_;
  // Per shard, each set by the one thread that handles the shard.
  std::vector<ShardPlan> plans_;
  std::vector<std::string> files_;     // Where its plan is; empty: missing.
  std::vector<std::string> problems_;  // Why a stored plan was not used.
  std::vector<char> written_;          // By this call (char: no shared bits).
  size_t to_build_ = 0;
  std::atomic<size_t> built_{0};
};

}  // namespace

StatusOr<std::shared_ptr<const PackingPlan>> LoadOrBuildPackingPlan(
    const Dataset& dataset, const PackingSettings& settings, const StorageOptions& storage,
    int threads, const PlanProgressFn& progress) {
  TOKPACK_RETURN_IF_ERROR(settings.Validate());
  const std::vector<std::string> dirs = PlanDirectories(dataset, storage);
  Planner planner(dataset, settings, storage, threads, progress);
  TOKPACK_RETURN_IF_ERROR(planner.LoadAll(dirs));
  // Missing plans go into the first writable directory; what it cannot
  // take (its disk is full) into the next.
  Status unwritable;
  std::string tried;
  for (const std::string& dir : dirs) {
    if (planner.Missing().empty()) break;
    tried += (tried.empty() ? "" : ", ") + dir;
    if (!Writable(dir)) continue;
    Status why;
    if (Status s = planner.BuildIn(dir, &why); !s.ok()) {
      if (s.code() == StatusCode::kCancelled) planner.RemoveWritten();
      return s;
    }
    if (!why.ok()) {
      planner.Report({PlanProgress::Stage::kUnwritable, 0, 0, dir, why.message()});
      unwritable = why;
    }
  }
  if (!planner.Missing().empty()) {
    const std::string what = dataset.path() + ": no packing plan for seq_len " +
                             std::to_string(settings.seq_len) + " and ";
    const std::string where = " (tried " + (tried.empty() ? "nothing" : tried);
    if (!unwritable.ok()) {
      return unwritable.WithContext(what + "no directory could store one" + where + ")");
    }
    return FailedPreconditionError(what + "nowhere writable to build one" + where +
                                   "; set the cache directory, or run `tokpack pack` where the "
                                   "dataset is writable)");
  }
  return planner.Make();
}

}  // namespace tokpack
