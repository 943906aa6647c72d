// BPE encoder benchmark (not a test): single-thread (or N-thread) MB/s of
// tokpack's BpeTokenizer on the documents of a text file. bench/bpe_bench.py
// runs it beside PyPI tokenizers and tiktoken on the same documents.
//
//   bpe_encode_bench hf TOKENIZER_JSON DOCS [THREADS] [SECONDS]
//   bpe_encode_bench tiktoken RANKS PATTERN_OR_PRESET DOCS [THREADS] [SECONDS]
//
// DOCS holds records "<byte length>\n<bytes>". Encodes all documents once to
// warm the per-thread caches, then round after round until SECONDS (default
// 3) pass, and prints one JSON line: {"mb_per_s":..., "cpu_mb_per_s":...,
// "tokens":..., ...}; cpu_mb_per_s divides by the threads' CPU time.
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string ReadAll(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// CPU time of the calling thread: on a shared machine it tells the encoder's
// own cost apart from time spent waiting for a core.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int Fail(const std::string& msg) {
  std::fprintf(stderr, "bpe_encode_bench: %s\n", msg.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return Fail("usage: hf JSON DOCS [T] [S] | tiktoken RANKS PATTERN DOCS [T] [S]");
  const std::string mode = argv[1];
  const int docs_arg = mode == "hf" ? 3 : 4;
  if (argc <= docs_arg) return Fail("missing DOCS");
  tokpack::StatusOr<std::unique_ptr<tokpack::BpeTokenizer>> tok =
      tokpack::InvalidArgumentError("unknown mode " + mode);
  if (mode == "hf") {
    tok = tokpack::BpeTokenizer::FromHuggingFaceJson(ReadAll(argv[2]), argv[2]);
  } else if (mode == "tiktoken") {
    tokpack::TiktokenOptions options;
    options.pattern = argv[3];
    tok = tokpack::BpeTokenizer::FromTiktoken(ReadAll(argv[2]), options, argv[2]);
  }
  if (!tok.ok()) return Fail(tok.status().ToString());
  const int threads = argc > docs_arg + 1 ? std::atoi(argv[docs_arg + 1]) : 1;
  const double seconds = argc > docs_arg + 2 ? std::atof(argv[docs_arg + 2]) : 3.0;
  const std::string docs = ReadAll(argv[docs_arg]);
  std::vector<std::string_view> texts;
  size_t total = 0;
  for (size_t pos = 0; pos < docs.size();) {
    size_t nl = docs.find('\n', pos);
    if (nl == std::string::npos) return Fail("bad DOCS record header");
    size_t len = std::strtoull(docs.c_str() + pos, nullptr, 10);
    texts.emplace_back(docs.data() + nl + 1, len);
    total += len;
    pos = nl + 1 + len;
  }
  std::atomic<uint64_t> bytes{0}, tokens{0};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> cpu_ns{0};
  const tokpack::BpeTokenizer& t = **tok;
  double elapsed = 0;
  {
    std::vector<std::thread> pool;
    Clock::time_point start;
    std::atomic<int> warm{0};
    for (int k = 0; k < threads; ++k) {
      pool.emplace_back([&, k] {
        std::vector<int> ids;
        auto run = [&](size_t first) {
          uint64_t b = 0, n = 0;
          for (size_t i = first; i < texts.size(); i += static_cast<size_t>(threads)) {
            if (!t.Encode(texts[i], &ids).ok()) failed = true;
            b += texts[i].size();
            n += ids.size();
          }
          return std::make_pair(b, n);
        };
        run(static_cast<size_t>(k));  // Warm-up: fills this thread's piece cache.
        ++warm;
        while (warm.load() < threads) std::this_thread::yield();
        if (k == 0) start = Clock::now();
        const Clock::time_point t0 = Clock::now();
        const double cpu0 = ThreadCpuSeconds();
        do {
          auto [b, n] = run(static_cast<size_t>(k));
          bytes += b;
          tokens += n;
        } while (std::chrono::duration<double>(Clock::now() - t0).count() < seconds);
        cpu_ns += static_cast<uint64_t>((ThreadCpuSeconds() - cpu0) * 1e9);
      });
    }
    for (auto& th : pool) th.join();
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  if (failed) return Fail("an Encode failed");
  std::printf(
      "{\"mb_per_s\": %.3f, \"cpu_mb_per_s\": %.3f, \"bytes\": %llu, \"tokens\": %llu, "
      "\"seconds\": %.3f, "
      "\"threads\": %d, \"docs\": %zu, \"doc_bytes\": %zu}\n",
      static_cast<double>(bytes) / elapsed / 1e6,
      static_cast<double>(bytes) / (static_cast<double>(cpu_ns.load()) * 1e-9) / 1e6,
      static_cast<unsigned long long>(bytes.load()), static_cast<unsigned long long>(tokens.load()),
      elapsed, threads, texts.size(), total);
  return 0;
}
