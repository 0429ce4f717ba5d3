// libFuzzer target: net::HttpServer (net/http_server.h) fed arbitrary bytes over a real
// loopback socket, exactly as a hostile client would send them. The server runs in-process on
// its own io_context thread, started once; each input is written on a fresh connection, the
// write side is shut, and the response is read until the server closes.
//
// Checks beyond "no crash, no sanitizer report": the server closes every connection within a
// bound (no hang: its read timeout is 300 ms here, so 5 s means it is stuck), whatever it
// answers starts with an HTTP/1.1 status line, and it still serves a well-formed request
// after each input.
//
// The handler touches what handlers do with a request (headers, query parameters, percent
// decoding of the path) and streams a chunked response for /stream, so those paths run on
// fuzzed values too.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "net/http_server.h"

namespace {

namespace asio = boost::asio;
using llmcap::net::HttpRequest;
using llmcap::net::HttpResponse;
using llmcap::net::ResponseStream;

constexpr int kHangMs = 5'000;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "http_request_fuzz: %s\n", what);
  std::abort();
}

asio::awaitable<std::optional<HttpResponse>> handle(HttpRequest& req, ResponseStream& out) {
  std::size_t n = req.body.size();
  if (auto ct = req.header("content-type")) n += ct->size();
  if (auto q = req.query_param("q")) n += q->size();
  if (auto p = llmcap::net::percent_decode(req.path)) n += p->size();
  if (req.path == "/stream") {
    if (!(co_await out.start(200, {{"Content-Type", "text/event-stream"}}))) co_return std::nullopt;
    co_await out.write("data: " + std::to_string(n) + "\n\n");
    co_await out.finish();
    co_return std::nullopt;
  }
  co_return HttpResponse::json(200, "{\"n\":" + std::to_string(n) + "}");
}

struct Server {
  asio::io_context io{1};
  std::unique_ptr<llmcap::net::HttpServer> server;
  std::thread thread;
  std::uint16_t port = 0;

  Server() {
    llmcap::net::HttpServerOptions o;
    o.port = 0;
    o.max_body_bytes = 64 * 1024;
    o.max_header_bytes = 8 * 1024;
    o.read_timeout = std::chrono::milliseconds(300);
    o.idle_timeout = std::chrono::milliseconds(300);
    o.write_timeout = std::chrono::milliseconds(1'000);
    server = std::make_unique<llmcap::net::HttpServer>(io, o, handle);
    server->start();
    port = server->port();
    thread = std::thread([this] {
      auto guard = asio::make_work_guard(io);
      io.run();
    });
  }
};

Server& server() {
  static Server* s = new Server();  // lives for the whole fuzzing process
  return *s;
}

int connect_to(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) fail("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  // A connect can fail for a moment (the accept backlog full while the server closes the
  // previous input's connections, seen once in CI): retry for up to 2 s before calling it a
  // harness failure.
  for (int attempt = 0; ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0; ++attempt) {
    if (attempt >= 200) fail("cannot connect");
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail("socket() failed");
  }
  return fd;
}

// Writes everything it can (the server may close early, e.g. after a 431) and shuts the
// write side.
void send_all(int fd, const std::uint8_t* data, std::size_t size) {
  std::size_t pos = 0;
  while (pos < size) {
    const ssize_t n = ::send(fd, data + pos, size - pos, MSG_NOSIGNAL);
    if (n <= 0) break;
    pos += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
}

// Reads until the server closes; fails when that takes longer than kHangMs.
std::string read_all(int fd) {
  std::string got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHangMs);
  char buf[16 * 1024];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          until - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) fail("server did not close the connection within 5 s (hang)");
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;  // FIN or reset: closed
    if (got.size() < 1024 * 1024) got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Server& s = server();
  int fd = connect_to(s.port);
  send_all(fd, data, size);
  const std::string reply = read_all(fd);
  ::close(fd);
  if (!reply.empty() && reply.rfind("HTTP/1.1 ", 0) != 0) fail("reply is not an HTTP/1.1 response");

  // Still alive and serving.
  static const char kProbe[] = "GET /probe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  fd = connect_to(s.port);
  send_all(fd, reinterpret_cast<const std::uint8_t*>(kProbe), sizeof kProbe - 1);
  const std::string probe = read_all(fd);
  ::close(fd);
  if (probe.rfind("HTTP/1.1 200 ", 0) != 0) fail("server stopped answering a valid request");
  return 0;
}
