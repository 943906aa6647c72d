// Dataset::OpenAll: many datasets opened side by side, so that a mixture of
// a thousand remote sources waits for about a thousand manifest and index
// fetches divided by the threads, not for their sum.
#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "tokpack/dataset.h"

namespace tokpack {

StatusOr<std::vector<std::shared_ptr<Dataset>>> Dataset::OpenAll(
    const std::vector<std::string>& paths, const StorageOptions& storage,
    const DatasetOptions& options) {
  std::vector<std::shared_ptr<Dataset>> datasets(paths.size());
  std::vector<Status> errors(paths.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  const auto work = [&] {
    // After a failure nothing more is started: its error is the answer
    // unless an earlier path fails too.
    for (size_t i; !failed.load() && (i = next.fetch_add(1)) < paths.size();) {
      StatusOr<std::shared_ptr<Dataset>> ds = Open(paths[i], storage, options);
      if (ds.ok()) {
        datasets[i] = std::move(*ds);
      } else {
        errors[i] = ds.status();
        failed = true;
      }
    }
  };
  // As many threads as the settings give background fetches; this one is one.
  const size_t threads =
      std::min<size_t>(paths.size(), static_cast<size_t>(std::max(1, storage.prefetch_threads)));
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
  for (const Status& e : errors) TOKPACK_RETURN_IF_ERROR(e);
  return datasets;
}

}  // namespace tokpack
