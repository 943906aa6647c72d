#include "storage/http_store.h"

#include <curl/curl.h>
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string_view>
#include <thread>
#include <vector>

namespace tokpack {
namespace {

// Of an error reply only the start is kept: it is for messages.
constexpr uint64_t kMaxErrorBodyBytes = uint64_t{64} << 10;
// How often a wait between retries looks at the cancel flag.
constexpr std::chrono::milliseconds kCancelPoll(50);

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Where a response body goes: at most `cap` bytes of it are kept, checked as
// they arrive; a transfer that would pass the cap is stopped.
//
// Memory stays about the body's size, not twice its cap: a body whose length
// is known (a range, an announced Content-Length, at most the cap) gets its
// buffer reserved once; one of unannounced length (chunked transfer) is kept
// in blocks and joined once whole, because a string grown by doubling would
// hold a copy of itself while it grows (an endless chunked manifest.json
// reached 2.1 GB against its 1 GiB cap).
struct BodySink {
  enum class Stop { kNone, kTooLarge, kRangeComplete, kRangeTooLong, kErrorCut };
  CURL* curl = nullptr;
  std::string* body = nullptr;
  uint64_t cap = 0;
  int64_t range_offset = -1;  // A ranged GET: where the range starts.
  long code = 0;              // Of the reply; 0 until its body begins.
  uint64_t skip = 0;          // Bytes still to drop before the kept ones.
  Stop stop = Stop::kNone;
  bool in_blocks = false;           // The length was not announced.
  std::vector<std::string> blocks;  // Then the body so far.
  uint64_t kept = 0;                // Bytes kept so far.

  void Keep(const char* data, size_t n) {
    kept += n;
    if (!in_blocks) {
      body->append(data, n);
      return;
    }
    while (n > 0) {
      if (blocks.empty() || blocks.back().size() == blocks.back().capacity()) {
        // Blocks double from 64 KiB up to 64 MiB: few of them, and the last
        // one's unused room is small beside the body.
        const uint64_t last = blocks.empty() ? 0 : blocks.back().size();
        blocks.emplace_back();
        blocks.back().reserve(static_cast<size_t>(std::min<uint64_t>(
            std::clamp<uint64_t>(2 * last, uint64_t{64} << 10, uint64_t{64} << 20),
            cap - kept + n)));
      }
      std::string& b = blocks.back();
      const size_t take = std::min(n, b.capacity() - b.size());
      b.append(data, take);
      data += take;
      n -= take;
    }
  }
  // The blocks, if any, into *body, each released once copied.
  void Join() {
    if (!in_blocks) return;
    body->reserve(static_cast<size_t>(kept));
    for (std::string& b : blocks) {
      body->append(b);
      std::string().swap(b);
    }
    blocks.clear();
  }
};

size_t Receive(char* data, size_t size, size_t count, void* user) {
  auto* s = static_cast<BodySink*>(user);
  const size_t n = size * count;
  const bool ranged = s->range_offset >= 0;
  if (s->code == 0) {
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->code);
    if (s->code < 200 || s->code >= 300) {
      s->cap = std::min(s->cap, kMaxErrorBodyBytes);
    } else if (ranged) {
      s->body->reserve(static_cast<size_t>(s->cap));  // The range's length.
    } else {
      curl_off_t announced = -1;  // At most the cap (CURLOPT_MAXFILESIZE_LARGE).
      curl_easy_getinfo(s->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced);
      if (announced >= 0) {
        s->body->reserve(static_cast<size_t>(std::min<uint64_t>(announced, s->cap)));
      } else {
        s->in_blocks = true;
      }
    }
    // A 200 to a ranged GET is the whole object (the server ignored Range):
    // only the range is kept.
    if (ranged && s->code == 200) s->skip = static_cast<uint64_t>(s->range_offset);
  }
  const size_t dropped = static_cast<size_t>(std::min<uint64_t>(n, s->skip));
  s->skip -= dropped;
  const size_t keep = n - dropped;
  const uint64_t room = s->cap - s->kept;
  if (keep > room) {
    s->Keep(data + dropped, static_cast<size_t>(room));
    using Stop = BodySink::Stop;
    s->stop = s->code < 200 || s->code >= 300 ? Stop::kErrorCut
              : !ranged                       ? Stop::kTooLarge
              : s->code == 200                ? Stop::kRangeComplete
                                              : Stop::kRangeTooLong;
    return 0;  // Stops the transfer (CURLE_WRITE_ERROR).
  }
  s->Keep(data + dropped, keep);
  return n;
}

// Aborts a transfer (CURLE_ABORTED_BY_CALLBACK) once the flag is set. libcurl
// calls it about once a second even when no byte moves.
int CheckCancel(void* flag, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(flag)->load() ? 1 : 0;
}

// "scheme://host:port" of `url`, lowercase, with the scheme's default port;
// empty if it does not parse.
std::string Origin(const std::string& url) {
  CURLU* u = curl_url();
  char* scheme = nullptr;
  char* host = nullptr;
  char* port = nullptr;
  std::string out;
  if (u != nullptr && curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
    out = std::string(scheme) + "://" + host + ":" + port;
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_url_cleanup(u);
  return out;
}

// The reply headers a request looks at.
struct ReplyHeaders {
  std::string etag;
  std::string content_range;
};

// The value of header `name` (lowercase, with its colon) if `line` is that
// header, trimmed; else false.
bool HeaderValue(const std::string& line, std::string_view name, std::string* value) {
  if (line.size() <= name.size() || strncasecmp(line.c_str(), name.data(), name.size()) != 0) {
    return false;
  }
  const auto b = line.find_first_not_of(" \t", name.size());
  const auto e = line.find_last_not_of(" \t\r\n");
  *value = b == std::string::npos || e < b ? "" : line.substr(b, e - b + 1);
  return true;
}

// Whether the Content-Range of a 206 reply, `header`, is exactly bytes
// [offset, offset + n) of an object of any (or an unstated) length. The
// body's length alone does not tell: a proxy or cache that answers another
// range of the same length would hand the caller other bytes, which inputs
// of a build (no checksums) would take as they are.
bool IsRangeAskedFor(const std::string& header, uint64_t offset, uint64_t n) {
  constexpr std::string_view kUnit = "bytes ";
  if (header.size() < kUnit.size() ||
      strncasecmp(header.c_str(), kUnit.data(), kUnit.size()) != 0) {
    return false;
  }
  const uint64_t last = offset + n - 1;
  const std::string want = std::to_string(offset) + "-" + std::to_string(last) + "/";
  const auto at = header.find_first_not_of(' ', kUnit.size());
  if (at == std::string::npos || header.compare(at, want.size(), want) != 0) return false;
  const std::string length = header.substr(at + want.size());
  if (length == "*") return true;
  if (length.empty() || length.size() > 20 ||
      length.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  errno = 0;
  const unsigned long long total = std::strtoull(length.c_str(), nullptr, 10);
  return errno == 0 && total > last;
}

struct UploadCursor {
  const std::string* data;
  size_t at = 0;
};

size_t ReadUpload(char* buffer, size_t size, size_t count, void* user) {
  auto* u = static_cast<UploadCursor*>(user);
  const size_t n = std::min(size * count, u->data->size() - u->at);
  std::copy_n(u->data->data() + u->at, n, buffer);
  u->at += n;
  return n;
}

}  // namespace

HttpOptions HttpOptions::From(const StorageOptions& storage) {
  HttpOptions o;
  o.max_attempts = storage.http_attempts;
  o.stall_seconds = storage.http_stall_seconds;
  o.max_concurrency = storage.http_concurrency;
  o.cancel = storage.cancel;
  return o;
}

struct HttpStore::Response {
  long code = 0;
  CURLcode curl = CURLE_OK;
  std::string error;
  std::string body;
  ReplyHeaders headers;
  curl_off_t content_length = -1;
  std::string redirect;    // Where a 3xx reply points, as an absolute URL.
  bool too_large = false;  // The body would pass its cap.
  bool reusable = true;    // The connection ended cleanly.
};

namespace {

size_t Header(char* data, size_t size, size_t count, void* user) {
  const std::string line(data, size * count);
  auto* headers = static_cast<ReplyHeaders*>(user);
  if (!HeaderValue(line, "etag:", &headers->etag)) {
    HeaderValue(line, "content-range:", &headers->content_range);
  }
  return size * count;
}

// The text of the first <tag>...</tag> in an XML response.
std::string XmlValue(const std::string& xml, const std::string& tag) {
  const auto b = xml.find("<" + tag + ">");
  if (b == std::string::npos) return "";
  const auto start = b + tag.size() + 2;
  const auto e = xml.find("</" + tag + ">", start);
  return e == std::string::npos ? "" : xml.substr(start, e - start);
}

// Undoes XML's escapes in text content (S3 escapes keys that way).
std::string XmlUnescape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    const size_t semi = s.find(';', i);
    if (semi == std::string::npos) {
      out += s[i];
      continue;
    }
    const std::string name = s.substr(i + 1, semi - i - 1);
    if (name == "amp") {
      out += '&';
    } else if (name == "lt") {
      out += '<';
    } else if (name == "gt") {
      out += '>';
    } else if (name == "quot") {
      out += '"';
    } else if (name == "apos") {
      out += '\'';
    } else if (name.size() > 1 && name[0] == '#') {
      // S3 writes control characters of keys this way; other text comes as UTF-8.
      const unsigned long code = name[1] == 'x' ? std::strtoul(name.c_str() + 2, nullptr, 16)
                                                : std::strtoul(name.c_str() + 1, nullptr, 10);
      out += code > 0 && code < 0x80 ? std::string(1, static_cast<char>(code))
                                     : s.substr(i, semi - i + 1);
    } else {
      out += s.substr(i, semi - i + 1);
    }
    i = semi;
  }
  return out;
}

}  // namespace

HttpStore::HttpStore(ObjectLocation location, HttpOptions options,
                     std::shared_ptr<ConnectionPool> pool)
    : location_(std::move(location)),
      options_(options),
      pool_(pool ? std::move(pool) : std::make_shared<ConnectionPool>(options.max_concurrency)) {
  GlobalInit();
}

void HttpStore::Transfer(void* handle, const std::string& url, const char* method,
                         const std::string* upload, int64_t offset, int64_t n, uint64_t max_bytes,
                         Response* r) const {
  CURL* curl = static_cast<CURL*>(handle);
  curl_easy_reset(curl);
  char error[CURL_ERROR_SIZE] = {0};
  const std::string verb = method;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  // Redirects are Once's: it follows them only within the origin.
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options_.connect_timeout_seconds);
  // A stall: less than a byte a second for stall_seconds (also while waiting
  // for the reply to begin).
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, options_.stall_seconds);
  if (options_.cancel) {
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &CheckCancel);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, options_.cancel.get());
  }
  BodySink sink;
  sink.curl = curl;
  sink.body = &r->body;
  sink.cap = n >= 0 ? static_cast<uint64_t>(n) : max_bytes;
  sink.range_offset = n >= 0 ? offset : -1;
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Receive);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r->headers);
  std::string range;
  if (n >= 0) {
    range = std::to_string(offset) + "-" + std::to_string(offset + n - 1);
    curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  } else if (verb == "GET") {
    // A whole object whose Content-Length passes the cap stops before its body.
    curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(max_bytes));
  }
  UploadCursor cursor{upload, 0};
  if (verb == "PUT") {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, &ReadUpload);
    curl_easy_setopt(curl, CURLOPT_READDATA, &cursor);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE,
                     static_cast<curl_off_t>(upload ? upload->size() : 0));
  } else if (verb == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(upload ? upload->size() : 0));
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, upload ? upload->data() : "");
  } else if (verb == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (verb != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
  }
  struct curl_slist* headers = nullptr;
  std::string sigv4;
  if (location_.signed_requests()) {
    sigv4 = "aws:amz:" + location_.region + ":s3";
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(curl, CURLOPT_USERNAME, location_.access_key.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, location_.secret_key.c_str());
    headers = curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (!location_.session_token.empty()) {
      headers =
          curl_slist_append(headers, ("x-amz-security-token: " + location_.session_token).c_str());
    }
  }
  // Without it libcurl labels a POST body as a form, which servers parse away.
  if (verb == "POST") headers = curl_slist_append(headers, "Content-Type: application/xml");
  if (headers) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  r->curl = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  // A body over its cap is refused: not joined, so it never exists twice.
  if (sink.stop != BodySink::Stop::kTooLarge) sink.Join();
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r->code);
  curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &r->content_length);
  r->error = error[0] ? error : curl_easy_strerror(r->curl);
  // A connection left mid-reply (or broken) is not reused.
  r->reusable = r->curl == CURLE_OK;
  if (r->curl == CURLE_WRITE_ERROR && sink.stop == BodySink::Stop::kRangeTooLong) {
    r->error = "a longer body than the range asked for";  // Retried, as a short one is.
  } else if (r->curl == CURLE_WRITE_ERROR && sink.stop != BodySink::Stop::kNone) {
    // Stopped by Receive: past the cap, or enough of a range or an error text.
    r->too_large = sink.stop == BodySink::Stop::kTooLarge;
    if (!r->too_large) r->curl = CURLE_OK;
  } else if (r->curl == CURLE_FILESIZE_EXCEEDED) {
    r->too_large = true;
  } else if (r->curl == CURLE_OPERATION_TIMEDOUT) {
    curl_off_t connected = 0;
    curl_easy_getinfo(curl, CURLINFO_CONNECT_TIME_T, &connected);
    r->error =
        connected > 0
            ? "no data for " + std::to_string(options_.stall_seconds) +
                  " s (StorageOptions::http_stall_seconds, TOKPACK_HTTP_STALL_SECONDS)"
            : "no connection within " + std::to_string(options_.connect_timeout_seconds) + " s";
  }
  if (r->curl == CURLE_OK && r->code >= 300 && r->code < 400) {
    char* target = nullptr;
    curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &target);
    if (target != nullptr) r->redirect = target;
  }
}

Status HttpStore::Once(const std::string& url, const char* method, const std::string* upload,
                       int64_t offset, int64_t n, uint64_t max_bytes, Priority priority,
                       Response* r) const {
  CURL* curl = static_cast<CURL*>(pool_->Acquire(priority));
  if (curl == nullptr) {
    pool_->Release(nullptr);
    return InternalError("curl_easy_init failed");
  }
  Status s;
  std::string at = url;
  for (int hop = 0;; ++hop) {
    *r = Response();
    Transfer(curl, at, method, upload, offset, n, max_bytes, r);
    if (r->redirect.empty()) break;
    // Object stores redirect within their own host (presigned or regional
    // URLs of one endpoint); a redirect elsewhere would let a dataset's
    // server send its readers, and their credentials' requests, anywhere.
    const std::string origin = Origin(url);
    if (origin.empty() || Origin(r->redirect) != origin) {
      s = FailedPreconditionError(url + " redirects to " + r->redirect + ", off the origin " +
                                  origin +
                                  "; tokpack follows redirects only within the origin (scheme, "
                                  "host and port) of the dataset");
      break;
    }
    if (hop == kMaxRedirects) {
      s = IoError(url + ": more than " + std::to_string(kMaxRedirects) + " redirects");
      break;
    }
    at = r->redirect;
  }
  if (!r->reusable) {
    curl_easy_cleanup(curl);
    curl = nullptr;
  }
  pool_->Release(curl);
  return s;
}

void HttpStore::Pause(double seconds) const {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(seconds));
  for (auto now = std::chrono::steady_clock::now(); now < until && !Cancelled();
       now = std::chrono::steady_clock::now()) {
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(until - now, kCancelPoll));
  }
}

Status HttpStore::Request(const std::string& name, const char* method, const std::string* upload,
                          int64_t offset, int64_t n, std::string* out, const std::string& query,
                          std::string* etag, int64_t* content_length, uint64_t max_bytes,
                          Priority priority, Attempts* attempts) const {
  const std::string url = location_.UrlOf(name) + query;
  thread_local std::mt19937_64 rng(std::random_device{}());
  Attempts own{options_.max_attempts, 0, ""};
  Attempts& a = attempts != nullptr ? *attempts : own;
  std::string& last = a.last_error;
  while (a.left > 0) {
    if (a.made > 0) {
      // Full jitter: spreads the retries of many clients hitting one fault.
      const double cap =
          std::min(options_.backoff_max_seconds,
                   options_.backoff_initial_seconds * double(1u << std::min(a.made, 20)));
      std::uniform_real_distribution<double> wait(0, cap);
      Pause(wait(rng));
    }
    if (Cancelled()) return CancelledError(url + ": cancelled");
    --a.left;
    ++a.made;
    Response r;
    TOKPACK_RETURN_IF_ERROR(Once(url, method, upload, offset, n, max_bytes, priority, &r));
    if (r.too_large) {
      const bool mib = max_bytes > 0 && max_bytes % (uint64_t{1} << 20) == 0;
      return Status(StatusCode::kResourceExhausted,
                    url + ": larger than its cap of " + std::to_string(max_bytes) + " bytes" +
                        (mib ? " (" + std::to_string(max_bytes >> 20) + " MiB)" : "") +
                        "; not read further");
    }
    if (r.curl != CURLE_OK) {
      if (r.curl == CURLE_ABORTED_BY_CALLBACK) return CancelledError(url + ": cancelled");
      if (r.curl == CURLE_UNSUPPORTED_PROTOCOL || r.curl == CURLE_URL_MALFORMAT) {
        return InvalidArgumentError(url + ": " + r.error);
      }
      last = r.error;
      continue;
    }
    if (r.code == 404) return NotFoundError(url + ": not found (HTTP 404)");
    if (r.code == 401 || r.code == 403) {
      return FailedPreconditionError(url + ": access denied (HTTP " + std::to_string(r.code) +
                                     "); check the credentials");
    }
    if (r.code == 416) return OutOfRangeError(url + ": range past the end (HTTP 416)");
    if (r.code == 408 || r.code == 429 || r.code >= 500) {
      last = "HTTP " + std::to_string(r.code);
      continue;
    }
    if (r.code < 200 || r.code >= 300) {
      return IoError(url + ": HTTP " + std::to_string(r.code));
    }
    // A 200 is the whole object, of which the sink kept the range; a 206
    // must be the range asked for.
    if (n >= 0 && r.code == 206 &&
        !IsRangeAskedFor(r.headers.content_range, static_cast<uint64_t>(offset),
                         static_cast<uint64_t>(n))) {
      last = "asked for bytes " + std::to_string(offset) + "-" + std::to_string(offset + n - 1) +
             ", got a 206 reply for " +
             (r.headers.content_range.empty() ? "no stated range (no Content-Range)"
                                              : "'" + r.headers.content_range + "'");
      continue;
    }
    // The sink kept only the range's bytes (and none past it).
    if (n >= 0 && r.body.size() != static_cast<uint64_t>(n)) {
      last = "short body: " + std::to_string(r.body.size()) + " of " + std::to_string(n) + " bytes";
      continue;
    }
    if (out) *out = std::move(r.body);
    if (etag) *etag = r.headers.etag;
    if (content_length) *content_length = r.content_length;
    return Status::Ok();
  }
  return Status(StatusCode::kUnavailable, url + ": failed after " + std::to_string(a.made) +
                                              " attempts; last error: " + last);
}

StatusOr<std::string> HttpStore::Get(const std::string& name, uint64_t max_bytes) const {
  std::string out;
  TOKPACK_RETURN_IF_ERROR(
      Request(name, "GET", nullptr, 0, -1, &out, "", nullptr, nullptr, max_bytes));
  return out;
}

Status HttpStore::GetRange(const std::string& name, uint64_t offset, uint64_t n, std::string* out,
                           Priority priority, Attempts* attempts) const {
  if (n == 0) {
    out->clear();
    return Status::Ok();
  }
  return Request(name, "GET", nullptr, static_cast<int64_t>(offset), static_cast<int64_t>(n), out,
                 "", nullptr, nullptr, kMaxReplyBytes, priority, attempts);
}

StatusOr<uint64_t> HttpStore::Size(const std::string& name) const {
  int64_t length = -1;
  TOKPACK_RETURN_IF_ERROR(Request(name, "HEAD", nullptr, 0, -1, nullptr, "", nullptr, &length));
  if (length < 0) return IoError(location_.UrlOf(name) + ": the server gave no Content-Length");
  return static_cast<uint64_t>(length);
}

StatusOr<std::vector<HttpStore::Listed>> HttpStore::List(const std::string& key_prefix,
                                                         size_t max_keys) const {
  std::vector<Listed> out;
  std::string token;
  while (true) {
    // Parameters sorted and percent-encoded: SigV4 signs the query as written.
    std::string query = "?";
    if (!token.empty()) query += "continuation-token=" + PercentEncode(token, false) + "&";
    query += "list-type=2&prefix=" + PercentEncode(key_prefix, false);
    std::string xml;
    TOKPACK_RETURN_IF_ERROR(Request("", "GET", nullptr, 0, -1, &xml, query));
    if (xml.find("<ListBucketResult") == std::string::npos) {
      return IoError(location_.url + ": listing '" + key_prefix +
                     "' gave no ListBucketResult: " + xml.substr(0, 200));
    }
    for (size_t at = xml.find("<Contents>"); at != std::string::npos;
         at = xml.find("<Contents>", at + 1)) {
      const size_t end = xml.find("</Contents>", at);
      if (end == std::string::npos) return IoError(location_.url + ": truncated listing");
      const std::string entry = xml.substr(at, end - at);
      Listed item;
      item.key = XmlUnescape(XmlValue(entry, "Key"));
      const std::string size = XmlValue(entry, "Size");
      char* stop = nullptr;
      item.bytes = std::strtoull(size.c_str(), &stop, 10);
      if (item.key.empty() || size.empty() || *stop != '\0') {
        return IoError(location_.url + ": a listing entry without a key or size");
      }
      if (item.key.compare(0, key_prefix.size(), key_prefix) != 0) {
        return IoError(location_.url + ": the listing of '" + key_prefix + "' returned '" +
                       item.key + "', outside it");
      }
      // ListObjectsV2 is sorted: a key not after the last one is a repeat or
      // a loop (a server that would have the build read an object twice).
      if (!out.empty() && item.key <= out.back().key) {
        return IoError(location_.url + ": the listing of '" + key_prefix +
                       "' is out of order at '" + item.key + "'");
      }
      if (out.size() == max_keys) {
        return Status(StatusCode::kResourceExhausted, location_.url + ": more than " +
                                                          std::to_string(max_keys) +
                                                          " objects under '" + key_prefix + "'");
      }
      out.push_back(std::move(item));
    }
    if (XmlValue(xml, "IsTruncated") != "true") return out;
    if (xml.find("<Contents>") == std::string::npos) {
      return IoError(location_.url + ": a truncated listing page without keys");
    }
    std::string next = XmlUnescape(XmlValue(xml, "NextContinuationToken"));
    if (next.empty() || next == token) {
      return IoError(location_.url + ": a truncated listing without a new continuation token");
    }
    token = std::move(next);
  }
}

Status HttpStore::Put(const std::string& name, const std::string& data) const {
  return Request(name, "PUT", &data, 0, -1, nullptr);
}

Status HttpStore::Delete(const std::string& name) const {
  Status s = Request(name, "DELETE", nullptr, 0, -1, nullptr);
  return s.code() == StatusCode::kNotFound ? Status::Ok() : s;
}

Status HttpStore::PutFile(const std::string& name, const ReadOnlyFile& file, uint64_t part_bytes,
                          const PieceCheck& check) const {
  const uint64_t size = file.size();
  std::string buf;
  if (size <= part_bytes) {
    TOKPACK_RETURN_IF_ERROR(file.ReadAt(0, static_cast<size_t>(size), &buf));
    if (check) TOKPACK_RETURN_IF_ERROR(check(0, buf));
    return Put(name, buf);
  }
  std::string created;
  // SigV4 signs the query as written, so it is written canonically: every
  // parameter with '=', sorted, values percent-encoded.
  TOKPACK_RETURN_IF_ERROR(Request(name, "POST", nullptr, 0, -1, &created, "?uploads="));
  const std::string upload_id = PercentEncode(XmlValue(created, "UploadId"), false);
  if (upload_id.empty()) {
    return IoError(location_.UrlOf(name) + ": no UploadId in the multipart response");
  }
  std::string complete = "<CompleteMultipartUpload>";
  Status s;
  for (uint64_t at = 0, part = 1; at < size && s.ok(); at += part_bytes, ++part) {
    s = file.ReadAt(at, static_cast<size_t>(std::min(part_bytes, size - at)), &buf);
    if (s.ok() && check) s = check(at, buf);
    std::string etag;
    if (s.ok()) {
      s = Request(name, "PUT", &buf, 0, -1, nullptr,
                  "?partNumber=" + std::to_string(part) + "&uploadId=" + upload_id, &etag);
    }
    complete += "<Part><PartNumber>" + std::to_string(part) + "</PartNumber><ETag>" + etag +
                "</ETag></Part>";
  }
  complete += "</CompleteMultipartUpload>";
  if (s.ok()) {
    std::string reply;
    s = Request(name, "POST", &complete, 0, -1, &reply, "?uploadId=" + upload_id);
    // S3 may report a failure inside a 200 response.
    if (s.ok() && reply.find("<Error>") != std::string::npos) {
      s = IoError(location_.UrlOf(name) +
                  ": completing the upload failed: " + XmlValue(reply, "Message"));
    }
  }
  if (!s.ok()) {
    Request(name, "DELETE", nullptr, 0, -1, nullptr, "?uploadId=" + upload_id).IgnoreError();
  }
  return s;
}

}  // namespace tokpack
