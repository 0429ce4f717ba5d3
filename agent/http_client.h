// HttpClient: an async HTTP/1.1 client for one target (http:// or https://) with a keep-alive
// connection pool, used by the load generator. Beast stays inside http_client.cc.
//
// Each exchange() takes an idle connection or opens one (resolve once per client, TCP connect,
// TLS handshake), writes the request, and hands the response to a ResponseObserver as bytes
// arrive, straight from the connection's read buffer (no body copy), each read stamped once
// with steady_clock as its completion is parsed. The observer decides the deadline (first-token
// / idle / total, docs/metrics.md §2.3) of the write and header read, and of the body through
// one watchdog timer that re-reads it (no timer re-arm per read), so timeouts are classified as
// the error the observer names. Name resolution runs on Asio's
// resolver thread and is raced against the deadline and the canceller, so a DNS server that never
// answers cannot hold a request past its deadline (a failed answer is kConnect, no answer in time
// the deadline's class). A socket(), connect() or lookup that fails for want of the client's own
// descriptors, local ports or socket memory is kClientResources (client_resource_error.h), never
// the target's kConnect. A kept-alive connection that the
// server closed before answering is retried once on a fresh connection (t_send is the retry's).
//
// Threading: all calls must run on the thread of the io_context given at construction (the
// agent's I/O thread); no internal locking. Lifetime: the client must outlive its exchanges.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "agent/endpoint.h"
#include "agent/tls_options.h"
#include "analysis/request_sample.h"
#include "net/address_filter.h"
#include "net/http_message.h"

namespace llmcap::agent {

// Absolute steady_clock time (ns since its epoch) and the error to report if it passes.
// on_expiry == kNone: the observer already has the whole answer and only waits a grace for the
// end of the HTTP framing; when it passes, the exchange ends successfully (connection closed).
struct ReadDeadline {
  std::int64_t at_ns = INT64_MAX;
  analysis::ErrorClass on_expiry = analysis::ErrorClass::kTimeoutTotal;
};

// Receives one response as it arrives. Called on the client's thread.
class ResponseObserver {
 public:
  virtual ~ResponseObserver() = default;
  virtual void on_headers(int status, std::string_view content_type, std::int64_t t_ns) = 0;
  // Body bytes (de-chunked) that arrived at t_ns. Return false to stop reading (e.g. malformed
  // data); the connection is then closed, not reused.
  virtual bool on_body(std::string_view bytes, std::int64_t t_ns) = 0;
  // Deadline of the next socket operation (write, header read, each body read).
  virtual ReadDeadline deadline() const = 0;
};

// Cancels one in-flight exchange from the client's thread (drain, job cancel): closes its
// connection so the pending operation completes with ErrorClass::kCancelled.
class RequestCanceller {
 public:
  void cancel() {
    cancelled_ = true;
    if (hook_) hook_();
  }
  bool cancelled() const { return cancelled_; }
  // Used by HttpClient: what cancel() must do now.
  void set_hook(std::function<void()> hook) { hook_ = std::move(hook); }

 private:
  bool cancelled_ = false;
  std::function<void()> hook_;
};

struct OutgoingRequest {
  std::string method = "POST";
  std::string path;  // under the endpoint's base path, e.g. "/v1/completions"
  std::string body;
  std::string content_type = "application/json";
  std::string accept = "text/event-stream";
  net::HeaderList headers;  // extra headers (Authorization, ...), validated by the caller
};

struct ExchangeResult {
  analysis::ErrorClass error = analysis::ErrorClass::kNone;
  std::string error_message;
  int http_status = 0;
  std::int64_t t_send_ns = -1;     // absolute steady ns: first request byte written
  std::int64_t t_headers_ns = -1;  // absolute steady ns
  std::int64_t t_end_ns = -1;      // absolute steady ns: end of response or failure
  std::int64_t connect_ns = -1;    // TCP connect duration; -1 when reused
  std::int64_t tls_ns = -1;        // TLS handshake duration; -1 when none
  bool reused_connection = false;
  bool keep_alive = false;  // connection returned to the pool
};

// A whole small response (for /v1/models, /tokenize, probes).
struct FetchResult {
  ExchangeResult exchange;
  std::string body;
};

struct HttpClientOptions {
  TlsOptions tls;
  std::int64_t connect_timeout_ns = 10'000'000'000;  // TCP connect + TLS handshake
  std::size_t max_header_bytes = 64 * 1024;
  // Most bytes one socket read takes (the connection's read buffer, reserved uninitialised, so a
  // paced stream keeps only the pages its small reads touch resident).
  std::size_t read_chunk_bytes = 64 * 1024;
  std::size_t max_idle_connections = 8192;
  std::string user_agent = "llmcap-agent";
  // Hosts and networks a connection may reach (empty: any); checked on every resolution, so a
  // name that resolves elsewhere than it did when the plan was accepted is refused.
  net::AddressFilter allowed;
};

class HttpClient {
 public:
  // Fails (throws std::runtime_error) only when the TLS context cannot be set up (bad CA file).
  HttpClient(boost::asio::io_context& io, Endpoint endpoint, HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  boost::asio::awaitable<ExchangeResult> exchange(const OutgoingRequest& request,
                                                  ResponseObserver& observer,
                                                  RequestCanceller* canceller = nullptr);
  // Exchange collecting the body (up to max_body_bytes) with one overall timeout; a canceller
  // ends it early (error kCancelled).
  boost::asio::awaitable<FetchResult> fetch(const OutgoingRequest& request, std::int64_t timeout_ns,
                                            std::size_t max_body_bytes = 4 * 1024 * 1024,
                                            RequestCanceller* canceller = nullptr);

  // Closes idle connections.
  void close_idle();
  std::size_t idle_connections() const;
  std::uint64_t connections_opened() const;
  const Endpoint& endpoint() const;

  static std::int64_t now_ns();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmcap::agent
