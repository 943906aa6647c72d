// tokenizer_encode_bench: tokpack's own encoding speed, one thread. Loads a
// tokenizer with tokpack::Tokenizer::Load (any kind it reads), reads the
// "text" field of every line of a JSONL file into memory (untimed), then
// times Tokenizer::Encode over all documents, --passes times, as the packer
// calls it (with EncodeCounts). Prints one JSON object: the best pass's wall
// and thread CPU seconds and MB/s by each, documents, tokens, text bytes, and
// an FNV-1a hash of all ids so that runs of two builds can be checked to give
// the same ids. On a shared machine the CPU time is the steadier measure: the
// wall time also counts the time other processes held the core.
//
//   tokenizer_encode_bench MODEL INPUT.jsonl [--passes N] [--text-key KEY]
//                          [--pattern P] [--doc-hashes FILE]
//
// --pattern: a tiktoken ranks file's split pattern (a preset name such as
// cl100k_base, o200k_base, llama3, qwen2, or a regex), as `tokpack build
// --pattern`. --doc-hashes: after the timed passes, writes one little-endian
// uint64 per document, XXH64 (seed 0) of its ids as little-endian int32, so
// that another encoder's ids can be compared document by document
// (bench/encode_peers.py hashes theirs the same way). The first pass starts
// with empty piece caches (its hit rate is printed): --passes 1 is a cold cache.
//
// bench/spm_speed.py runs it from two builds, interleaved; bench/encode_peers.py
// against other encoders.
#include <simdjson.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/jsonl_texts.h"
#include "tokpack/tokenizer.h"

namespace {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "tokenizer_encode_bench: %s\n", msg.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  std::string key = "text";
  std::string doc_hashes;
  tokpack::TokenizerOptions options;
  int passes = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--text-key" && i + 1 < argc) {
      key = argv[++i];
    } else if (a == "--pattern" && i + 1 < argc) {
      options.pattern = argv[++i];
    } else if (a == "--doc-hashes" && i + 1 < argc) {
      doc_hashes = argv[++i];
    } else if (a == "--passes" && i + 1 < argc) {
      passes = std::atoi(argv[++i]);
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() != 2 || passes < 1) {
    std::fprintf(stderr,
                 "usage: %s MODEL INPUT.jsonl [--passes N] [--text-key KEY] [--pattern P] "
                 "[--doc-hashes FILE]\n",
                 argv[0]);
    return 2;
  }
  auto tok = tokpack::Tokenizer::Load(pos[0], options);
  if (!tok.ok()) Die(tok.status().ToString());
  const std::vector<std::string> texts =
      tokpack::bench::ReadJsonlTextsOrExit("tokenizer_encode_bench", pos[1], key);
  uint64_t text_bytes = 0;
  for (const std::string& t : texts) text_bytes += t.size();

  // The packer always has a reader thread beside its encoders, and glibc's
  // malloc is cheaper in a single-threaded process: measure as the packer runs.
  std::thread([] {}).join();

  double best = 1e300, best_cpu = 1e300;
  uint64_t tokens = 0, hash = 1469598103934665603ull;
  int64_t lookups = 0, hits = 0;  // Of the first (cold-cache) pass.
  std::vector<int> ids;
  for (int pass = 0; pass < passes; ++pass) {
    tokens = 0;
    hash = 1469598103934665603ull;
    const double cpu0 = ThreadCpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    for (const std::string& text : texts) {
      tokpack::EncodeCounts counts;
      ids.clear();
      if (auto st = (*tok)->Encode(text, &ids, &counts); !st.ok()) Die(st.ToString());
      if (pass == 0) {
        lookups += counts.cache_lookups;
        hits += counts.cache_hits;
      }
      tokens += ids.size();
      for (int id : ids) hash = (hash ^ static_cast<uint32_t>(id)) * 1099511628211ull;
      hash = (hash ^ 0xffffffffu) * 1099511628211ull;  // Document boundary.
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = ThreadCpuSeconds() - cpu0;
    if (s < best) best = s;
    if (cpu < best_cpu) best_cpu = cpu;
  }
  if (!doc_hashes.empty()) {  // Untimed: one more pass, hashing each document's ids.
    std::FILE* f = std::fopen(doc_hashes.c_str(), "wb");
    if (f == nullptr) Die("cannot write " + doc_hashes);
    for (const std::string& text : texts) {
      ids.clear();
      if (auto st = (*tok)->Encode(text, &ids); !st.ok()) Die(st.ToString());
      const uint64_t h = XXH64(ids.data(), ids.size() * sizeof(int), 0);
      if (std::fwrite(&h, sizeof h, 1, f) != 1) Die("cannot write " + doc_hashes);
    }
    if (std::fclose(f) != 0) Die("cannot write " + doc_hashes);
  }
  std::printf(
      "{\"seconds\": %.6f, \"mb_per_s\": %.4f, \"cpu_seconds\": %.6f, "
      "\"mb_per_cpu_s\": %.4f, \"documents\": %zu, \"tokens\": %llu, "
      "\"text_bytes\": %llu, \"ids_fnv1a\": \"%016llx\", \"passes\": %d, "
      "\"cache_hit_rate\": %.4f}\n",
      best, static_cast<double>(text_bytes) / best / 1e6, best_cpu,
      static_cast<double>(text_bytes) / best_cpu / 1e6, texts.size(),
      static_cast<unsigned long long>(tokens), static_cast<unsigned long long>(text_bytes),
      static_cast<unsigned long long>(hash), passes,
      lookups > 0 ? static_cast<double>(hits) / static_cast<double>(lookups) : 0.0);
  return 0;
}
