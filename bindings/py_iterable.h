// The texts of a Python iterable for tokpack.build(), pulled by the thread
// that called build() and handed to the packer through a queue of a few
// batches.
//
// Why that thread: Python runs signal handlers only in the main thread, and
// only there does a blocking read (a socket, a pipe, a lock) return EINTR
// and raise KeyboardInterrupt. A generator pulled on a packer thread that
// blocks in such a read cannot be interrupted, so the build it feeds could
// not end and Ctrl-C was ignored. Pulled by the caller, the generator sees
// Ctrl-C as any Python code does, the build is cancelled, and it removes its
// staging directory.
#ifndef TOKPACK_BINDINGS_PY_ITERABLE_H_
#define TOKPACK_BINDINGS_PY_ITERABLE_H_

#include <pybind11/pybind11.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "tokpack/builder.h"
#include "tokpack/status.h"

namespace tokpack {

class PyIterableTexts final : public TextSource {
 public:
  // For the packer's reader thread: the next batch the caller queued. The
  // batches are cut by Pump() at about the size the packer asks for (1 MiB),
  // so `max_bytes` is not looked at. Cancelled once Stop() was called before
  // the iterable ended; the error Pump() queued, if any, after the batches
  // queued before it.
  StatusOr<bool> Next(size_t max_bytes, TextBatch* batch) override;
  std::string name() const override { return "<python iterable>"; }

  // For the thread that called build(), with the GIL held: pulls the items
  // of `iterator` into batches and queues them until it ends or the build
  // stops taking them (Stop()). str is encoded to UTF-8; bytes and bytearray
  // are taken as they are (the packer's UTF-8 policy applies); a dict is a
  // record read as its JSONL line (json.dumps) is: text_key and loss spans. A str with a
  // lone surrogate has no UTF-8 form: it is a bad record, as a JSONL line
  // with "\ud800" is; so are other items (None, int, ...). Calls `poll` (with
  // the GIL) after each batch and while the queue is full; an exception from
  // the iterator or from `poll` propagates, and the caller must then Stop()
  // the build's source.
  void Pump(const pybind11::iterator& iterator, const std::function<void()>& poll);

  // Ends the hand-off: Pump() returns at its next batch, and Next() reports
  // Cancelled once the queue is drained unless the iterable had ended.
  void Stop();

 private:
  // Batches are cut at this size, the size the packer reads them in.
  static constexpr size_t kBatchBytes = size_t{1} << 20;
  static constexpr size_t kBatchEntries = 4096;
  // Batches waiting for the packer: the memory the hand-off holds is about
  // this many times kBatchBytes, plus the batch being filled.
  static constexpr size_t kQueuedBatches = 2;
  // A slow iterable: what it gave is handed over after this long, so that
  // the build goes on meanwhile.
  static constexpr std::chrono::milliseconds kSlowItems{100};

  // Queues `batch`, waiting (GIL released, calling `poll` every
  // kSignalPollSeconds) while the queue is full; false once stopped.
  bool Push(TextBatch batch, const std::function<void()>& poll);
  // Ends the queue with `status` (OK: the iterable ended).
  void Finish(Status status);

  std::mutex mu_;
  std::condition_variable cv_;  // The queue changed, or it ended.
  std::deque<TextBatch> queue_;
  bool finished_ = false;  // Pump() saw the end, or queued end_.
  Status end_;             // Why it finished: OK, or an error for the build.
  bool stopped_ = false;   // Stop() was called.
};

}  // namespace tokpack

#endif  // TOKPACK_BINDINGS_PY_ITERABLE_H_
