// Reader benchmark (not a test): tokpack's Loader against the machine's
// memcpy bound, on a dataset in the page cache. bench/reader_bench.py and
// bench/python_bench.py run it and write their sections of docs/benchmarks.md.
//
//   reader_bench make DIR TOKENS [SHARD_TOKENS]   write a synthetic uint16 dataset
//   reader_bench make-masked DIR TOKENS [SHARD_TOKENS]
//                                                 the same tokens with loss masks (each
//                                                 document's first 40% a prompt without
//                                                 loss), to time masked against unmasked
//   reader_bench run DIR SECONDS [threads] [prefetch] [seq_len] [batch_size] [rows]
//                                                 print one JSON line of results
//                                                 (defaults 2, 8, 2048, 8, concat);
//                                                 rows: concat, boundaries (concat
//                                                 with document_boundaries) or
//                                                 best_fit (packed rows)
//   reader_bench open DIR                         seconds to open DIR (best of 5)
//   reader_bench windows DIR COUNT [seq_len]      microseconds per random window of
//                                                 seq_len + 1 tokens (int64), one
//                                                 thread, after a pass that reads it
//                                                 all; DIR may be a URL (storage
//                                                 options from the environment)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/file_system.h"
#include "format/shard_writer.h"
#include "tokpack/loader.h"
#include "tokpack/storage.h"

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Anonymous resident memory (kB): heap and buffers, not the mapped dataset,
// whose clean page-cache pages the kernel counts in RSS and can drop.
long RssAnonKb() {
  std::ifstream f("/proc/self/status");
  std::string key;
  long value = -1;
  while (f >> key) {
    if (key == "RssAnon:") {
      f >> value;
      break;
    }
    f.ignore(1 << 12, '\n');
  }
  return value;
}

int Make(const std::string& dir, uint64_t tokens, uint64_t shard_tokens, bool masked) {
  tokpack::CreateDirs(dir).IgnoreError();
  tokpack::ShardWriter w(tokpack::PosixFileSystem(), dir, tokpack::TokenDtype::kUInt16,
                         tokpack::Manifest::kDefaultChunkBytes, shard_tokens, masked);
  std::mt19937_64 rng(1);
  std::string doc, loss;
  for (uint64_t t = 0; t < tokens;) {
    const uint64_t len =
        std::min<uint64_t>({tokens - t, 50 + rng() % 4000, std::max<uint64_t>(1, shard_tokens)});
    doc.resize(2 * len);
    for (uint64_t i = 0; i < len; ++i) {
      const uint16_t v = static_cast<uint16_t>(rng() % 50000);
      std::memcpy(&doc[2 * i], &v, 2);
    }
    if (masked) {
      loss.assign(len, 1);
      std::fill(loss.begin(), loss.begin() + len * 2 / 5, 0);
    }
    if (!w.AddDocument(doc, len, loss).ok()) return 1;
    t += len;
  }
  tokpack::Manifest m;
  m.shards = *w.Finish();
  m.provenance.kind = "build";
  m.provenance.version = "bench";
  return m.Save(dir).ok() ? 0 : 1;
}

double MemcpyGbPerSecond() {
  const size_t bytes = 256u << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    best = std::max(best, bytes / Since(t0) / 1e9);
    a[rep] = b[bytes - 1 - rep];  // Keep the copies observable.
  }
  return best;
}

// CPU seconds of this process (all threads), user and system.
double ProcessCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int Run(const std::string& dir, double seconds, int threads, int prefetch, int64_t seq_len,
        int64_t batch_size, const std::string& rows) {
  // A URL reads its storage settings from the environment (a warm cache).
  auto storage = tokpack::IsRemoteUrl(dir) ? tokpack::StorageOptions::FromEnvironment()
                                           : tokpack::StorageOptions();
  if (!storage.ok()) {
    std::fprintf(stderr, "%s\n", storage.status().ToString().c_str());
    return 1;
  }
  auto ds = tokpack::Dataset::Open(dir, *storage);
  if (!ds.ok()) {
    std::fprintf(stderr, "%s\n", ds.status().ToString().c_str());
    return 1;
  }
  tokpack::LoaderOptions o;
  o.seq_len = seq_len;
  o.batch_size = batch_size;
  o.seed = 1;
  o.threads = threads;
  o.prefetch = prefetch;
  if (rows == "boundaries") {
    o.document_boundaries = true;
  } else if (rows == "best_fit") {
    o.packing = tokpack::Packing::kBestFit;
  } else if (rows != "concat") {
    std::fprintf(stderr, "rows must be concat, boundaries or best_fit, not %s\n", rows.c_str());
    return 2;
  }
  auto loader = tokpack::Loader::Create({{*ds, 1.0}}, o);
  if (!loader.ok()) {
    std::fprintf(stderr, "%s\n", loader.status().ToString().c_str());
    return 1;
  }
  // Touch every page once so the timed part reads from the page cache.
  std::vector<int64_t> sink(1 << 20);
  for (uint64_t t = 0; t + sink.size() <= (*ds)->num_tokens(); t += sink.size()) {
    (void)(*ds)->ReadTokens(t, sink.size(), sink.data());
  }
  for (int i = 0; i < 50; ++i) (void)(*loader)->Next();  // Warm the ring.
  const tokpack::LoaderStats warm = (*loader)->Stats();
  uint64_t checksum = 0, steps = 0;
  const auto t0 = Clock::now();
  const double cpu0 = ProcessCpuSeconds();
  while (Since(t0) < seconds) {
    auto b = (*loader)->Next();
    if (!b.ok() || !*b) return 1;
    checksum += static_cast<const int64_t*>((*b)->inputs())[steps % seq_len];
    ++steps;
  }
  const double took = Since(t0);
  const double cpu = ProcessCpuSeconds() - cpu0;
  const double out_bytes = steps * 2.0 * batch_size * seq_len * 8;  // inputs + targets, int64.
  const tokpack::LoaderStats end = (*loader)->Stats();
  // Assembly time per batch (all threads), from the batches assembled while timed.
  const double assembled = static_cast<double>(end.steps - warm.steps);
  std::printf(
      "{\"samples_per_s\": %.1f, \"gb_per_s\": %.3f, \"memcpy_gb_per_s\": %.3f, "
      "\"steps\": %llu, \"rss_anon_kb\": %ld, \"tokens\": %llu, \"wait_s\": %.4f, "
      "\"assemble_us_per_batch\": %.2f, \"cpu_us_per_sample\": %.4f, \"checksum\": %llu}\n",
      steps * batch_size / took, out_bytes / took / 1e9, MemcpyGbPerSecond(),
      static_cast<unsigned long long>(steps), RssAnonKb(),
      static_cast<unsigned long long>((*ds)->num_tokens()),
      end.wait_seconds_total - warm.wait_seconds_total,
      (end.assemble_seconds_total - warm.assemble_seconds_total) / assembled * 1e6,
      cpu * 1e6 / (steps * batch_size), static_cast<unsigned long long>(checksum));
  return 0;
}

}  // namespace

// CPU time of this thread: on a shared machine, steadier than wall time.
double ThreadCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// The cost of Dataset::ReadTokens itself, without the Loader around it.
int Windows(const std::string& dir, uint64_t count, uint64_t seq_len) {
  auto storage = tokpack::StorageOptions::FromEnvironment();
  if (!storage.ok()) {
    std::fprintf(stderr, "%s\n", storage.status().ToString().c_str());
    return 1;
  }
  auto ds = tokpack::Dataset::Open(dir, *storage);
  if (!ds.ok()) {
    std::fprintf(stderr, "%s\n", ds.status().ToString().c_str());
    return 1;
  }
  const uint64_t total = (*ds)->num_tokens();
  std::vector<int64_t> out(std::max<uint64_t>(seq_len + 1, 1 << 16));
  for (uint64_t t = 0; t < total; t += out.size()) {  // Warm: cached, paged in (and mapped).
    if (!(*ds)->ReadTokens(t, std::min<uint64_t>(out.size(), total - t), out.data()).ok()) return 1;
  }
  std::mt19937_64 rng(1);
  uint64_t checksum = 0;
  const double cpu0 = ThreadCpuSeconds();
  const auto t0 = Clock::now();
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t begin = rng() % (total - seq_len);
    if (!(*ds)->ReadTokens(begin, seq_len + 1, out.data()).ok()) return 1;
    checksum += static_cast<uint64_t>(out[i % (seq_len + 1)]);
  }
  const double wall = Since(t0), cpu = ThreadCpuSeconds() - cpu0;
  std::printf(
      "{\"us_per_window\": %.4f, \"cpu_us_per_window\": %.4f, \"windows\": %llu, "
      "\"checksum\": %llu}\n",
      wall / count * 1e6, cpu / count * 1e6, static_cast<unsigned long long>(count),
      static_cast<unsigned long long>(checksum));
  return 0;
}

int Open(const std::string& dir) {
  double best = 1e9;
  size_t shards = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
    auto ds = tokpack::Dataset::Open(dir);
    best = std::min(best, Since(t0));
    if (!ds.ok()) return 1;
    shards = (*ds)->num_shards();
  }
  std::printf("{\"open_seconds\": %.6f, \"shards\": %zu}\n", best, shards);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 4 && (std::string(argv[1]) == "make" || std::string(argv[1]) == "make-masked")) {
    return Make(argv[2], std::stoull(argv[3]), argc > 4 ? std::stoull(argv[4]) : 1ull << 29,
                std::string(argv[1]) == "make-masked");
  }
  if (argc >= 3 && std::string(argv[1]) == "open") return Open(argv[2]);
  if (argc >= 4 && std::string(argv[1]) == "windows") {
    return Windows(argv[2], std::stoull(argv[3]), argc > 4 ? std::stoull(argv[4]) : 2048);
  }
  if (argc >= 4 && std::string(argv[1]) == "run") {
    return Run(argv[2], std::stod(argv[3]), argc > 4 ? std::atoi(argv[4]) : 2,
               argc > 5 ? std::atoi(argv[5]) : 8, argc > 6 ? std::atoll(argv[6]) : 2048,
               argc > 7 ? std::atoll(argv[7]) : 8, argc > 8 ? argv[8] : "concat");
  }
  std::fprintf(
      stderr,
      "usage: reader_bench make DIR TOKENS [SHARD_TOKENS] | run DIR SECONDS [threads]"
      " [prefetch] [seq_len] [batch_size] [rows] | open DIR | windows DIR COUNT [seq_len]\n");
  return 2;
}
