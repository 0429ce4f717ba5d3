// HttpServer: an async HTTP/1.1 server (keep-alive, size limits, read deadlines, connection
// cap) that hands each request to a Handler coroutine. Used by the simulator (sim/) and the
// daemon's REST API (server/). Beast stays inside http_server.cc.
//
// Connection exhaustion (issue 23 #7): a request must arrive whole within read_timeout of its
// first byte (a client trickling header bytes is cut there, on every request of a keep-alive
// connection); the keep-alive wait for the next request shrinks as the server fills (half of
// max_connections open: idle_timeout; full: min_idle_timeout); one client address may hold at
// most max_connections_per_client; beyond max_connections, reserved_connections more are served
// for reserved_paths only (health and metrics stay reachable when the API is full), and for any
// other request that arrives whole and quickly by taking the slot of the connection whose
// request has been arriving longest, once that began slow_request_evict_after ago (slowloris);
// and when
// accept() runs out of file descriptors (EMFILE/ENFILE) the server waits accept_backoff before
// trying again instead of spinning, and counts it (stats()).
//
// Threading: the server runs on the io_context it is given; each connection is a coroutine on
// its own strand, so a Handler may run on any thread that runs the io_context, never on two
// threads at once for one connection. start()/stop() may be called from any thread.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/http_message.h"

namespace llmcap::net {

// Lets a handler stream a response (SSE, large exports) instead of returning one value.
// Chunked transfer encoding; each write() is one chunk and is flushed to the socket at once,
// so the peer sees each event when it is written.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // Sends the status line and headers. Returns false when the peer is gone.
  virtual boost::asio::awaitable<bool> start(int status, HeaderList headers) = 0;
  // Sends one chunk. Returns false when the peer is gone (stop producing then).
  virtual boost::asio::awaitable<bool> write(std::string_view data) = 0;
  // Sends the terminating chunk; the connection may be reused afterwards.
  virtual boost::asio::awaitable<void> finish() = 0;
  // Resets the connection (TCP RST), e.g. to inject a fault. The connection is not reused.
  virtual void reset() = 0;
  // Sends raw bytes with no chunk framing (for fault injection of malformed framing only).
  virtual boost::asio::awaitable<bool> write_raw(std::string_view bytes) = 0;
  // Calls on_closed once, on the connection's strand, if the peer closes or resets the
  // connection before the handler returns: how a server learns that a client gave up while it
  // has nothing to write yet (a queued request). Bytes from the peer (a pipelined request) end
  // the watch silently. At most one watch per request; the default never calls.
  virtual void watch_peer_close(std::function<void()> on_closed) { (void)on_closed; }
};

// Returns a response to send, or nullopt after streaming one through the ResponseStream.
// Exceptions escaping a handler become a 500 with no internals in the body.
using Handler = std::function<boost::asio::awaitable<std::optional<HttpResponse>>(HttpRequest&,
                                                                                  ResponseStream&)>;

struct HttpServerOptions {
  std::string address = "127.0.0.1";                // listen address (IPv4 or IPv6 literal)
  std::uint16_t port = 0;                           // 0 picks a free port; see HttpServer::port()
  std::size_t max_body_bytes = 4 * 1024 * 1024;     // larger bodies get 413
  std::size_t max_header_bytes = 16 * 1024;         // larger header blocks get 431
  std::chrono::milliseconds read_timeout{10'000};   // to receive one whole request once started
  std::chrono::milliseconds idle_timeout{60'000};   // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{30'000};  // to write one response or chunk
  std::size_t max_connections = 4096;               // beyond this new connections get 503
  std::string server_header = "llmcap";             // value of the Server header
  // Keep-alive wait when the server is full (it shrinks linearly from idle_timeout at half).
  std::chrono::milliseconds min_idle_timeout{1'000};
  std::size_t max_connections_per_client = 0;     // per remote address; 0 = no cap
  std::size_t reserved_connections = 0;           // beyond max_connections, for reserved_paths
  std::vector<std::string> reserved_paths;        // e.g. "/healthz", "/readyz", "/metrics"
  std::chrono::milliseconds accept_backoff{100};  // after EMFILE/ENFILE
  // A connection beyond max_connections (within reserved_connections more) whose first request
  // arrives whole, quickly, for a path that is not reserved takes the slot of the connection
  // whose request has been arriving longest, if that began more than this long ago (slowloris:
  // a request trickled over seconds holds a slot; an honest one arrives in milliseconds).
  // 0 = never evict (such a request gets 503).
  std::chrono::milliseconds slow_request_evict_after{1'000};
  // The Host header (DNS-rebinding defence): an HTTP/1.1 request needs exactly one Host, an
  // HTTP/1.0 one at most one (else 400). When allowed_hosts is not empty, the host part (no
  // port, any case, no trailing dot) must be one of its entries, or an IP literal when
  // allow_ip_literal_hosts is set (a rebinding page always sends its own name, never an IP);
  // anything else gets 421 Misdirected Request. "*" allows every host.
  std::vector<std::string> allowed_hosts;
  bool allow_ip_literal_hosts = false;
};

// The host part of a Host header value: "Example.COM:8080" -> "example.com", "[::1]:80" ->
// "::1"; nullopt when the value is malformed (empty, a bad port, unbalanced brackets).
std::optional<std::string> host_of_header(std::string_view value);
// Whether HttpServerOptions' Host policy lets `host` (as host_of_header returns it) through.
bool host_allowed(const HttpServerOptions& options, std::string_view host);

// What the server refused, since start (all monotonic counts).
struct HttpServerStats {
  std::uint64_t rejected_full = 0;        // 503: max_connections (and the reserve) in use
  std::uint64_t rejected_per_client = 0;  // 503: max_connections_per_client
  std::uint64_t fd_exhausted = 0;         // accept() failed with EMFILE/ENFILE
  std::uint64_t accept_errors = 0;        // every accept() failure, those included
  std::uint64_t evicted_slow = 0;         // connections closed for a slow request (slowloris)
};

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting. Throws std::runtime_error naming the address on failure.
  void start();
  // The bound port (valid after start()).
  std::uint16_t port() const;
  // Stops accepting and closes every open connection. Idempotent.
  void stop();
  // Connections open now.
  std::size_t connection_count() const;
  HttpServerStats stats() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace llmcap::net
