#include "storage/storage_pools.h"

#include <unistd.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace tokpack {

std::shared_ptr<StoragePools> StoragePools::For(const StorageOptions& options) {
  static std::mutex mu;
  // Every field's value (OptionSet::ToJson): equal settings share, any
  // difference does not. Never freed: pools may be released at exit.
  static auto* registry =
      new std::map<std::pair<pid_t, std::string>, std::weak_ptr<StoragePools>>();
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = registry->begin(); it != registry->end();) {
    it = it->second.expired() ? registry->erase(it) : std::next(it);
  }
  std::weak_ptr<StoragePools>& slot = (*registry)[{::getpid(), options.ToJson()}];
  std::shared_ptr<StoragePools> pools = slot.lock();
  if (!pools) {
    pools = std::make_shared<StoragePools>(options.prefetch_threads, options.http_concurrency);
    slot = pools;
  }
  return pools;
}

}  // namespace tokpack
