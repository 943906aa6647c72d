#include "reader/shuffle_plan.h"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace tokpack {
namespace {

// "1.5 GiB", "16 MiB", "256 B": for messages.
std::string Bytes(uint64_t n) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof(buf), v == static_cast<uint64_t>(v) ? "%.0f %s" : "%.1f %s", v,
                kUnits[u]);
  return buf;
}

// The remote sources seen together: they share the node's chunk cache.
struct RemoteData {
  bool any = false;
  uint64_t bin_bytes = 0;    // Of all remote shards.
  uint64_t cache_bytes = 0;  // This node's smallest limit: for notices only.
  uint64_t chunk_bytes = 0;  // The largest chunk.
  uint64_t chunk_sum = 0;    // One chunk per remote source.
  // What the order may depend on: the data, never this node's cache.
  bool large() const { return bin_bytes > ShufflePlan::kAutoWindowBytes; }
  bool over_cache() const { return cache_bytes > 0 && bin_bytes > cache_bytes; }
};

RemoteData Remote(const std::vector<Loader::Source>& sources) {
  RemoteData r;
  for (const Loader::Source& s : sources) {
    if (!s.dataset->remote()) continue;
    r.any = true;
    const uint64_t cache = s.dataset->cache_bytes();
    const Manifest& m = s.dataset->manifest();
    // What the source reads: its shards' .bin files, or a split's ranges of them.
    for (const ShardInfo& shard : m.shards) r.bin_bytes += shard.tokens * TokenDtypeSize(m.dtype);
    if (cache > 0) r.cache_bytes = r.cache_bytes == 0 ? cache : std::min(r.cache_bytes, cache);
    r.chunk_bytes = std::max(r.chunk_bytes, m.chunk_bytes);
    r.chunk_sum += m.chunk_bytes;
  }
  return r;
}

// Bytes fetched per byte served by a full shuffle over `r`: past the cache,
// each sample costs a chunk of its own.
double FullShuffleAmplification(const RemoteData& r, const LoaderOptions& o, uint64_t item) {
  const double sample = static_cast<double>((o.seq_len + 1) * item);
  const double miss =
      r.over_cache() ? 1 - static_cast<double>(r.cache_bytes) / static_cast<double>(r.bin_bytes)
                     : 0;
  return static_cast<double>(r.chunk_bytes) / sample * miss;
}

StatusOr<std::shared_ptr<const WindowOrder>> MakeWindowOrder(const Dataset& d,
                                                             const LoaderOptions& o,
                                                             uint64_t stream) {
  std::vector<WindowOrder::ShardRange> shards;
  for (size_t k = 0; k < d.num_shards(); ++k) {
    shards.push_back({d.shard_token_offset(k), d.manifest().shards[k].tokens});
  }
  const uint64_t chunk = d.manifest().chunk_bytes;
  const uint64_t item = static_cast<uint64_t>(TokenDtypeSize(d.dtype()));
  const uint64_t L = static_cast<uint64_t>(o.seq_len);
  const uint64_t units =
      static_cast<uint64_t>(o.window_chunks) / WindowOrder::UnitChunks(chunk, item, L);
  auto order = std::make_shared<const WindowOrder>(shards, chunk, item, L, units, o.seed, stream);
  if (order->size() == 0) {
    return OutOfRangeError("seq_len " + std::to_string(L) + " leaves '" + d.path() +
                           "' no sample wholly inside one shard's fetch unit of " +
                           std::to_string(order->unit_chunks()) + " chunks");
  }
  return order;
}

uint64_t WindowBytes(const std::vector<std::shared_ptr<const WindowOrder>>& windows,
                     uint64_t item) {
  uint64_t bytes = 0;
  for (const auto& w : windows) bytes += w->window_units() * w->unit_tokens() * item;
  return bytes;
}

std::string WindowNotice(const RemoteData& r, const LoaderOptions& o,
                         const std::vector<std::shared_ptr<const WindowOrder>>& windows,
                         uint64_t item) {
  uint64_t served = 0, left_out = 0;
  for (const auto& w : windows) {
    served += w->size();
    left_out += w->left_out();
  }
  const WindowOrder& w = *windows.front();
  const uint64_t L = static_cast<uint64_t>(o.seq_len);
  // Only past this node's cache does a full shuffle cost more than the data.
  const std::string full =
      !r.over_cache()
          ? ""
          : "; a full shuffle would fetch about " +
                std::to_string(static_cast<uint64_t>(FullShuffleAmplification(r, o, item) + 0.5)) +
                " bytes per byte served";
  return "tokpack: shuffle=auto chose \"window\": the remote shards (" + Bytes(r.bin_bytes) +
         ") exceed " + Bytes(ShufflePlan::kAutoWindowBytes) +
         ", so each chunk is read once per epoch; window_chunks=" +
         std::to_string(o.window_chunks) + ": windows of " + std::to_string(w.window_units()) +
         (w.window_units() == 1 ? " unit of " : " units of ") + std::to_string(w.unit_chunks()) +
         " x " + Bytes(r.chunk_bytes) + " chunks (" + std::to_string(w.unit_tokens() / L - 1) +
         " samples each); " + std::to_string(left_out) + " of " +
         std::to_string(served + left_out) +
         " samples per epoch cross unit edges and are left out" + full;
}

// The window being read and the next one, being fetched, share the cache; a
// smaller cache costs downloads, never another order.
std::string CacheWarning(const RemoteData& r, const LoaderOptions& o, uint64_t window_bytes) {
  const uint64_t need = 2 * std::min(window_bytes, r.bin_bytes);
  if (r.cache_bytes == 0 || need <= r.cache_bytes) return "";
  return "tokpack: warning: this node's chunk cache (" + Bytes(r.cache_bytes) +
         ") holds fewer than the two windows of shuffle=\"window\" (" + Bytes(need) +
         ", window_chunks=" + std::to_string(o.window_chunks) +
         "), so chunks are fetched more than once per epoch: raise the cache limit "
         "(TOKPACK_CACHE_BYTES, StorageOptions::cache_bytes) on every node, or pass a smaller "
         "window_chunks to every rank (another order)";
}

}  // namespace

StatusOr<ShufflePlan> PlanShuffle(const std::vector<Loader::Source>& sources,
                                  const LoaderOptions& options,
                                  std::vector<std::shared_ptr<const PackedView>> views) {
  ShufflePlan plan;
  LoaderOptions& o = plan.options;
  o = options;
  const bool packed = !views.empty();
  o.document_boundaries = o.document_boundaries || packed;  // A packed row always has them.
  const RemoteData remote = Remote(sources);
  const bool chose = o.shuffle == ShuffleMode::kAuto;
  // Bins are not windows of fetch chunks: packed data is shuffled in full.
  if (chose) o.shuffle = remote.large() && !packed ? ShuffleMode::kWindow : ShuffleMode::kFull;
  if (o.shuffle == ShuffleMode::kWindow && o.window_chunks == 0) {
    o.window_chunks =
        !remote.any
            ? ShufflePlan::kLocalWindowChunks
            : static_cast<int64_t>(std::clamp<uint64_t>(
                  ShufflePlan::kRemoteWindowBytes / remote.chunk_sum, 1, uint64_t{1} << 30));
  }
  std::vector<std::shared_ptr<const WindowOrder>> windows;
  for (size_t s = 0; s < sources.size(); ++s) {
    const Dataset& d = *sources[s].dataset;
    const uint64_t tokens = d.num_tokens();
    const uint64_t n = packed       ? views[s]->num_bins()
                       : tokens > 0 ? (tokens - 1) / static_cast<uint64_t>(o.seq_len)
                                    : 0;
    if (n == 0) {
      return OutOfRangeError("seq_len " + std::to_string(o.seq_len) + " is too long for '" +
                             d.path() + "' (" + std::to_string(tokens) +
                             " tokens: a sample needs seq_len + 1)");
    }
    if (o.shuffle == ShuffleMode::kWindow) {
      StatusOr<std::shared_ptr<const WindowOrder>> made = MakeWindowOrder(d, o, s);
      if (!made.ok() && chose) {
        // auto never fails where full works: a source too short for a
        // window unit gets the full shuffle (the cache misses, and says so).
        LoaderOptions full = options;
        full.shuffle = ShuffleMode::kFull;
        TOKPACK_ASSIGN_OR_RETURN(ShufflePlan plan_full, PlanShuffle(sources, full));
        plan_full.notice =
            "tokpack: shuffle=auto chose \"full\", not \"window\": " + made.status().message() +
            "; the cache will miss";
        return plan_full;
      }
      if (!made.ok()) {
        return OutOfRangeError("shuffle=window: " + made.status().message() + "; use shuffle=full");
      }
      std::shared_ptr<const WindowOrder> w = *std::move(made);
      windows.push_back(w);
      plan.orders.emplace_back(std::move(w));
    } else {
      plan.orders.emplace_back(n, o.shuffle, o.seed, s, o.block_size, o.block_window);
    }
  }
  const uint64_t item = static_cast<uint64_t>(TokenDtypeSize(sources[0].dataset->dtype()));
  if (o.shuffle == ShuffleMode::kWindow) {
    std::vector<std::string> lines;
    if (chose) lines.push_back(WindowNotice(remote, o, windows, item));
    if (remote.any) lines.push_back(CacheWarning(remote, o, WindowBytes(windows, item)));
    for (const std::string& line : lines) {
      if (line.empty()) continue;
      plan.notice += (plan.notice.empty() ? "" : "\n") + line;
    }
  } else if (o.shuffle == ShuffleMode::kFull && remote.over_cache()) {
    const double amplification = FullShuffleAmplification(remote, o, item);
    if (amplification >= 2) {
      plan.notice = "tokpack: warning: shuffle=\"full\" on remote shards (" +
                    Bytes(remote.bin_bytes) + ") larger than the chunk cache (" +
                    Bytes(remote.cache_bytes) + ") fetches about " +
                    std::to_string(static_cast<uint64_t>(amplification + 0.5)) +
                    " bytes per byte served (a " + Bytes(remote.chunk_bytes) +
                    " chunk per sample that misses the cache); " +
                    (packed ? std::string("packing=\"best_fit\" has no window order: raise the "
                                          "cache limit (StorageOptions::cache_bytes)")
                            : std::string("shuffle=\"window\" fetches each chunk once per "
                                          "epoch, or raise the cache limit "
                                          "(TOKPACK_CACHE_BYTES) above the data"));
    }
  }
  plan.views = std::move(views);
  return plan;
}

}  // namespace tokpack
