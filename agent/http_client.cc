#include "agent/http_client.h"

#include <openssl/ssl.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <vector>

#include "agent/client_resource_error.h"
#include "net/use_nothrow.h"

namespace llmcap::agent {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using analysis::ErrorClass;

namespace {

using net::use_nothrow;

struct Connection {
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  // Socket reads land here (one per connection: reads of concurrent exchanges complete
  // independently). Reserved once, never zero-filled: a paced stream's ≈ 250-byte reads touch
  // only its first page (the buffer rewinds when emptied), while a firehose read can take up to
  // its whole size in one recvmsg.
  beast::flat_buffer buffer;

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  bool is_open() { return lowest().socket().is_open(); }
  // Ends a pending socket operation (operation_aborted) and leaves the connection open.
  void cancel() {
    beast::error_code ec;
    lowest().socket().cancel(ec);
  }
  void close() {
    beast::error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    lowest().close();
  }
};

// Arms the stream's timer from the observer and returns the deadline in force.
ReadDeadline arm(beast::tcp_stream& s, const ReadDeadline& d) {
  if (d.at_ns == INT64_MAX) {
    s.expires_never();
  } else {
    s.expires_at(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(d.at_ns)));
  }
  return d;
}

bool is_timeout(const beast::error_code& ec, const ReadDeadline& d) {
  if (ec == beast::error::timeout) return true;
  // Some layers (TLS) may surface the closed socket instead; judge by the clock.
  return d.at_ns != INT64_MAX && HttpClient::now_ns() >= d.at_ns;
}

bool peer_closed(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::ssl::error::stream_truncated;
}

std::string describe(const beast::error_code& ec) { return ec.message(); }

// socket(), connect() or the lookup failed for want of the client's own descriptors, local
// ports or socket memory (client_resource_error.h): classes r as kClientResources and says so.
bool client_resources_failed(const beast::error_code& ec, const std::string& what,
                             ExchangeResult& r) {
  if (ec.category() != asio::error::get_system_category()) return false;
  const auto shortage = client_resource_error(ec.value());
  if (!shortage) return false;
  r.error = ErrorClass::kClientResources;
  r.error_message = describe_client_resource_error(*shortage, ec.value(), what);
  return true;
}

// Result of one attempt on one connection.
struct Attempt {
  bool retryable = false;  // reused connection closed by the server before any response byte
  bool reusable = false;   // response complete and keep-alive
};

// A Beast body type that hands de-chunked body bytes straight to the ResponseObserver as the
// parser finds them in the connection's read buffer: no intermediate body buffer, no copy.
// Every read is stamped once, at its first body byte (steady_clock, docs/metrics.md §1.1): the
// caller resets t_ns to -1 before each socket read, so all events of one read share its arrival
// time.
struct ObserverBody {
  struct value_type {
    ResponseObserver* observer = nullptr;
    std::int64_t t_ns = -1;  // arrival stamp of the current read; -1 = not taken yet
    bool stopped = false;    // the observer returned false
  };
  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(http::header<isRequest, Fields>&, value_type& v) : v_(v) {}
    void init(const boost::optional<std::uint64_t>&, beast::error_code& ec) { ec = {}; }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      ec = {};
      std::size_t n = 0;
      for (const auto b : beast::buffers_range_ref(buffers)) {
        if (b.size() == 0) continue;
        if (v_.t_ns < 0) v_.t_ns = HttpClient::now_ns();
        if (!v_.observer->on_body(std::string_view(static_cast<const char*>(b.data()), b.size()),
                                  v_.t_ns)) {
          v_.stopped = true;
          ec = asio::error::operation_aborted;
          return n;
        }
        n += b.size();
      }
      return n;
    }
    void finish(beast::error_code& ec) { ec = {}; }

   private:
    value_type& v_;
  };
};

// Parses what the connection's buffer already holds, without a socket read. Beast's
// async_read_some takes one element (chunk header, chunk data, ...) per call, so the end of a
// body that arrived in one segment can still be waiting in the buffer after a read. Stops at
// the end of the message, at an incomplete element (ec clear) or at a parse error (ec set).
template <class Parser>
void parse_buffered(Parser& parser, beast::flat_buffer& buffer, beast::error_code& ec) {
  while (!parser.is_done() && buffer.size() > 0) {
    const std::size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == http::error::need_more) {
      ec = {};
      return;
    }
    if (ec || used == 0) return;
  }
}

// The body-read deadline of one exchange, enforced by one timer instead of re-arming the
// stream's timer for every read (a timer queue update per token event, issue 10). The timer is
// armed at the observer's deadline; when it fires it re-reads the deadline (which moves on with
// each token: idle gap) and either re-arms for the later time or marks the exchange expired
// (`fired`) and cancels the pending socket read. It cancels, not closes: the read it races may
// already be complete, its completion queued behind this handler in the same turn, or served
// from the connection's buffer (Beast parses one element per read, and a read the buffer
// answers completes through the queue). The reader then finds `fired` after a read that did not
// end the body and ends the exchange there; a read that did end it leaves a whole response on
// an open connection, which may be pooled (issue 36: closing here pooled a closed socket, or
// dropped a connection the server had ended in time). The reader calls tighten() after each
// read so a deadline that moved EARLIER (first-token → idle phase) re-arms at once. Shared with
// the timer's handler, which may run after the exchange has finished (it then finds `active`
// false and touches nothing).
struct BodyWatchdog {
  BodyWatchdog(asio::io_context& io, ResponseObserver& o, Connection& c)
      : timer(io), observer(&o), conn(&c) {}

  static void start(const std::shared_ptr<BodyWatchdog>& self) {
    self->armed_at_ns = INT64_MAX;
    tighten(self);
  }
  static void tighten(const std::shared_ptr<BodyWatchdog>& self) {
    const ReadDeadline d = self->observer->deadline();
    if (d.at_ns >= self->armed_at_ns) return;
    self->armed_at_ns = d.at_ns;
    self->timer.expires_at(
        std::chrono::steady_clock::time_point(std::chrono::nanoseconds(d.at_ns)));
    self->timer.async_wait([self](const beast::error_code& ec) { on_timer(self, ec); });
  }
  static void on_timer(const std::shared_ptr<BodyWatchdog>& self, const beast::error_code& ec) {
    if (ec || !self->active) return;  // re-armed (cancelled) or exchange over
    const ReadDeadline d = self->observer->deadline();
    if (HttpClient::now_ns() >= d.at_ns) {
      self->expired = d;
      self->fired = true;
      self->conn->cancel();
      return;
    }
    self->armed_at_ns = INT64_MAX;
    tighten(self);
  }
  void stop() {
    active = false;
    timer.cancel();
  }

  asio::steady_timer timer;
  ResponseObserver* observer;
  Connection* conn;
  std::int64_t armed_at_ns = INT64_MAX;
  bool active = true;
  bool fired = false;
  ReadDeadline expired;
};

class CollectingObserver final : public ResponseObserver {
 public:
  CollectingObserver(std::int64_t deadline_ns, std::size_t max_bytes)
      : deadline_ns_(deadline_ns), max_bytes_(max_bytes) {}
  void on_headers(int, std::string_view, std::int64_t) override {}
  bool on_body(std::string_view bytes, std::int64_t) override {
    if (body.size() + bytes.size() > max_bytes_) {
      too_large = true;
      return false;
    }
    body.append(bytes);
    return true;
  }
  ReadDeadline deadline() const override { return {deadline_ns_, ErrorClass::kTimeoutTotal}; }
  std::string body;
  bool too_large = false;

 private:
  std::int64_t deadline_ns_;
  std::size_t max_bytes_;
};

}  // namespace

struct HttpClient::Impl {
  Impl(asio::io_context& io_, Endpoint ep, HttpClientOptions opts)
      : io(io_), endpoint(std::move(ep)), options(std::move(opts)) {
    if (endpoint.tls) {
      ssl_ctx.emplace(ssl::context::tls_client);
      beast::error_code ec;
      if (options.tls.verify_peer) {
        if (options.tls.ca_file.empty()) {
          ssl_ctx->set_default_verify_paths(ec);
          if (ec) throw std::runtime_error("cannot load the system CA store: " + ec.message());
        } else {
          ssl_ctx->load_verify_file(options.tls.ca_file, ec);
          if (ec) {
            throw std::runtime_error("cannot load CA file '" + options.tls.ca_file +
                                     "': " + ec.message());
          }
        }
        ssl_ctx->set_verify_mode(ssl::verify_peer);
      } else {
        ssl_ctx->set_verify_mode(ssl::verify_none);
      }
    }
    server_name = options.tls.server_name.empty() ? endpoint.host : options.tls.server_name;
  }

  asio::awaitable<std::unique_ptr<Connection>> connect(ResponseObserver& observer,
                                                       RequestCanceller* canceller,
                                                       ExchangeResult& r);
  template <class Stream>
  asio::awaitable<Attempt> transact(Stream& stream, Connection& conn, const std::string& head,
                                    const OutgoingRequest& req, ResponseObserver& observer,
                                    RequestCanceller* canceller, ExchangeResult& r);
  std::string request_head(const OutgoingRequest& req) const;

  asio::io_context& io;
  Endpoint endpoint;
  HttpClientOptions options;
  std::optional<ssl::context> ssl_ctx;
  std::string server_name;
  std::optional<tcp::resolver::results_type> resolved;  // resolved once per client
  std::vector<std::unique_ptr<Connection>> idle;
  std::uint64_t opened = 0;
};

std::int64_t HttpClient::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string HttpClient::Impl::request_head(const OutgoingRequest& req) const {
  std::string head;
  head.reserve(256);
  head.append(req.method).append(" ").append(endpoint.target(req.path)).append(" HTTP/1.1\r\n");
  head.append("Host: ").append(endpoint.host_header()).append("\r\n");
  head.append("User-Agent: ").append(options.user_agent).append("\r\n");
  if (!req.accept.empty()) head.append("Accept: ").append(req.accept).append("\r\n");
  if (!req.body.empty() || req.method == "POST") {
    head.append("Content-Type: ").append(req.content_type).append("\r\n");
    head.append("Content-Length: ").append(std::to_string(req.body.size())).append("\r\n");
  }
  for (const auto& [k, v] : req.headers) head.append(k).append(": ").append(v).append("\r\n");
  head.append("\r\n");
  return head;
}

asio::awaitable<std::unique_ptr<Connection>> HttpClient::Impl::connect(ResponseObserver& observer,
                                                                       RequestCanceller* canceller,
                                                                       ExchangeResult& r) {
  const std::int64_t start = now_ns();
  ReadDeadline d{start + options.connect_timeout_ns, ErrorClass::kTimeoutConnect};
  if (const auto od = observer.deadline(); od.at_ns < d.at_ns) d = od;

  if (!resolved) {
    // getaddrinfo cannot be interrupted (resolver.cancel() only stops a lookup that has not
    // started), so the lookup runs on Asio's resolver thread while this request waits on a
    // timer that the answer, the deadline or a cancel ends: a DNS server that never answers
    // costs the request its deadline, and a stop or drain still ends it at once. A late answer
    // lands in the shared state and is dropped.
    struct PendingResolve {
      explicit PendingResolve(asio::io_context& ctx) : resolver(ctx), wake(ctx) {}
      tcp::resolver resolver;
      asio::steady_timer wake;
      bool answered = false;
      beast::error_code ec;
      tcp::resolver::results_type results;
    };
    if (canceller && canceller->cancelled()) {
      r.error = ErrorClass::kCancelled;
      r.error_message = "cancelled before connect";
      co_return nullptr;
    }
    auto pending = std::make_shared<PendingResolve>(io);
    pending->wake.expires_at(
        std::chrono::steady_clock::time_point(std::chrono::nanoseconds(d.at_ns)));
    pending->resolver.async_resolve(
        endpoint.host, endpoint.port,
        [pending](const beast::error_code& ec, tcp::resolver::results_type results) {
          pending->answered = true;
          pending->ec = ec;
          pending->results = std::move(results);
          pending->wake.cancel();
        });
    if (canceller) canceller->set_hook([pending] { pending->wake.cancel(); });
    co_await pending->wake.async_wait(use_nothrow);
    if (canceller) canceller->set_hook(nullptr);
    if (!pending->answered) {
      pending->resolver.cancel();
      if (canceller && canceller->cancelled()) {
        r.error = ErrorClass::kCancelled;
        r.error_message = "cancelled while resolving " + endpoint.host;
      } else {
        r.error = d.on_expiry;
        r.error_message = "cannot resolve " + endpoint.host + ": no answer before the deadline";
      }
      co_return nullptr;
    }
    if (pending->ec || pending->results.empty()) {
      // An answer, even a late one, says the name does not resolve: a connect error, unless
      // the lookup itself ran out of the client's resources (no descriptor for /etc/hosts).
      if (!client_resources_failed(pending->ec, "resolving " + endpoint.host, r)) {
        r.error = ErrorClass::kConnect;
        r.error_message = "cannot resolve " + endpoint.host + ": " + describe(pending->ec);
      }
      co_return nullptr;
    }
    if (!options.allowed.empty() && !options.allowed.allows_name(endpoint.host)) {
      // DNS rebinding (issue 23 #1): the name was checked when the plan was accepted; what it
      // resolves to now must pass the same allowlist, every address of it.
      for (const auto& entry : pending->results) {
        const auto address = entry.endpoint().address();
        if (!options.allowed.allows_address(address.to_string())) {
          r.error = ErrorClass::kConnect;
          r.error_message = "host " + endpoint.host + " now resolves to " + address.to_string() +
                            ", outside target_allowlist: not connecting (the daemon's "
                            "target_allowlist setting lists what may be reached)";
          co_return nullptr;
        }
      }
    }
    resolved = std::move(pending->results);
  }

  auto conn = std::make_unique<Connection>();
  conn->buffer.reserve(options.read_chunk_bytes);
  if (endpoint.tls) {
    conn->tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(io.get_executor(), *ssl_ctx);
  } else {
    conn->plain = std::make_unique<beast::tcp_stream>(io.get_executor());
  }
  Connection* raw = conn.get();
  if (canceller) {
    if (canceller->cancelled()) {
      r.error = ErrorClass::kCancelled;
      r.error_message = "cancelled before connect";
      co_return nullptr;
    }
    canceller->set_hook([raw] { raw->close(); });
  }
  // Each address in turn, the socket opened here rather than by a range connect: Asio's range
  // connect reports a socket() that failed (EMFILE, ENFILE, ENOBUFS) as "operation canceled",
  // which read as the target's connect error (issue 35 #5).
  beast::error_code ec = asio::error::host_not_found;
  for (const auto& entry : *resolved) {
    auto& socket = conn->lowest().socket();
    beast::error_code ignored;
    if (socket.is_open()) socket.close(ignored);  // the previous address failed
    socket.open(entry.endpoint().protocol(), ec);
    if (ec) {
      if (client_resource_error(ec.value())) break;
      continue;  // e.g. IPv6 off on this host: the next address may be IPv4
    }
    arm(conn->lowest(), d);
    std::tie(ec) = co_await conn->lowest().async_connect(entry.endpoint(), use_nothrow);
    if (!ec || (canceller && canceller->cancelled()) || is_timeout(ec, d)) break;
  }
  if (ec) {
    if (!(canceller && canceller->cancelled()) && !is_timeout(ec, d) &&
        client_resources_failed(ec, "connect to " + endpoint.host_header(), r)) {
      co_return nullptr;  // the client's shortage, not the target's: the resolution still holds
    }
    if (canceller && canceller->cancelled())
      r.error = ErrorClass::kCancelled;
    else
      r.error = is_timeout(ec, d) ? d.on_expiry : ErrorClass::kConnect;
    r.error_message = "connect to " + endpoint.host_header() + ": " + describe(ec);
    // A failed resolution result may be stale (DNS change); resolve again next time.
    resolved.reset();
    co_return nullptr;
  }
  beast::error_code opt_ec;
  conn->lowest().socket().set_option(tcp::no_delay(true), opt_ec);
  // transact() reads a plain body with read_some after a readiness wait: it must not block.
  if (!conn->tls) conn->lowest().socket().non_blocking(true, opt_ec);
  const std::int64_t connected = now_ns();
  r.connect_ns = connected - start;
  ++opened;

  if (conn->tls) {
    if (!SSL_set_tlsext_host_name(conn->tls->native_handle(), server_name.c_str())) {
      r.error = ErrorClass::kTls;
      r.error_message = "cannot set TLS SNI name '" + server_name + "'";
      co_return nullptr;
    }
    if (options.tls.verify_peer) {
      conn->tls->set_verify_callback(ssl::host_name_verification(server_name));
    }
    arm(conn->lowest(), d);
    auto [hec] = co_await conn->tls->async_handshake(ssl::stream_base::client, use_nothrow);
    if (hec) {
      if (canceller && canceller->cancelled())
        r.error = ErrorClass::kCancelled;
      else
        r.error = is_timeout(hec, d) ? d.on_expiry : ErrorClass::kTls;
      r.error_message = "TLS handshake with " + server_name + ": " + describe(hec);
      co_return nullptr;
    }
    r.tls_ns = now_ns() - connected;
  }
  co_return conn;
}

template <class Stream>
asio::awaitable<Attempt> HttpClient::Impl::transact(
    Stream& stream, Connection& conn, const std::string& head, const OutgoingRequest& req,
    ResponseObserver& observer, RequestCanceller* canceller, ExchangeResult& r) {
  Attempt attempt;
  const bool reused = r.reused_connection;
  auto fail = [&](const beast::error_code& ec, const ReadDeadline& d, std::string_view what,
                  ErrorClass otherwise) {
    if (canceller && canceller->cancelled()) {
      r.error = ErrorClass::kCancelled;
      r.error_message = "cancelled";
    } else if (is_timeout(ec, d)) {
      r.error = d.on_expiry;
      r.error_message = std::string(what) + ": deadline passed";
    } else {
      r.error = otherwise;
      r.error_message = std::string(what) + ": " + describe(ec);
    }
  };

  // Write the request.
  ReadDeadline d = arm(conn.lowest(), observer.deadline());
  r.t_send_ns = now_ns();
  const std::array<asio::const_buffer, 2> buffers{asio::buffer(head), asio::buffer(req.body)};
  auto [wec, wn] = co_await asio::async_write(stream, buffers, use_nothrow);
  (void)wn;
  if (wec) {
    if (reused && peer_closed(wec) && !(canceller && canceller->cancelled())) {
      attempt.retryable = true;
      co_return attempt;
    }
    fail(wec, d, "write request", ErrorClass::kProtocol);
    co_return attempt;
  }

  // Read the status line and headers.
  http::response_parser<ObserverBody> parser;
  parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
  parser.body_limit(boost::none);
  parser.eager(true);
  d = arm(conn.lowest(), observer.deadline());
  auto [hec, hn] = co_await http::async_read_header(stream, conn.buffer, parser, use_nothrow);
  (void)hn;
  if (hec) {
    if (reused && hec == http::error::end_of_stream && !(canceller && canceller->cancelled())) {
      attempt.retryable = true;
      co_return attempt;
    }
    fail(hec, d, "read response headers", ErrorClass::kProtocol);
    co_return attempt;
  }
  auto& msg = parser.get();
  r.t_headers_ns = now_ns();
  r.http_status = static_cast<int>(msg.result_int());
  const auto ct = msg[http::field::content_type];
  observer.on_headers(r.http_status, std::string_view(ct.data(), ct.size()), r.t_headers_ns);

  // Stream the body straight into the observer (ObserverBody); each read is stamped once. The
  // deadline is the watchdog's, so the stream's own timer is not touched per read.
  ObserverBody::value_type& body = msg.body();
  body.observer = &observer;
  conn.lowest().expires_never();
  auto watchdog = std::make_shared<BodyWatchdog>(io, observer, conn);
  struct StopOnExit {
    BodyWatchdog& w;
    ~StopOnExit() { w.stop(); }
  } stop_on_exit{*watchdog};
  BodyWatchdog::start(watchdog);
  // Plain TCP: each step reads what the socket holds and parses every whole element of it at
  // once, where Beast's read takes one element per call and a call the buffer answers costs a
  // turn of the queue. A step waits for readiness first once a read found the socket drained,
  // so no read returns EAGAIN (Asio's async read tries the socket first: 2 recvmsg per paced
  // event, one of them EAGAIN, issue 36 item 2). The first step does not wait: bytes that came
  // after the header read may already have been signalled (epoll is edge-triggered here).
  bool socket_drained = false;
  while (!parser.is_done()) {
    body.t_ns = -1;
    beast::error_code ec;
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      auto& socket = conn.lowest().socket();
      if (socket_drained) {
        auto [wec] = co_await socket.async_wait(tcp::socket::wait_read, use_nothrow);
        // A watchdog's cancel ends the wait; what has arrived by then is still read.
        if (wec && !watchdog->fired) ec = wec;
      }
      if (!ec) {
        const std::size_t want = beast::read_size(conn.buffer, 65536);
        const std::size_t got = socket.read_some(conn.buffer.prepare(want), ec);
        conn.buffer.commit(got);
        socket_drained = got < want;
        if (ec == asio::error::would_block) {
          ec = {};
          socket_drained = true;
        }
        if (!ec || ec == asio::error::eof) {
          const bool eof = ec == asio::error::eof;
          ec = {};
          parse_buffered(parser, conn.buffer, ec);
          // A close-delimited body ends here; any other is cut (partial_message).
          if (eof && !ec && !body.stopped && !parser.is_done()) parser.put_eof(ec);
        }
      }
    } else {
      auto [rec, n] = co_await http::async_read_some(stream, conn.buffer, parser, use_nothrow);
      (void)n;
      ec = rec;
    }
    if (body.stopped) {
      r.t_end_ns = body.t_ns;
      co_return attempt;  // observer recorded its own error
    }
    if (!ec && watchdog->fired && !parser.is_done()) {
      // The deadline passed in the turn this read completed. What was already received may
      // end the body (the server then answered in time): parse it here, since another read
      // would wait on the socket with no deadline left.
      body.t_ns = -1;
      parse_buffered(parser, conn.buffer, ec);
      if (body.stopped) {
        r.t_end_ns = body.t_ns;
        co_return attempt;
      }
      if (parser.is_done()) break;
    }
    if (ec || (watchdog->fired && !parser.is_done())) {
      if (watchdog->fired && watchdog->expired.on_expiry == ErrorClass::kNone &&
          !(canceller && canceller->cancelled())) {
        // The observer had the whole answer ([DONE]) and the server held the connection open
        // past the grace it gave: the exchange succeeded; the connection is not reused.
        r.t_end_ns = now_ns();
        co_return attempt;
      }
      if (watchdog->fired && !(canceller && canceller->cancelled())) {
        r.error = watchdog->expired.on_expiry;
        r.error_message = "read response body: deadline passed";
      } else {
        fail(ec, observer.deadline(), "read response body", ErrorClass::kProtocol);
        if (r.error == ErrorClass::kProtocol &&
            (peer_closed(ec) || ec == http::error::partial_message)) {
          // The body was cut (reset, or a close before its Content-Length or last chunk).
          r.error = ErrorClass::kTruncated;
          r.error_message = "connection closed mid-response: " + describe(ec);
        }
      }
      co_return attempt;
    }
    BodyWatchdog::tighten(watchdog);
  }
  r.t_end_ns = now_ns();
  // The body is whole and no read is pending, even when the watchdog fired in the same turn (it
  // only cancels). A canceller may have closed the connection in that turn: a closed socket is
  // never pooled (it failed the next request with "write request: Bad file descriptor").
  attempt.reusable = parser.keep_alive() && conn.is_open();
  co_return attempt;
}

HttpClient::HttpClient(asio::io_context& io, Endpoint endpoint, HttpClientOptions options)
    : impl_(std::make_unique<Impl>(io, std::move(endpoint), std::move(options))) {}

HttpClient::~HttpClient() { close_idle(); }

asio::awaitable<ExchangeResult> HttpClient::exchange(const OutgoingRequest& request,
                                                     ResponseObserver& observer,
                                                     RequestCanceller* canceller) {
  Impl& im = *impl_;
  const std::string head = im.request_head(request);
  ExchangeResult r;
  for (int attempt_no = 0; attempt_no < 2; ++attempt_no) {
    r = ExchangeResult{};
    if (canceller && canceller->cancelled()) {
      r.error = ErrorClass::kCancelled;
      r.error_message = "cancelled before send";
      r.t_end_ns = now_ns();
      co_return r;
    }
    std::unique_ptr<Connection> conn;
    // Only open connections are pooled (transact); one found closed all the same is dropped.
    while (!im.idle.empty() && !im.idle.back()->is_open()) im.idle.pop_back();
    if (!im.idle.empty() && attempt_no == 0) {
      conn = std::move(im.idle.back());
      im.idle.pop_back();
      r.reused_connection = true;
    } else {
      conn = co_await im.connect(observer, canceller, r);
      if (!conn) {
        r.t_end_ns = now_ns();
        if (canceller) canceller->set_hook(nullptr);
        co_return r;
      }
    }
    Connection* raw = conn.get();
    if (canceller) canceller->set_hook([raw] { raw->close(); });
    Attempt a =
        conn->tls
            ? co_await im.transact(*conn->tls, *conn, head, request, observer, canceller, r)
            : co_await im.transact(*conn->plain, *conn, head, request, observer, canceller, r);
    if (canceller) canceller->set_hook(nullptr);
    if (r.t_end_ns < 0) r.t_end_ns = now_ns();
    if (a.retryable) {
      conn->close();
      continue;
    }
    if (a.reusable && r.error == ErrorClass::kNone &&
        im.idle.size() < im.options.max_idle_connections) {
      r.keep_alive = true;
      conn->lowest().expires_never();
      im.idle.push_back(std::move(conn));
    } else {
      conn->close();
    }
    co_return r;
  }
  co_return r;
}

asio::awaitable<FetchResult> HttpClient::fetch(const OutgoingRequest& request,
                                               std::int64_t timeout_ns, std::size_t max_body_bytes,
                                               RequestCanceller* canceller) {
  CollectingObserver observer(now_ns() + timeout_ns, max_body_bytes);
  FetchResult out;
  out.exchange = co_await exchange(request, observer, canceller);
  if (observer.too_large && out.exchange.error == ErrorClass::kNone) {
    out.exchange.error = ErrorClass::kProtocol;
    out.exchange.error_message =
        "response body exceeds " + std::to_string(max_body_bytes) + " bytes";
  }
  out.body = std::move(observer.body);
  co_return out;
}

void HttpClient::close_idle() {
  for (auto& c : impl_->idle) c->close();
  impl_->idle.clear();
}

std::size_t HttpClient::idle_connections() const { return impl_->idle.size(); }
std::uint64_t HttpClient::connections_opened() const { return impl_->opened; }
const Endpoint& HttpClient::endpoint() const { return impl_->endpoint; }

}  // namespace llmcap::agent
