// HttpStore against a real loopback server that misbehaves: bodies past
// their cap, servers that ignore Range or answer another range, endless
// error replies, redirect loops, and silence that only the cancel flag ends;
// and background requests that leave readers a free connection.
#include "storage/http_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/storage/http_test_server.h"
#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::HttpTestServer;
using testing::TempDir;

constexpr std::chrono::seconds kDeadline(60);  // Generous: a loaded 2-core machine.

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 31 + i / 251) & 0xff);
  return s;
}

// Sends `head`, then blocks of bytes until the client goes away.
void SendEndlessly(int fd, const std::string& head) {
  if (!HttpTestServer::Send(fd, head)) return;
  const std::string block(1 << 16, 'x');
  while (HttpTestServer::Send(fd, block)) {
  }
}

// Sends a chunked reply whose chunks never end, until the client goes away.
void SendChunksEndlessly(int fd) {
  if (!HttpTestServer::Send(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")) return;
  const std::string chunk = "10000\r\n" + std::string(1 << 16, 'x') + "\r\n";
  while (HttpTestServer::Send(fd, chunk)) {
  }
}

// A field of /proc/self/status ("VmHWM:", "VmRSS:") in bytes.
uint64_t StatusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field, 0) == 0)
      return std::strtoull(line.c_str() + field.size(), nullptr, 10) << 10;
  }
  return 0;
}

class HttpStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::WriteStringToFile(root_.Join("obj"), Pattern(1000)); }
  // Quick retries unless `o` says otherwise.
  static HttpOptions Quick() {
    HttpOptions o;
    o.backoff_initial_seconds = 0.001;
    return o;
  }
  static HttpStore Store(const HttpTestServer& server, const HttpOptions& o = Quick()) {
    ObjectLocation at;
    at.url = server.url();
    at.base = server.url() + "/";
    return HttpStore(at, o);
  }
  // Waits until `server` has had `n` requests.
  static void AwaitRequests(const HttpTestServer& server, int n) {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (server.requests() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_GE(server.requests(), n) << "the request never reached the server";
  }
  // Gets "obj" on a thread, sets `o`'s cancel flag once the server has the
  // request, and returns what the Get returned.
  static StatusOr<std::string> GetThenCancel(const HttpTestServer& server, HttpOptions o) {
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    o.cancel = cancel;
    HttpStore store = Store(server, o);
    StatusOr<std::string> got = std::string();
    std::thread reader([&] { got = store.Get("obj", 1000); });
    AwaitRequests(server, 1);
    cancel->store(true);
    reader.join();
    return got;
  }

  TempDir root_;
};

TEST_F(HttpStoreTest, AWholeObjectIsReadUpToItsCapAndRefusedPastIt) {
  HttpTestServer server(root_.path(), [](int fd, const std::string& path, const std::string&) {
    if (path != "/endless") return false;
    SendEndlessly(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
    return true;
  });
  HttpStore store = Store(server);
  auto whole = store.Get("obj", 1000);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(*whole, Pattern(1000));
  // Announced (Content-Length) over the cap; then a body with no announced
  // end, stopped as it passes the cap. Neither is retried.
  for (const char* name : {"obj", "endless"}) {
    const int before = server.requests();
    auto got = store.Get(name, 999);
    EXPECT_EQ(got.status().code(), StatusCode::kResourceExhausted) << got.status().ToString();
    EXPECT_NE(got.status().message().find(server.url() + "/" + name +
                                          ": larger than its cap of 999 bytes"),
              std::string::npos)
        << got.status().ToString();
    EXPECT_EQ(server.requests(), before + 1);
  }
}

TEST_F(HttpStoreTest, AnEndlessChunkedBodyCostsAboutItsCapInMemory) {
  HttpTestServer server(root_.path(), [](int fd, const std::string& path, const std::string&) {
    if (path != "/chunked") return false;
    SendChunksEndlessly(fd);
    return true;
  });
  // How much the refused Get made this process's peak resident memory grow,
  // or -1 if it was not refused. The peak is reset first (clear_refs 5) so
  // that it starts at the current size. (Not measured in a forked child: a
  // child of this process, whose server thread may hold a lock at the fork,
  // can hang in the allocator, as it did under ASan.)
  constexpr uint64_t kCap = uint64_t{64} << 20;
  {
    std::ofstream reset("/proc/self/clear_refs");
    reset << "5";
    ASSERT_TRUE(reset.flush()) << "cannot reset the peak RSS (/proc/self/clear_refs)";
  }
  const uint64_t before = StatusBytes("VmRSS:");
  ASSERT_LE(StatusBytes("VmHWM:"), before + (uint64_t{1} << 20)) << "the peak was not reset";
  auto got = Store(server).Get("chunked", kCap);
  const int64_t grew = got.status().code() == StatusCode::kResourceExhausted
                           ? static_cast<int64_t>(StatusBytes("VmHWM:") - before)
                           : -1;
  ASSERT_GE(grew, 0) << "the body past its cap was not refused";
  // A string grown by doubling held 2x the cap at its last growth.
  EXPECT_LT(static_cast<uint64_t>(grew), kCap + kCap / 4) << grew << " bytes for a cap of " << kCap;
}

TEST_F(HttpStoreTest, ARangeFromAServerThatIgnoresRangeKeepsOnlyTheRange) {
  const std::string big = Pattern(1 << 20);
  HttpTestServer server(root_.path(), [&](int fd, const std::string& path, const std::string&) {
    if (path != "/norange") return false;
    HttpTestServer::Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(big.size()) +
                                 "\r\nConnection: close\r\n\r\n" + big);
    return true;
  });
  HttpStore store = Store(server);
  std::string got;
  ASSERT_TRUE(store.GetRange("norange", 5000, 100, &got).ok());
  EXPECT_EQ(got, big.substr(5000, 100));
  ASSERT_TRUE(store.GetRange("norange", 0, 10, &got).ok());
  EXPECT_EQ(got, big.substr(0, 10));
}

// The first and last byte of a request's "Range: bytes=a-b".
std::pair<uint64_t, uint64_t> RangeOf(const std::string& request) {
  const size_t r = request.find("Range: bytes=") + 13;
  return {std::strtoull(request.c_str() + r, nullptr, 10),
          std::strtoull(request.c_str() + request.find('-', r) + 1, nullptr, 10)};
}

// A 206 reply of the right length may still be another range (a proxy's
// cache keyed wrongly, an off-by-one): its Content-Range must be the range
// asked for. Such a reply is retried, as a short body is, then named with
// both ranges; a stated total length of "*" or past the range is fine.
TEST_F(HttpStoreTest, ARangedReplyForAnotherRangeIsRetriedThenRefusedNamingBoth) {
  const std::string data = Pattern(1000);
  testing::WriteStringToFile(root_.Join("flaky"), data);
  std::atomic<int> flaky_wrong{2};  // Replies for "/flaky" still to shift.
  HttpTestServer server(root_.path(), [&](int fd, const std::string& path,
                                          const std::string& request) {
    auto [a, b] = RangeOf(request);
    std::string range;
    if (path == "/shifted" || (path == "/flaky" && flaky_wrong-- > 0)) {
      ++a, ++b;  // The same length, one byte on.
      range = "Content-Range: bytes " + std::to_string(a) + "-" + std::to_string(b) + "/1000\r\n";
    } else if (path == "/star") {
      range = "Content-Range: bytes " + std::to_string(a) + "-" + std::to_string(b) + "/*\r\n";
    } else if (path == "/small") {
      range = "Content-Range: bytes " + std::to_string(a) + "-" + std::to_string(b) + "/15\r\n";
    } else if (path != "/unstated") {
      return false;
    }
    HttpTestServer::Send(fd, "HTTP/1.1 206 Partial Content\r\n" + range +
                                 "Content-Length: " + std::to_string(b - a + 1) +
                                 "\r\nConnection: close\r\n\r\n" + data.substr(a, b - a + 1));
    return true;
  });
  HttpStore store = Store(server);
  std::string got;
  for (const auto& [name, received] : std::vector<std::pair<std::string, std::string>>{
           {"shifted", "'bytes 11-20/1000'"},
           {"unstated", "no stated range (no Content-Range)"},
           {"small", "'bytes 10-19/15'"}}) {
    const int before = server.requests();
    const Status s = store.GetRange(name, 10, 10, &got);
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << name << ": " << s.ToString();
    EXPECT_NE(s.message().find(server.url() + "/" + name + ": failed after 8 attempts"),
              std::string::npos)
        << s.ToString();
    EXPECT_NE(s.message().find("asked for bytes 10-19, got a 206 reply for " + received),
              std::string::npos)
        << s.ToString();
    EXPECT_EQ(server.requests(), before + 8) << name;
  }
  ASSERT_TRUE(store.GetRange("star", 10, 10, &got).ok());
  EXPECT_EQ(got, data.substr(10, 10));
  const Status flaky = store.GetRange("flaky", 10, 10, &got);
  ASSERT_TRUE(flaky.ok()) << flaky.ToString();
  EXPECT_EQ(got, data.substr(10, 10));
}

TEST_F(HttpStoreTest, AnErrorReplyWithAnEndlessBodyStillCountsAsItsStatus) {
  HttpTestServer server(root_.path(), [](int fd, const std::string&, const std::string&) {
    SendEndlessly(fd, "HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
    return true;
  });
  auto got = Store(server).Get("anything", uint64_t{1} << 20);
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << got.status().ToString();
}

TEST_F(HttpStoreTest, ARedirectLoopWithinTheOriginEnds) {
  HttpTestServer server(root_.path(), [](int fd, const std::string&, const std::string&) {
    HttpTestServer::Send(fd,
                         "HTTP/1.1 307 Temporary Redirect\r\nLocation: /again\r\n"
                         "Content-Length: 0\r\nConnection: close\r\n\r\n");
    return true;
  });
  auto got = Store(server).Get("obj", 1000);
  EXPECT_NE(got.status().message().find("more than 5 redirects"), std::string::npos)
      << got.status().ToString();
  EXPECT_EQ(server.requests(), HttpStore::kMaxRedirects + 1);
}

TEST_F(HttpStoreTest, TheCancelFlagStopsARequestThatWaitsForASilentServer) {
  HttpTestServer server(root_.path(), [](int fd, const std::string&, const std::string&) {
    HttpTestServer::Silence(fd);
    return true;
  });
  HttpOptions o = Quick();
  o.stall_seconds = 3600;  // Only the flag can end it.
  StatusOr<std::string> got = GetThenCancel(server, o);
  EXPECT_EQ(got.status().code(), StatusCode::kCancelled) << got.status().ToString();
  EXPECT_NE(got.status().message().find(server.url() + "/obj"), std::string::npos);
}

TEST_F(HttpStoreTest, TheCancelFlagEndsAWaitBetweenRetries) {
  HttpTestServer server(root_.path(), [](int fd, const std::string&, const std::string&) {
    HttpTestServer::Send(fd, "HTTP/1.1 503 Slow Down\r\nContent-Length: 0\r\n\r\n");
    return true;
  });
  HttpOptions o;
  o.backoff_initial_seconds = o.backoff_max_seconds = 3600;  // Waits only the flag ends.
  StatusOr<std::string> got = GetThenCancel(server, o);
  EXPECT_EQ(got.status().code(), StatusCode::kCancelled) << got.status().ToString();
}

TEST_F(HttpStoreTest, BackgroundRequestsLeaveForegroundOnesASlot) {
  HttpTestServer server(root_.path());
  HttpOptions o = Quick();
  o.max_concurrency = 4;
  ASSERT_EQ(ConnectionPool::BackgroundSlots(4), 3);
  HttpStore store = Store(server, o);
  server.Hold();
  // Background requests fill the slots they may take (held by the server),
  // and one more waits for a slot.
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      std::string got;
      EXPECT_TRUE(store.GetRange("obj", 10 * i, 10, &got, HttpStore::Priority::kBackground).ok());
    });
  }
  ASSERT_EQ(server.AwaitRanges("obj", 3, kDeadline).size(), 3u);
  // A reader still gets a connection at once, ahead of the waiting prefetch.
  clients.emplace_back([&] {
    std::string got;
    EXPECT_TRUE(store.GetRange("obj", 500, 10, &got).ok());
    EXPECT_EQ(got, Pattern(1000).substr(500, 10));
  });
  const std::vector<std::string> seen = server.AwaitRanges("obj", 4, kDeadline);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[3], "/obj@500");
  server.Release();
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(server.AwaitRanges("obj", 5, kDeadline).size(), 5u);
}

}  // namespace
}  // namespace tokpack
