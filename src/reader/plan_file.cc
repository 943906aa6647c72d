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

#include "common/chunk_hasher.h"
#include "io/file_system.h"
#include "storage/cache_files.h"
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

StatusOr<std::shared_ptr<const PackingPlan>> LoadOrBuildPackingPlan(
    const Dataset& dataset, const PackingSettings& settings, const StorageOptions& storage,
    int threads, const PlanProgressFn& progress) {
  TOKPACK_RETURN_IF_ERROR(settings.Validate());
  const size_t n = dataset.num_shards();
  const std::vector<std::string> dirs = PlanDirectories(dataset, storage);
  std::vector<ShardPlan> plans(n);
  std::vector<std::string> files(n);
  std::vector<std::string> problems(n);
  std::mutex mu;
  const auto report = [&](const PlanProgress& p) {
    if (!progress) return;
    std::lock_guard<std::mutex> lock(mu);
    progress(p);
  };
  // A plan found in `dir`, verified; false (and why, unless missing) if not.
  const auto try_load = [&](size_t k, const std::string& dir,
                            const std::vector<uint64_t>& lengths) {
    const std::string path = JoinPath(dir, PlanFileName(k, PlanShardKey(lengths), settings));
    StatusOr<std::string> bytes = ReadFileToString(path);
    if (!bytes.ok()) {
      if (bytes.status().code() != StatusCode::kNotFound) problems[k] = bytes.status().message();
      return false;
    }
    StatusOr<ShardPlan> plan = DecodePlanFile(*bytes, path, settings, lengths);
    if (!plan.ok()) {
      problems[k] = plan.status().message();
      return false;
    }
    plans[k] = std::move(*plan);
    files[k] = path;
    return true;
  };
  TOKPACK_RETURN_IF_ERROR(ParallelFor(n, threads, [&](size_t k) {
    const std::vector<uint64_t> lengths = ShardDocumentLengths(dataset, k);
    for (const std::string& dir : dirs) {
      if (try_load(k, dir, lengths)) break;
    }
    return Status::Ok();
  }));
  std::vector<size_t> missing;
  for (size_t k = 0; k < n; ++k) {
    if (files[k].empty()) missing.push_back(k);
  }
  if (!missing.empty()) {
    std::string dir;
    for (const std::string& d : dirs) {
      if (Writable(d)) {
        dir = d;
        break;
      }
    }
    if (dir.empty()) {
      std::string tried;
      for (const std::string& d : dirs) tried += (tried.empty() ? "" : ", ") + d;
      return FailedPreconditionError(
          dataset.path() + ": no packing plan for seq_len " + std::to_string(settings.seq_len) +
          " and nowhere writable to build one (tried " + (tried.empty() ? "nothing" : tried) +
          "; set the cache directory, or run `tokpack pack` where the dataset is writable)");
    }
    LockedFile lock;
    TOKPACK_RETURN_IF_ERROR(lock.Open(JoinPath(dir, kPlanLockName), O_RDWR | O_CREAT));
    if (Status held = lock.Lock(LOCK_EX | LOCK_NB); !held.ok()) {
      // Only "held by another process" is worth waiting for.
      if (held.code() != StatusCode::kFailedPrecondition) return held;
      report({PlanProgress::Stage::kWaiting, 0, missing.size(), dir, ""});
      ChunkCache::LockWait wait;
      // A build of billions of documents takes minutes; a dead holder's
      // flock is released by the kernel, so this only bounds a hung one.
      wait.limit = std::chrono::hours(2);
      wait.cancel = storage.cancel;
      TOKPACK_RETURN_IF_ERROR(lock.Lock(LOCK_EX, wait));
    }
    std::atomic<size_t> built{0};
    const auto build = [&](size_t i) -> Status {
      const size_t k = missing[i];
      const std::vector<uint64_t> lengths = ShardDocumentLengths(dataset, k);
      if (try_load(k, dir, lengths)) return Status::Ok();  // Another process built it.
      // Why the stored plan (here, else elsewhere) was not used; empty: none.
      const std::string why = problems[k];
      if (!why.empty()) report({PlanProgress::Stage::kRebuilding, built, missing.size(), dir, why});
      const std::string shard = dataset.path() + " shard " + std::to_string(k);
      TOKPACK_ASSIGN_OR_RETURN(ShardPlan plan, PackShard(lengths, settings, shard));
      const uint64_t key = PlanShardKey(lengths);
      const std::string name = PlanFileName(k, key, settings);
      TOKPACK_RETURN_IF_ERROR(WriteFileAtomically(
          PosixFileSystem(), dir, name, EncodePlanFile(plan, settings, key, lengths.size())));
      plans[k] = std::move(plan);
      files[k] = JoinPath(dir, name);
      report({PlanProgress::Stage::kBuilding, ++built, missing.size(), dir, ""});
      return Status::Ok();
    };
    TOKPACK_RETURN_IF_ERROR(ParallelFor(missing.size(), threads, build));
  }
  return PackingPlan::Make(dataset, settings, plans, std::move(files));
}

}  // namespace tokpack
