// Packing plan files: one per shard, so appending shards does not redo the
// rest, and the one entry point the loader and the CLI call,
// LoadOrBuildPackingPlan. docs/format.md, "Packing plan files", specifies
// the bytes.
//
// A plan file is untrusted: it is used only when its magic, version,
// checksum, settings, key (the xxh3 of the shard's document lengths) and
// sizes match and its items satisfy packing_plan.h's invariant for the
// shard's documents. Anything else (corrupt, truncated, stale, other
// settings) is rebuilt in its place, never used; when it cannot be rebuilt
// (nowhere writable), opening fails.
//
// Where: DATASET/packing/ for a local dataset whose directory is writable
// (or where such a plan already is, say made ahead by `tokpack pack`), else
// CACHE_DIR/packing/<dataset fingerprint>/ (remote or read-only datasets;
// StorageOptions::cache_dir). Plans that a writable directory cannot store
// (its disk is full, a quota) go into the next one. One process per node builds: it holds an
// exclusive flock on plan.lock in that directory while it builds; the
// others wait on it, then load what it wrote. Files are written to a
// temporary name and renamed.
#ifndef TOKPACK_SRC_READER_PLAN_FILE_H_
#define TOKPACK_SRC_READER_PLAN_FILE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reader/packing_plan.h"
#include "tokpack/dataset.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack {

inline constexpr uint32_t kPlanFileVersion = 1;
inline constexpr std::string_view kPlanFileMagic("TPKPLAN\0", 8);
// magic, version, flags, key, documents, seq_len, max_docs_per_sequence,
// bins, items: the bytes before the offsets.
inline constexpr uint64_t kPlanHeaderBytes = 64;
inline constexpr const char* kPlanLockName = "plan.lock";

// A shard's key: xxh3_64 of its document lengths, each a u64 little-endian
// (a plan is a function of exactly these, L and the cap).
uint64_t PlanShardKey(const std::vector<uint64_t>& lengths);

// "s00003.L2048.m0.v1.<key as 16 hex digits>.plan".
std::string PlanFileName(size_t shard, uint64_t key, const PackingSettings& settings);

// The file's bytes (deterministic: a function of its arguments).
std::string EncodePlanFile(const ShardPlan& plan, const PackingSettings& settings, uint64_t key,
                           uint64_t documents);

// The plan in `bytes`, verified against the expected settings and the
// shard's document lengths (counts filled in). DataLoss naming `name` and
// what is wrong: a short or corrupt file, another version, settings or key
// (stale), or items that break the invariant.
StatusOr<ShardPlan> DecodePlanFile(std::string_view bytes, const std::string& name,
                                   const PackingSettings& settings,
                                   const std::vector<uint64_t>& lengths);

// The directories plans of `dataset` are looked for in, in order: beside
// the shards (local datasets only), then in the cache (when cache_dir is
// set). The first writable one is where missing plans are built.
std::vector<std::string> PlanDirectories(const Dataset& dataset, const StorageOptions& storage);

// What LoadOrBuildPackingPlan is doing, for a progress line.
struct PlanProgress {
  enum class Stage {
    kWaiting,     // For another process's build (the lock in `dir`).
    kBuilding,    // shards_built of shards_to_build done so far.
    kRebuilding,  // `detail` says why a stored plan was not used.
    kUnwritable,  // `dir` cannot store plans (`detail`: why); the next one is tried.
  };
  Stage stage = Stage::kBuilding;
  size_t shards_built = 0;
  size_t shards_to_build = 0;
  std::string dir;
  std::string detail;
};
// Called from the planning threads, one call at a time.
using PlanProgressFn = std::function<void(const PlanProgress&)>;

// The packing plan of `dataset` under `settings`: each shard's plan loaded
// from its file, or built (on `threads` threads; 0: one per core) and
// stored where the header says, under the directory's lock. Any thread
// count gives the same files. `storage.cancel` stops a wait for the lock
// and the planning within milliseconds: Cancelled, with the plan files this
// call wrote removed. InvalidArgument for bad settings; FailedPrecondition
// naming the directories when a plan must be built and none of them is
// writable; the last write error, naming them, when none could store it.
StatusOr<std::shared_ptr<const PackingPlan>> LoadOrBuildPackingPlan(
    const Dataset& dataset, const PackingSettings& settings, const StorageOptions& storage,
    int threads = 0, const PlanProgressFn& progress = nullptr);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_PLAN_FILE_H_
