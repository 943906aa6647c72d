// spm_encode_bound: the upper bound for the packer's throughput. Loads a
// sentencepiece model, reads the "text" field of every line of a JSONL file
// into memory (untimed), then times SentencePieceProcessor::Encode over all
// documents with T threads sharing one processor. Prints one JSON object:
// wall and CPU seconds of the encoding, documents, tokens, text bytes, and
// each thread's wall seconds (until it finished) and CPU seconds.
//
//   spm_encode_bound MODEL INPUT.jsonl THREADS [--schedule blocks|static]
//                    [--block-bytes N] [--text-key KEY] [--multithreaded]
//
// Each thread encodes contiguous runs of documents. --schedule static: one
// byte-balanced slice per thread, fixed up front. --schedule blocks (the
// default): blocks of about --block-bytes of text (default 1 MiB, the
// packer's batch size), taken in order from a shared counter, so a thread
// slowed down by something else on the machine does not hold up the rest.
//
// --multithreaded starts (and joins) a no-op thread before the clock starts.
// With THREADS=1 the process is otherwise single-threaded, and glibc's malloc
// then skips its arena locking, which sentencepiece's many small allocations
// per Encode call benefit from; any packer with a reader thread beside its
// encoder (tokpack always has one) runs multi-threaded.
//
// Nothing here is parsed, checked, narrowed or written while the clock runs:
// it is pure sentencepiece encoding of the same documents the packer sees.
#include <sentencepiece_processor.h>
#include <simdjson.h>
#include <time.h>

#include <atomic>
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

namespace {

double CpuSeconds(clockid_t clock = CLOCK_PROCESS_CPUTIME_ID) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::string JsonArray(const std::vector<double>& v) {
  std::string s = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof(buf), "%s%.6f", i ? ", " : "", v[i]);
    s += buf;
  }
  return s + "]";
}

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "spm_encode_bound: %s\n", msg.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  std::string key = "text";
  std::string schedule = "blocks";
  uint64_t block_bytes = 1 << 20;
  bool multithreaded = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--text-key" && i + 1 < argc) {
      key = argv[++i];
    } else if (a == "--schedule" && i + 1 < argc) {
      schedule = argv[++i];
    } else if (a == "--multithreaded") {
      multithreaded = true;
    } else if (a == "--block-bytes" && i + 1 < argc) {
      block_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() != 3 || (schedule != "blocks" && schedule != "static") || block_bytes == 0) {
    std::fprintf(stderr,
                 "usage: %s MODEL INPUT.jsonl THREADS [--schedule blocks|static] "
                 "[--block-bytes N] [--text-key KEY] [--multithreaded]\n",
                 argv[0]);
    return 2;
  }
  const int threads = std::atoi(pos[2].c_str());
  if (threads < 1) Die("THREADS must be >= 1");

  sentencepiece::SentencePieceProcessor sp;
  auto st = sp.Load(pos[0]);
  if (!st.ok()) Die("cannot load model '" + pos[0] + "': " + st.ToString());

  const std::vector<std::string> texts =
      tokpack::bench::ReadJsonlTextsOrExit("spm_encode_bound", pos[1], key);
  uint64_t text_bytes = 0;
  for (const std::string& t : texts) text_bytes += t.size();

  // Work units: contiguous runs of documents, [begin[k], begin[k + 1]).
  // static: one unit per thread, about text_bytes / threads each; blocks:
  // units of about block_bytes, handed out in order.
  std::vector<size_t> begin{0};
  {
    const uint64_t units = schedule == "static" ? static_cast<uint64_t>(threads) : 0;
    uint64_t acc = 0, in_block = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      acc += texts[i].size();
      in_block += texts[i].size();
      const bool cut = units ? acc * units >= text_bytes * begin.size() : in_block >= block_bytes;
      if (cut && i + 1 < texts.size()) {
        begin.push_back(i + 1);
        in_block = 0;
      }
    }
    begin.push_back(texts.size());
    if (units) begin.resize(threads + 1, texts.size());  // Fewer documents than threads.
  }
  const size_t unit_count = begin.size() - 1;
  std::atomic<size_t> next_unit{0};

  // Per thread: tokens, wall seconds until it finished, its own CPU seconds.
  std::vector<uint64_t> tokens(threads, 0);
  std::vector<double> thread_seconds(threads, 0), thread_cpu(threads, 0);
  std::atomic<bool> failed{false};
  std::chrono::steady_clock::time_point t0;
  auto work = [&](int t) {
    const double cpu_start = CpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    std::vector<int> ids;
    uint64_t n = 0;
    auto encode = [&](size_t unit) {
      for (size_t i = begin[unit]; i < begin[unit + 1]; ++i) {
        if (!sp.Encode(texts[i], &ids).ok()) failed = true;
        n += ids.size();
      }
    };
    if (schedule == "static") {
      encode(static_cast<size_t>(t));
    } else {
      for (size_t u; (u = next_unit.fetch_add(1)) < unit_count;) encode(u);
    }
    tokens[t] = n;
    thread_cpu[t] = CpuSeconds(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
    thread_seconds[t] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };

  if (multithreaded) std::thread([] {}).join();

  const double cpu0 = CpuSeconds();
  t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu_seconds = CpuSeconds() - cpu0;
  if (failed) Die("sentencepiece Encode failed");

  uint64_t total = 0;
  for (uint64_t n : tokens) total += n;
  std::printf(
      "{\"threads\": %d, \"schedule\": \"%s\", \"units\": %zu, \"multithreaded\": %s, "
      "\"seconds\": %.6f, "
      "\"cpu_seconds\": %.6f, \"documents\": %zu, \"tokens\": %llu, \"text_bytes\": %llu, "
      "\"thread_seconds\": %s, \"thread_cpu_seconds\": %s}\n",
      threads, schedule.c_str(), unit_count, multithreaded || threads > 1 ? "true" : "false",
      seconds, cpu_seconds, texts.size(), static_cast<unsigned long long>(total),
      static_cast<unsigned long long>(text_bytes), JsonArray(thread_seconds).c_str(),
      JsonArray(thread_cpu).c_str());
  return 0;
}
