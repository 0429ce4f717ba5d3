#include "net/http_server.h"

#include <sys/socket.h>
#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cerrno>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "net/use_nothrow.h"

namespace llmcap::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string status_line(int status) {
  std::string s = "HTTP/1.1 " + std::to_string(status) + " ";
  s.append(reason_phrase(status));
  s.append("\r\n");
  return s;
}

// Serialises a whole response; adds Content-Length, Server and Connection.
std::string serialize(const HttpResponse& r, bool keep_alive, const std::string& server,
                      bool head_only) {
  std::string out = status_line(r.status);
  bool has_type = false;
  for (const auto& [k, v] : r.headers) {
    if (to_lower_ascii(k) == "content-type") has_type = true;
    out.append(k).append(": ").append(v).append("\r\n");
  }
  if (!has_type && !r.body.empty()) out.append("Content-Type: text/plain; charset=utf-8\r\n");
  out.append("Content-Length: ").append(std::to_string(r.body.size())).append("\r\n");
  out.append("Server: ").append(server).append("\r\n");
  if (!keep_alive) out.append("Connection: close\r\n");
  out.append("\r\n");
  if (!head_only) out.append(r.body);
  return out;
}

// The problem+json body of an error the server answers itself (malformed or refused requests).
HttpResponse server_problem(int status, std::string_view detail) {
  std::string body = std::string(R"({"type":"about:blank","title":")") +
                     std::string(reason_phrase(status)) + R"(","status":)" +
                     std::to_string(status) + R"(,"detail":")";
  for (const char ch : detail) {
    if (ch == '"' || ch == '\\') body += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) body += ch;
  }
  body += "\"}";
  return HttpResponse::text(status, std::move(body), "application/problem+json");
}

std::string trim_ows(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return std::string(v);
}

// Why the request's framing or Host header is refused (status and detail), if it is: HTTP/1.1
// needs exactly one Host; Transfer-Encoding, when present, must be exactly "chunked" (another
// coding is not implemented, one that does not end in chunked cannot delimit a request) and
// never beside Content-Length (request smuggling).
std::optional<std::pair<int, std::string>> refuse_request(const HttpServerOptions& options,
                                                          const HttpRequest& req,
                                                          unsigned version) {
  std::size_t hosts = 0, lengths = 0;
  std::string host_value, coding;
  for (const auto& [name, value] : req.headers) {
    if (name == "host") {
      ++hosts;
      host_value = value;
    } else if (name == "content-length") {
      ++lengths;
    } else if (name == "transfer-encoding") {
      coding += (coding.empty() ? "" : ",") + value;
    }
  }
  if (hosts > 1 || (hosts == 0 && version >= 11))
    return std::pair{400, std::string("a request needs exactly one Host header")};
  for (auto& c : coding) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!coding.empty()) {
    if (lengths > 0)
      return std::pair{400, std::string("Transfer-Encoding and Content-Length together")};
    const std::string t = trim_ows(coding);
    if (t != "chunked") {
      const auto last = t.rfind(',');
      const std::string tail = trim_ows(last == std::string::npos ? t : t.substr(last + 1));
      if (tail == "chunked")
        return std::pair{501, "Transfer-Encoding '" + t + "' is not implemented (only chunked)"};
      return std::pair{400, "Transfer-Encoding '" + t + "' does not end in chunked"};
    }
  }
  if (hosts == 1 && !options.allowed_hosts.empty()) {
    const auto host = host_of_header(host_value);
    if (!host) return std::pair{400, std::string("malformed Host header")};
    if (!host_allowed(options, *host))
      return std::pair{421,
                       "Host '" + *host + "' is not one this server answers to (allowed_hosts)"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> host_of_header(std::string_view value) {
  std::string v = trim_ows(value);
  if (v.empty()) return std::nullopt;
  std::string host;
  std::string_view rest;
  if (v.front() == '[') {
    const auto close = v.find(']');
    if (close == std::string::npos) return std::nullopt;
    host = v.substr(1, close - 1);
    rest = std::string_view(v).substr(close + 1);
  } else {
    const auto colon = v.find(':');
    host = v.substr(0, colon);
    rest = colon == std::string::npos ? std::string_view() : std::string_view(v).substr(colon);
  }
  if (!rest.empty()) {
    if (rest.front() != ':' || rest.size() > 6) return std::nullopt;
    for (const char ch : rest.substr(1))
      if (ch < '0' || ch > '9') return std::nullopt;
  }
  if (!host.empty() && host.back() == '.') host.pop_back();
  if (host.empty()) return std::nullopt;
  for (const char ch : host)
    if (ch <= ' ' || ch > '~' || ch == '/' || ch == '@' || ch == '"') return std::nullopt;
  return to_lower_ascii(host);
}

bool host_allowed(const HttpServerOptions& options, std::string_view host) {
  if (options.allowed_hosts.empty()) return true;
  for (const auto& a : options.allowed_hosts) {
    if (a == "*") return true;
    std::string entry = to_lower_ascii(a);
    if (!entry.empty() && entry.back() == '.') entry.pop_back();
    if (entry.size() > 2 && entry.front() == '[' && entry.back() == ']')
      entry = entry.substr(1, entry.size() - 2);
    if (entry == host) return true;
  }
  if (options.allow_ip_literal_hosts) {
    beast::error_code ec;
    (void)asio::ip::make_address(std::string(host), ec);
    if (!ec) return true;
  }
  return false;
}

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(asio::io_context& io_, HttpServerOptions opts, Handler h)
      : io(io_),
        options(std::move(opts)),
        handler(std::move(h)),
        acceptor(asio::make_strand(io_)) {}

  asio::io_context& io;
  HttpServerOptions options;
  Handler handler;
  tcp::acceptor acceptor;
  std::uint16_t bound_port = 0;
  std::atomic<bool> stopped{false};
  std::atomic<std::size_t> open_connections{0};
  std::atomic<std::uint64_t> rejected_full{0}, rejected_per_client{0}, fd_exhausted{0},
      accept_errors{0};

  std::atomic<std::uint64_t> evicted_slow{0};

  // A connection as the server tracks it: its stream, and when the request it is receiving
  // began (steady-clock ns; 0 while it waits for a next request or runs a handler). A request
  // that takes long to arrive is what a slowloris client holds a slot with.
  struct SessionEntry {
    std::weak_ptr<beast::tcp_stream> stream;
    std::shared_ptr<std::atomic<std::int64_t>> receiving_since_ns;
  };
  std::mutex mu;                                             // guards below
  std::unordered_map<std::uint64_t, SessionEntry> sessions;  // GUARDED_BY(mu)
  std::unordered_map<std::string, std::size_t> per_client;   // GUARDED_BY(mu)
  std::uint64_t next_session_id = 0;                         // GUARDED_BY(mu)

  // The keep-alive wait now: idle_timeout up to half of max_connections open, then shrinking
  // linearly to min_idle_timeout when full, so idle connections make room under pressure.
  std::chrono::milliseconds idle_timeout_now() const {
    const double max = static_cast<double>(std::max<std::size_t>(options.max_connections, 1));
    const double load = static_cast<double>(open_connections.load()) / max;
    if (load <= 0.5) return options.idle_timeout;
    const double f = std::clamp((1.0 - load) / 0.5, 0.0, 1.0);
    const auto lo = std::min(options.min_idle_timeout, options.idle_timeout);
    return lo +
           std::chrono::duration_cast<std::chrono::milliseconds>((options.idle_timeout - lo) * f);
  }
  bool reserved(const std::string& path) const {
    return std::find(options.reserved_paths.begin(), options.reserved_paths.end(), path) !=
           options.reserved_paths.end();
  }

  // Closes the connection whose request has been arriving longest, if it began more than
  // options.slow_request_evict_after ago (an honest client sends a request in milliseconds), so
  // a new connection takes its slot: slowloris cannot keep the server full. Returns whether one
  // was closed.
  bool evict_slowest_request(std::uint64_t except);

  asio::awaitable<void> accept_loop();
  asio::awaitable<void> session(tcp::socket socket);
};

// The per-connection stream a handler writes to.
class StreamWriter final : public ResponseStream {
 public:
  // chunked = false for an HTTP/1.0 client, which cannot read chunked framing: the body is
  // then sent as it is and ends when the connection closes.
  StreamWriter(beast::tcp_stream& stream, const HttpServerOptions& options, bool chunked)
      : stream_(stream), options_(options), chunked_(chunked) {}
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;
  // The handler has returned: a pending watch must not fire (nor touch the socket) later.
  ~StreamWriter() override {
    if (!watch_) return;
    watch_->active = false;
    beast::error_code ec;
    stream_.socket().cancel(ec);  // only the watch is pending between handler and next read
  }

  void watch_peer_close(std::function<void()> on_closed) override {
    if (watch_ || broken_) return;
    watch_ = std::make_shared<Watch>();
    watch_->on_closed = std::move(on_closed);
    arm(watch_, stream_.socket());
  }

  asio::awaitable<bool> start(int status, HeaderList headers) override {
    started_ = true;
    std::string head = status_line(status);
    for (const auto& [k, v] : headers) head.append(k).append(": ").append(v).append("\r\n");
    head.append(chunked_ ? "Transfer-Encoding: chunked\r\n" : "Connection: close\r\n")
        .append("Server: ")
        .append(options_.server_header)
        .append("\r\n\r\n");
    co_return co_await send(head);
  }

  asio::awaitable<bool> write(std::string_view data) override {
    if (data.empty()) co_return !broken_;
    if (!chunked_) co_return co_await send(data);
    char size_hex[32];
    const int n = std::snprintf(size_hex, sizeof size_hex, "%zx\r\n", data.size());
    std::string chunk(size_hex, static_cast<std::size_t>(n));
    chunk.append(data).append("\r\n");
    co_return co_await send(chunk);
  }

  asio::awaitable<void> finish() override {
    if (!finished_) {
      finished_ = true;
      if (chunked_) co_await send("0\r\n\r\n");
    }
  }

  void reset() override {
    broken_ = true;
    beast::error_code ec;
    stream_.socket().set_option(asio::socket_base::linger(true, 0), ec);
    stream_.socket().close(ec);
  }

  asio::awaitable<bool> write_raw(std::string_view bytes) override {
    co_return co_await send(bytes);
  }

  bool started() const { return started_; }
  bool finished() const { return finished_; }
  bool broken() const { return broken_; }
  bool chunked() const { return chunked_; }

 private:
  asio::awaitable<bool> send(std::string_view bytes) {
    if (broken_) co_return false;
    stream_.expires_after(options_.write_timeout);
    auto [ec, n] =
        co_await asio::async_write(stream_, asio::buffer(bytes.data(), bytes.size()), use_nothrow);
    (void)n;
    if (ec) broken_ = true;
    co_return !broken_;
  }

  struct Watch {
    bool active = true;  // false once the handler returned (strand only)
    std::function<void()> on_closed;
  };
  // Waits until the socket is readable, then peeks: end of stream or an error means the peer
  // left; data means a pipelined request (the watch ends); nothing yet re-arms.
  static void arm(std::shared_ptr<Watch> watch, tcp::socket& socket) {
    socket.async_wait(tcp::socket::wait_read, [watch, &socket](beast::error_code ec) {
      if (!watch->active) return;  // the socket may be gone: touch nothing
      if (!ec) {
        char byte = 0;
        const ssize_t n =
            ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) return;  // a pipelined request: stop watching
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
          arm(watch, socket);
          return;
        }
      } else if (ec == asio::error::operation_aborted) {
        return;
      }
      watch->active = false;
      if (watch->on_closed) watch->on_closed();
    });
  }

  beast::tcp_stream& stream_;
  const HttpServerOptions& options_;
  const bool chunked_;
  std::shared_ptr<Watch> watch_;
  bool started_ = false;
  bool finished_ = false;
  bool broken_ = false;
};

asio::awaitable<void> HttpServer::Impl::accept_loop() {
  auto self = shared_from_this();
  while (!stopped) {
    auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(io), use_nothrow);
    if (ec) {
      if (stopped || ec == asio::error::operation_aborted) break;
      ++accept_errors;
      // Out of file descriptors or kernel memory: the pending connection stays in the backlog
      // and accept() would fail again at once. Keep serving the connections we have and try
      // again after a pause, instead of spinning a core. Other errors (a client that reset
      // before accept) concern one connection only: carry on at once.
      const int e = ec.value();
      if (e == EMFILE || e == ENFILE) ++fd_exhausted;
      if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
        asio::steady_timer pause(acceptor.get_executor(), options.accept_backoff);
        co_await pause.async_wait(use_nothrow);
      }
      continue;
    }
    asio::co_spawn(socket.get_executor(), session(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> HttpServer::Impl::session(tcp::socket socket) {
  auto self = shared_from_this();
  {
    // SSE events are small writes: without TCP_NODELAY, Nagle's algorithm holds them back for
    // milliseconds, which a client would measure as the server's latency.
    beast::error_code nodelay_ec;
    socket.set_option(tcp::no_delay(true), nodelay_ec);
  }
  auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
  auto receiving_since = std::make_shared<std::atomic<std::int64_t>>(steady_ns());
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mu);
    id = next_session_id++;
    sessions.emplace(id, SessionEntry{stream, receiving_since});
  }
  ++open_connections;
  struct Cleanup {
    Impl* impl;
    std::uint64_t id;
    ~Cleanup() {
      --impl->open_connections;
      std::lock_guard lock(impl->mu);
      impl->sessions.erase(id);
    }
  } cleanup{this, id};

  std::string remote;
  {
    beast::error_code ec;
    auto ep = stream->socket().remote_endpoint(ec);
    if (!ec) remote = ep.address().to_string();
  }
  std::size_t from_client = 0;
  {
    std::lock_guard lock(mu);
    from_client = ++per_client[remote];
  }
  struct ClientCount {
    Impl* impl;
    std::string remote;
    ~ClientCount() {
      std::lock_guard lock(impl->mu);
      if (--impl->per_client[remote] == 0) impl->per_client.erase(remote);
    }
  } client_count{this, remote};

  auto refuse = [&](const char* title) -> asio::awaitable<void> {
    HttpResponse busy = HttpResponse::json(503, std::string(R"({"title":")") + title + "\"}")
                            .with_header("Retry-After", "5");
    const std::string bytes = serialize(busy, false, options.server_header, false);
    stream->expires_after(options.write_timeout);
    co_await asio::async_write(*stream, asio::buffer(bytes), use_nothrow);
    beast::error_code ec;
    stream->socket().shutdown(tcp::socket::shutdown_both, ec);
  };
  // Over its address's share a connection is refused at once. Beyond max_connections it may
  // still carry one request while the reserve lasts, and must send it quickly: a request for a
  // reserved path (health, metrics) is served; any other takes the slot of the connection whose
  // request has been arriving longest (over slow_request_evict_after: slowloris), or gets 503.
  // Eviction waits for the new request to arrive whole, so a client that never finishes one
  // (an attacker reconnecting at once) never evicts anybody.
  const std::size_t open = open_connections;
  if (options.max_connections_per_client > 0 && from_client > options.max_connections_per_client) {
    ++rejected_per_client;
    co_await refuse("too many connections from this address");
    co_return;
  }
  bool reserve_only = open > options.max_connections;
  const bool evicting = options.slow_request_evict_after.count() > 0;
  if (reserve_only && ((options.reserved_paths.empty() && !evicting) ||
                       open > options.max_connections + options.reserved_connections)) {
    ++rejected_full;
    co_await refuse("too many connections");
    co_return;
  }

  beast::flat_buffer buffer;
  bool first = true;
  while (!stopped) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(options.max_body_bytes);
    parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
    // A new connection's first request must arrive whole within read_timeout of the accept (a
    // reserve connection's within min_idle_timeout: it holds a slot past the cap). Between
    // requests the wait for the next first byte is the load-dependent keep-alive timeout, and
    // from that byte the request must arrive whole within read_timeout, however slowly its
    // bytes trickle in (slowloris).
    if (first) {
      stream->expires_after(reserve_only ? std::min(options.min_idle_timeout, options.read_timeout)
                                         : options.read_timeout);
    } else if (buffer.size() == 0) {
      receiving_since->store(0);
      stream->expires_after(idle_timeout_now());
      auto [wait_ec, got] = co_await stream->async_read_some(buffer.prepare(4096), use_nothrow);
      buffer.commit(got);
      if (wait_ec) break;
      receiving_since->store(steady_ns());  // 0 until now: never claimed while idle
      stream->expires_after(options.read_timeout);
    } else {
      receiving_since->store(steady_ns());
      stream->expires_after(options.read_timeout);
    }
    first = false;
    auto [ec, n] = co_await http::async_read(*stream, buffer, parser, use_nothrow);
    (void)n;
    if (receiving_since->exchange(0) < 0) break;  // evicted to make room (slowloris): drop it
    if (ec) {
      int status = 0;
      if (ec == http::error::body_limit)
        status = 413;
      else if (ec == http::error::header_limit)
        status = 431;
      else if (ec != http::error::end_of_stream && ec != asio::error::eof &&
               ec != beast::error::timeout && ec != asio::error::operation_aborted &&
               ec != asio::error::connection_reset && ec != asio::error::bad_descriptor &&
               ec != http::error::partial_message)
        status = 400;
      if (status != 0) {
        const HttpResponse r =
            server_problem(status, status == 400 ? "malformed HTTP request"
                                                 : "request exceeds the configured limit");
        const std::string bytes = serialize(r, false, options.server_header, false);
        stream->expires_after(options.write_timeout);
        co_await asio::async_write(*stream, asio::buffer(bytes), use_nothrow);
      }
      break;
    }

    auto& msg = parser.get();
    HttpRequest req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    const auto q = req.target.find('?');
    req.path = req.target.substr(0, q);
    if (q != std::string::npos) req.query = req.target.substr(q + 1);
    for (const auto& field : msg) {
      req.headers.emplace_back(to_lower_ascii(field.name_string()), std::string(field.value()));
    }
    req.body = std::move(msg.body());
    req.remote_address = remote;

    const bool head_only = msg.method() == http::verb::head;
    const bool http10 = msg.version() < 11;
    if (auto refused = refuse_request(options, req, msg.version())) {
      // The framing may be wrong too: answer and close, never read on after it.
      const HttpResponse r = server_problem(refused->first, refused->second);
      const std::string bytes = serialize(r, false, options.server_header, head_only);
      stream->expires_after(options.write_timeout);
      co_await asio::async_write(*stream, asio::buffer(bytes), use_nothrow);
      break;
    }
    bool keep_alive = msg.keep_alive() && !reserve_only;
    if (reserve_only && !reserved(req.path)) {
      if (!evict_slowest_request(id)) {
        ++rejected_full;
        co_await refuse("too many connections");
        co_return;
      }
      reserve_only = false;  // it has the evicted connection's slot now
      keep_alive = msg.keep_alive();
    }

    StreamWriter writer(*stream, options, !http10);
    std::optional<HttpResponse> response;
    bool failed = false;
    try {
      response = co_await handler(req, writer);
    } catch (...) {
      failed = true;
    }
    if (writer.broken()) break;
    if (writer.started()) {
      if (!writer.finished()) co_await writer.finish();
      if (writer.broken() || !keep_alive || !writer.chunked()) break;
      continue;
    }
    if (failed || !response) {
      response = HttpResponse::text(
          500, R"({"type":"about:blank","title":"Internal Server Error","status":500})",
          "application/problem+json");
    }
    const bool keep = keep_alive && !stopped;
    std::string bytes = serialize(*response, keep, options.server_header, head_only);
    if (http10 && keep) {
      // An HTTP/1.0 client keeps the connection only when told so.
      bytes.insert(bytes.find("\r\n\r\n") + 2, "Connection: keep-alive\r\n");
    }
    stream->expires_after(options.write_timeout);
    auto [wec, wn] = co_await asio::async_write(*stream, asio::buffer(bytes), use_nothrow);
    (void)wn;
    if (wec || !keep) break;
  }
  beast::error_code ec;
  stream->socket().shutdown(tcp::socket::shutdown_send, ec);
  stream->socket().close(ec);
}

bool HttpServer::Impl::evict_slowest_request(std::uint64_t except) {
  if (options.slow_request_evict_after.count() <= 0) return false;
  const std::int64_t cutoff = steady_ns() - std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                options.slow_request_evict_after)
                                                .count();
  std::shared_ptr<beast::tcp_stream> victim;
  {
    std::lock_guard lock(mu);
    SessionEntry* slowest = nullptr;
    std::int64_t oldest = cutoff;
    for (auto& [sid, entry] : sessions) {
      if (sid == except) continue;
      const std::int64_t since = entry.receiving_since_ns->load();
      if (since <= 0 || since > oldest) continue;
      slowest = &entry;
      oldest = since;
    }
    // Claimed with a compare-and-swap: a request that completed meanwhile (its session swapped
    // the start for 0) is not evicted, and its handler runs; a claimed one (-1) is dropped by its
    // session even if its last byte arrived in the same instant.
    if (slowest && slowest->receiving_since_ns->compare_exchange_strong(oldest, -1))
      victim = slowest->stream.lock();
  }
  if (!victim) return false;
  ++evicted_slow;
  asio::post(victim->get_executor(), [victim] {
    beast::error_code ec;
    victim->socket().shutdown(tcp::socket::shutdown_both, ec);
    victim->socket().close(ec);
  });
  return true;
}

HttpServer::HttpServer(asio::io_context& io, HttpServerOptions options, Handler handler)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  beast::error_code ec;
  const auto address = asio::ip::make_address(impl_->options.address, ec);
  if (ec) throw std::runtime_error("invalid listen address '" + impl_->options.address + "'");
  const tcp::endpoint endpoint(address, impl_->options.port);
  auto& acc = impl_->acceptor;
  acc.open(endpoint.protocol(), ec);
  if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(endpoint, ec);
  if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("cannot listen on " + impl_->options.address + ":" +
                             std::to_string(impl_->options.port) + ": " + ec.message());
  }
  impl_->bound_port = acc.local_endpoint().port();
  asio::co_spawn(acc.get_executor(), impl_->accept_loop(), asio::detached);
}

std::uint16_t HttpServer::port() const { return impl_->bound_port; }

std::size_t HttpServer::connection_count() const { return impl_->open_connections; }

HttpServerStats HttpServer::stats() const {
  HttpServerStats s;
  s.rejected_full = impl_->rejected_full;
  s.rejected_per_client = impl_->rejected_per_client;
  s.fd_exhausted = impl_->fd_exhausted;
  s.accept_errors = impl_->accept_errors;
  s.evicted_slow = impl_->evicted_slow;
  return s;
}

void HttpServer::stop() {
  if (impl_->stopped.exchange(true)) return;
  auto impl = impl_;
  asio::post(impl->acceptor.get_executor(), [impl] {
    beast::error_code ec;
    impl->acceptor.close(ec);
  });
  std::lock_guard lock(impl->mu);
  for (auto& [id, entry] : impl->sessions) {
    if (auto s = entry.stream.lock()) {
      asio::post(s->get_executor(), [s] {
        beast::error_code ec;
        s->socket().shutdown(tcp::socket::shutdown_both, ec);
        s->socket().close(ec);
      });
    }
  }
}

}  // namespace llmcap::net
