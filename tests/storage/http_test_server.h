// A loopback HTTP/1.1 server for remote-storage tests: serves the files under
// a directory to GET (with "Range: bytes=a-b") and HEAD, one connection at a
// time, each closed after its response, optionally after a delay; a hook may
// answer some requests itself (redirects, endless bodies, silence). Counts
// the requests it received and logs its ranged GETs; while told to, it
// holds ranged GETs unanswered (without blocking the others) until
// released, so a test can keep a client's fetch in flight. Thread-safe.
#ifndef TOKPACK_TESTS_STORAGE_HTTP_TEST_SERVER_H_
#define TOKPACK_TESTS_STORAGE_HTTP_TEST_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tokpack::testing {

class HttpTestServer {
 public:
  // Answers the request for `path` (the whole request is `request`) on
  // connection `fd` and returns true, or returns false to have the file served.
  using Hook = std::function<bool(int fd, const std::string& path, const std::string& request)>;

  // Serves `root`; each response waits `delay` first (a slow network).
  explicit HttpTestServer(std::string root,
                          std::chrono::milliseconds delay = std::chrono::milliseconds(0))
      : HttpTestServer(std::move(root), nullptr, delay) {}
  HttpTestServer(std::string root, Hook hook,
                 std::chrono::milliseconds delay = std::chrono::milliseconds(0))
      : root_(std::move(root)), hook_(std::move(hook)), delay_(delay) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      std::perror("HttpTestServer");
      std::abort();
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~HttpTestServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);  // Wakes accept().
    thread_.join();
    ::close(fd_);
    for (const auto& held : held_) ::close(held.first);
  }
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  // "http://127.0.0.1:PORT"; a file root/x is at url() + "/x".
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Requests received so far (counted before the delay and the hook).
  int requests() const { return requests_.load(); }

  // From now on, ranged GETs are held: their connections kept, unanswered.
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    holding_ = true;
  }
  // Stops holding and answers the held requests, in arrival order.
  void Release() {
    std::vector<std::pair<int, std::string>> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      holding_ = false;
      held.swap(held_);
    }
    for (const auto& [fd, request] : held) {
      Respond(fd, request);
      ::close(fd);
    }
  }
  // Waits up to `deadline` until `n` ranged GETs of paths containing
  // `part` arrived; returns those that did, as "path@first byte", in
  // arrival order.
  std::vector<std::string> AwaitRanges(const std::string& part, size_t n,
                                       std::chrono::seconds deadline) const {
    std::unique_lock<std::mutex> lock(mu_);
    std::vector<std::string> got;
    logged_.wait_for(lock, deadline, [&] {
      got.clear();
      for (const std::string& r : ranges_) {
        if (r.find(part) != std::string::npos) got.push_back(r);
      }
      return got.size() >= n;
    });
    return got;
  }

  // Sends all of `bytes`; false once the client has gone.
  static bool Send(int fd, const std::string& bytes) {
    for (size_t at = 0; at < bytes.size();) {
      const ssize_t n = ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += static_cast<size_t>(n);
    }
    return true;
  }
  // Waits until the client closes the connection, answering nothing (a
  // stalled server).
  static void Silence(int fd) {
    char b;
    while (::recv(fd, &b, 1, 0) > 0) {
    }
  }

 private:
  void Serve() {
    while (!stop_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;  // Stopping (shutdown) or a transient error.
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c, buf, sizeof(buf), 0);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      if (request.find("\r\n\r\n") != std::string::npos) {
        ++requests_;
        if (LogRange(request) && Held(c, request)) continue;
        std::this_thread::sleep_for(delay_);
        Respond(c, request);
      }
      ::close(c);
    }
  }

  // Logs a ranged GET as "path@first byte"; whether it was one.
  bool LogRange(const std::string& request) {
    const size_t r = request.find("Range: bytes=");
    if (request.rfind("GET ", 0) != 0 || r == std::string::npos) return false;
    const std::string path = request.substr(4, request.find(' ', 4) - 4);
    std::lock_guard<std::mutex> lock(mu_);
    ranges_.push_back(path + "@" +
                      std::to_string(std::strtoull(request.c_str() + r + 13, nullptr, 10)));
    logged_.notify_all();
    return true;
  }
  // While holding: keeps connection `c` for Release() to answer; whether it did.
  bool Held(int c, const std::string& request) {
    std::lock_guard<std::mutex> lock(mu_);
    if (holding_) held_.emplace_back(c, request);
    return holding_;
  }

  void Respond(int c, const std::string& request) const {
    std::istringstream first(request.substr(0, request.find("\r\n")));
    std::string method, path;
    first >> method >> path;
    if (hook_ && hook_(c, path, request)) return;
    std::ifstream in(root_ + path, std::ios::binary);
    std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string head;
    if (!in.is_open() || path.find("..") != std::string::npos) {
      head = "HTTP/1.1 404 Not Found\r\n";
      body.clear();
    } else if (const size_t r = request.find("Range: bytes="); r != std::string::npos) {
      const uint64_t a = std::strtoull(request.c_str() + r + 13, nullptr, 10);
      const uint64_t b =
          std::strtoull(request.c_str() + request.find('-', r + 13) + 1, nullptr, 10);
      const std::string total = std::to_string(body.size());
      body = body.substr(a, b - a + 1);
      head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(a) + "-" +
             std::to_string(b) + "/" + total + "\r\n";
    } else {
      head = "HTTP/1.1 200 OK\r\n";
    }
    head += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    if (method != "HEAD") head += body;
    Send(c, head);
  }

  std::string root_;
  Hook hook_;
  std::chrono::milliseconds delay_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  mutable std::mutex mu_;
  mutable std::condition_variable logged_;
  std::vector<std::string> ranges_;                // Under mu_.
  bool holding_ = false;                           // Under mu_.
  std::vector<std::pair<int, std::string>> held_;  // Under mu_: (fd, request).
  std::thread thread_;
};

}  // namespace tokpack::testing

#endif  // TOKPACK_TESTS_STORAGE_HTTP_TEST_SERVER_H_
