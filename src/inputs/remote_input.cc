#include "inputs/remote_input.h"

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <future>

#include "inputs/input_files.h"
#include "storage/http_store.h"
#include "storage/object_url.h"

namespace tokpack {
namespace {

constexpr uint64_t kStreamBlock = uint64_t{8} << 20;

std::vector<std::string> Components(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t slash = s.find('/', start);
    if (slash == std::string_view::npos) slash = s.size();
    out.emplace_back(s.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

// Glob match of key components k[i..] against pattern components p[j..]:
// '*', '?' and [...] within a component, "**" for any number of them.
bool Match(const std::vector<std::string>& p, size_t j, const std::vector<std::string>& k,
           size_t i) {
  if (j == p.size()) return i == k.size();
  if (p[j] == "**") {
    for (size_t skip = i; skip <= k.size(); ++skip) {
      if (Match(p, j + 1, k, skip)) return true;
    }
    return false;
  }
  return i < k.size() && ::fnmatch(p[j].c_str(), k[i].c_str(), 0) == 0 && Match(p, j + 1, k, i + 1);
}

// Keys of "directories" (ending in '/') and hidden names (a component that
// starts with '.') are not inputs, as in a local directory walk.
bool Visible(const std::string& key) {
  if (key.empty() || key.back() == '/') return false;
  for (const std::string& c : Components(key)) {
    if (!c.empty() && c[0] == '.') return false;
  }
  return true;
}

struct SplitUrl {
  std::string scheme_and_bucket;  // "s3://bucket" (or "https://host" for HTTP).
  std::string key;                // "dir/file.parquet" (path after the host for HTTP).
};

StatusOr<SplitUrl> Split(const std::string& url) {
  const size_t colon = url.find("://");
  if (colon == std::string::npos) return InvalidArgumentError("'" + url + "' is not a URL");
  const size_t slash = url.find('/', colon + 3);
  if (slash == std::string::npos || slash == colon + 3) {
    return InvalidArgumentError("'" + url + "' names no object");
  }
  return SplitUrl{url.substr(0, slash), url.substr(slash + 1)};
}

// The store for object `url` and the object's name in it: the bucket and the
// whole key for s3:// and gs:// (so "a//b" stays that key), the directory and
// the file name for http(s)://.
StatusOr<std::pair<std::shared_ptr<HttpStore>, std::string>> StoreFor(
    const std::string& url, const StorageOptions& storage) {
  TOKPACK_ASSIGN_OR_RETURN(SplitUrl split, Split(url));
  // Resolved once: for s3:// and gs:// that reads the credentials files.
  TOKPACK_ASSIGN_OR_RETURN(ObjectLocation loc, ResolveObjectUrl(split.scheme_and_bucket, storage));
  std::string name = split.key;
  if (loc.kind == ObjectLocation::Kind::kHttp) {
    const size_t slash = url.rfind('/');
    name = url.substr(slash + 1);
    TOKPACK_ASSIGN_OR_RETURN(loc, ResolveObjectUrl(url.substr(0, slash), storage));
  }
  if (name.empty()) return InvalidArgumentError("'" + url + "' names no object");
  return std::make_pair(std::make_shared<HttpStore>(std::move(loc), HttpOptions::From(storage)),
                        std::move(name));
}

// Reads an object front to back in blocks, fetching the next block while the
// current one is consumed.
class RemoteStream : public ByteStream {
 public:
  RemoteStream(std::shared_ptr<HttpStore> store, std::string url, std::string name, uint64_t size,
               std::atomic<uint64_t>* counter, const CancelFlag& cancel)
      : store_(std::move(store)),
        url_(std::move(url)),
        name_(std::move(name)),
        size_(size),
        counter_(counter),
        cancel_(cancel) {
    Fetch();
  }
  ~RemoteStream() override {
    if (next_.valid()) next_.wait();
  }

  StatusOr<size_t> Read(char* buf, size_t n) override {
    if (pos_ == block_.size()) {
      if (!next_.valid()) return size_t{0};
      // A GET may take long (retries, a slow server): Ctrl-C must not wait for it.
      while (next_.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
        if (cancel_ && cancel_->load(std::memory_order_relaxed)) {
          return CancelledError("build interrupted");
        }
      }
      StatusOr<std::string> got = next_.get();
      if (!got.ok()) {
        // The store's errors name the object by its endpoint's URL; an
        // s3:// or gs:// input is also named as it was given.
        if (store_->location().UrlOf(name_) == url_) return got.status();
        return got.status().WithContext(url_);
      }
      block_ = std::move(*got);
      pos_ = 0;
      if (counter_) counter_->fetch_add(block_.size(), std::memory_order_relaxed);
      Fetch();
      if (block_.empty()) return size_t{0};
    }
    const size_t take = std::min(n, block_.size() - pos_);
    std::copy_n(block_.data() + pos_, take, buf);
    pos_ += take;
    return take;
  }

 private:
  void Fetch() {
    if (fetched_ >= size_) return;
    const uint64_t offset = fetched_, n = std::min(kStreamBlock, size_ - fetched_);
    fetched_ += n;
    next_ = std::async(std::launch::async, [store = store_, name = name_, offset, n] {
      std::string out;
      Status s = store->GetRange(name, offset, n, &out);
      return s.ok() ? StatusOr<std::string>(std::move(out)) : StatusOr<std::string>(s);
    });
  }

  std::shared_ptr<HttpStore> store_;
  std::string url_;   // The input as given.
  std::string name_;  // Its object in store_.
  uint64_t size_;
  std::atomic<uint64_t>* counter_;
  CancelFlag cancel_;
  uint64_t fetched_ = 0;
  std::future<StatusOr<std::string>> next_;
  std::string block_;
  size_t pos_ = 0;
};

class RemoteRandomAccess : public parquet_plugin::Input {
 public:
  RemoteRandomAccess(std::shared_ptr<HttpStore> store, std::string url, std::string name,
                     uint64_t size)
      : store_(std::move(store)), url_(std::move(url)), name_(std::move(name)), size_(size) {}

  const std::string& Name() const override { return url_; }
  uint64_t Size() const override { return size_; }
  bool ReadAt(uint64_t offset, uint64_t n, char* dst, std::string* error) override {
    if (offset > size_ || n > size_ - offset) {
      *error = url_ + ": read past the end of the object";
      return false;
    }
    std::string buf;  // Not kept: a column chunk is held once, in Arrow's buffer.
    Status s = store_->GetRange(name_, offset, n, &buf);
    if (!s.ok()) {
      *error = s.message();
      return false;
    }
    std::copy_n(buf.data(), n, dst);
    return true;
  }

 private:
  std::shared_ptr<HttpStore> store_;
  std::string url_;
  std::string name_;
  uint64_t size_;
};

}  // namespace

StatusOr<std::vector<RemoteObject>> ExpandRemoteInput(const std::string& spec,
                                                      const StorageOptions& storage) {
  TOKPACK_ASSIGN_OR_RETURN(SplitUrl url, Split(spec));
  TOKPACK_ASSIGN_OR_RETURN(ObjectLocation loc, ResolveObjectUrl(url.scheme_and_bucket, storage));
  std::vector<RemoteObject> out;
  if (loc.kind == ObjectLocation::Kind::kHttp) {
    if (HasWildcard(url.key) || url.key.empty() || url.key.back() == '/') {
      return InvalidArgumentError("'" + spec +
                                  "': HTTP(S) inputs are single files; they cannot be listed");
    }
    TOKPACK_ASSIGN_OR_RETURN(auto store, StoreFor(spec, storage));
    TOKPACK_ASSIGN_OR_RETURN(uint64_t size, store.first->Size(store.second));
    out.push_back({spec, size});
    return out;
  }
  HttpStore bucket(std::move(loc), HttpOptions::From(storage));
  const auto list = [&](const std::string& prefix, const std::string& pattern) -> Status {
    TOKPACK_ASSIGN_OR_RETURN(auto listed, bucket.List(prefix));
    const std::vector<std::string> p = Components(pattern);
    for (HttpStore::Listed& item : listed) {
      if (!Visible(item.key.substr(prefix.rfind('/') + 1))) continue;
      if (!pattern.empty() && !Match(p, 0, Components(item.key), 0)) continue;
      out.push_back({url.scheme_and_bucket + "/" + item.key, item.bytes});
    }
    return Status::Ok();
  };
  if (HasWildcard(url.key)) {
    // S3 lists by prefix: everything before the first wildcard.
    TOKPACK_RETURN_IF_ERROR(list(url.key.substr(0, url.key.find_first_of("*?[")), url.key));
    if (out.empty()) return NotFoundError("no objects match input pattern '" + spec + "'");
  } else if (url.key.empty() || url.key.back() == '/') {
    TOKPACK_RETURN_IF_ERROR(list(url.key, ""));
    if (out.empty()) return NotFoundError("no objects under input prefix '" + spec + "'");
  } else {
    TOKPACK_ASSIGN_OR_RETURN(auto store, StoreFor(spec, storage));
    StatusOr<uint64_t> size = store.first->Size(store.second);
    if (size.ok()) {
      out.push_back({spec, *size});
    } else if (size.status().code() == StatusCode::kNotFound) {
      // Like a local directory: "s3://b/corpus" also names what is under "corpus/".
      TOKPACK_RETURN_IF_ERROR(list(url.key + "/", ""));
      if (out.empty()) return NotFoundError("input '" + spec + "' does not exist");
    } else {
      return size.status();
    }
  }
  std::sort(out.begin(), out.end(),
            [](const RemoteObject& a, const RemoteObject& b) { return a.url < b.url; });
  return out;
}

StatusOr<std::unique_ptr<ByteStream>> OpenRemoteStream(const std::string& url,
                                                       const StorageOptions& storage,
                                                       std::atomic<uint64_t>* raw_bytes_read,
                                                       const CancelFlag& cancel) {
  TOKPACK_ASSIGN_OR_RETURN(auto store, StoreFor(url, storage));
  TOKPACK_ASSIGN_OR_RETURN(uint64_t size, store.first->Size(store.second));
  return std::unique_ptr<ByteStream>(std::make_unique<RemoteStream>(
      std::move(store.first), url, std::move(store.second), size, raw_bytes_read, cancel));
}

StatusOr<std::unique_ptr<parquet_plugin::Input>> OpenRemoteRandomAccess(
    const std::string& url, const StorageOptions& storage) {
  TOKPACK_ASSIGN_OR_RETURN(auto store, StoreFor(url, storage));
  TOKPACK_ASSIGN_OR_RETURN(uint64_t size, store.first->Size(store.second));
  return std::unique_ptr<parquet_plugin::Input>(std::make_unique<RemoteRandomAccess>(
      std::move(store.first), url, std::move(store.second), size));
}

}  // namespace tokpack
