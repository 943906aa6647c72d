// HttpStore against a real loopback server that misbehaves: bodies past
// their cap, servers that ignore Range, endless error replies, redirect
// loops, and silence that only the cancel flag ends; and background
// requests that leave readers a free connection.
#include "storage/http_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
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
  ASSERT_EQ(HttpStore::BackgroundSlots(4), 3);
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
