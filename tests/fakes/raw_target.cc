#include "tests/fakes/raw_target.h"

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

namespace llmcap::fakes {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

namespace {

constexpr auto use_nothrow = asio::as_tuple(asio::use_awaitable);
constexpr auto kOpTimeout = std::chrono::seconds(10);
constexpr std::size_t kMaxRequestBytes = 1024 * 1024;
constexpr std::size_t kFillerWriteBytes = 64 * 1024;

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// Content-Length of a request head (0 when absent or unreadable).
std::size_t content_length(const std::string& head) {
  const std::string h = lower(head);
  const auto at = h.find("\r\ncontent-length:");
  if (at == std::string::npos) return 0;
  std::size_t pos = at + 17;
  while (pos < h.size() && h[pos] == ' ') ++pos;
  std::size_t n = 0;
  while (pos < h.size() && h[pos] >= '0' && h[pos] <= '9') {
    n = n * 10 + static_cast<std::size_t>(h[pos] - '0');
    if (n > kMaxRequestBytes) return kMaxRequestBytes;
    ++pos;
  }
  return n;
}

}  // namespace

struct RawTarget::Impl : std::enable_shared_from_this<RawTarget::Impl> {
  explicit Impl(std::vector<RawReply> c) : cycle(std::move(c)) {
    if (cycle.empty()) cycle.emplace_back();
  }

  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;
  std::vector<RawReply> cycle;  // immutable after construction

  mutable std::mutex mu;
  std::vector<RawServed> served;  // GUARDED_BY(mu)

  asio::awaitable<void> accept_loop() {
    auto self = shared_from_this();
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(use_nothrow);
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        continue;
      }
      asio::co_spawn(io, session(std::move(socket)), asio::detached);
    }
  }

  // Writes bytes (one per write when interval_us > 0); false when the client went away.
  asio::awaitable<bool> put(beast::tcp_stream& s, std::string_view bytes, std::int64_t interval_us,
                            std::size_t slot) {
    const std::size_t step = interval_us > 0 ? 1 : std::max<std::size_t>(bytes.size(), 1);
    asio::steady_timer pause(io);
    for (std::size_t pos = 0; pos < bytes.size(); pos += step) {
      if (interval_us > 0 && pos > 0) {
        pause.expires_after(std::chrono::microseconds(interval_us));
        co_await pause.async_wait(use_nothrow);
      }
      const std::size_t n = std::min(step, bytes.size() - pos);
      s.expires_after(kOpTimeout);
      auto [ec, written] =
          co_await asio::async_write(s, asio::buffer(bytes.data() + pos, n), use_nothrow);
      {
        std::lock_guard lock(mu);
        served[slot].bytes_written += written;
      }
      if (ec) co_return false;
    }
    co_return true;
  }

  asio::awaitable<void> session(tcp::socket socket) {
    auto self = shared_from_this();
    beast::error_code opt_ec;
    socket.set_option(tcp::no_delay(true), opt_ec);
    beast::tcp_stream s(std::move(socket));
    std::string buf;
    s.expires_after(kOpTimeout);
    auto [ec, head_n] = co_await asio::async_read_until(
        s, asio::dynamic_buffer(buf, kMaxRequestBytes), "\r\n\r\n", use_nothrow);
    if (ec) co_return;
    const std::string head = buf.substr(0, head_n);
    const std::size_t want = content_length(head);
    if (buf.size() - head_n < want) {
      std::string rest(want - (buf.size() - head_n), '\0');
      s.expires_after(kOpTimeout);
      auto [rec, rn] = co_await asio::async_read(s, asio::buffer(rest), use_nothrow);
      (void)rn;
      if (rec) co_return;
    }
    std::size_t slot = 0;
    RawReply reply;
    {
      std::lock_guard lock(mu);
      slot = served.size();
      reply = cycle[slot % cycle.size()];
      served.push_back(RawServed{head.substr(0, head.find("\r\n")), 0, false});
    }
    bool ok = co_await put(s, reply.head, reply.byte_interval_us, slot);
    if (ok && reply.filler_bytes > 0) {
      const std::string filler(kFillerWriteBytes, 'x');
      for (std::uint64_t left = reply.filler_bytes; ok && left > 0;) {
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(left, filler.size()));
        ok = co_await put(s, std::string_view(filler).substr(0, n), 0, slot);
        left -= n;
      }
    }
    if (ok) ok = co_await put(s, reply.tail, reply.byte_interval_us, slot);
    if (!ok) {
      std::lock_guard lock(mu);
      served[slot].write_failed = true;
    }
    if (ok && reply.hold_open_ms > 0) {
      // A server that keeps the connection open after its answer (e.g. after [DONE]). The
      // socket is handed to a plain timer handler that holds nothing of Impl, and the session
      // ends: a coroutine suspended here (holding `self`) when the fake is destroyed would keep
      // Impl, its io_context and itself alive — a leak under LeakSanitizer.
      auto held = std::make_shared<beast::tcp_stream>(std::move(s));
      auto hold =
          std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(reply.hold_open_ms));
      hold->async_wait([held, hold](const beast::error_code&) {
        beast::error_code ec;
        held->socket().shutdown(tcp::socket::shutdown_send, ec);
        held->socket().close(ec);
      });
      co_return;
    }
    beast::error_code close_ec;
    if (reply.reset) {
      s.socket().set_option(asio::socket_base::linger(true, 0), close_ec);
    } else {
      s.socket().shutdown(tcp::socket::shutdown_send, close_ec);
      // Let the client read to the FIN before the socket goes (closing with unread request
      // bytes would send a reset instead).
      std::array<char, 4096> sink{};
      s.expires_after(std::chrono::seconds(2));
      for (;;) {
        auto [rec, rn] = co_await s.async_read_some(asio::buffer(sink), use_nothrow);
        (void)rn;
        if (rec) break;
      }
    }
    s.socket().close(close_ec);
  }
};

RawTarget::RawTarget(std::vector<RawReply> cycle)
    : impl_(std::make_shared<Impl>(std::move(cycle))) {
  const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(ep.protocol());
  impl_->acceptor.set_option(asio::socket_base::reuse_address(true));
  impl_->acceptor.bind(ep);
  impl_->acceptor.listen();
  asio::co_spawn(impl_->io, impl_->accept_loop(), asio::detached);
  impl_->thread = std::thread([impl = impl_] {
    auto guard = asio::make_work_guard(impl->io);
    impl->io.run();
  });
}

RawTarget::~RawTarget() {
  asio::post(impl_->io, [impl = impl_] {
    beast::error_code ec;
    impl->acceptor.close(ec);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  impl_->io.stop();
  impl_->thread.join();
}

std::uint16_t RawTarget::port() const { return impl_->acceptor.local_endpoint().port(); }

std::string RawTarget::base_url() const { return "http://127.0.0.1:" + std::to_string(port()); }

std::vector<RawServed> RawTarget::served() const {
  std::lock_guard lock(impl_->mu);
  return impl_->served;
}

std::string RawTarget::sse_events(int tokens, bool done) {
  std::string s;
  for (int i = 0; i < tokens; ++i) {
    const char* finish = i == tokens - 1 ? "\"length\"" : "null";
    s += std::string(
             "data: {\"id\":\"cmpl-raw\",\"object\":\"text_completion\",\"choices\":"
             "[{\"index\":0,\"text\":\" tok\",\"finish_reason\":") +
         finish + "}]}\n\n";
  }
  s += "data: {\"id\":\"cmpl-raw\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,"
       "\"completion_tokens\":" +
       std::to_string(tokens) + ",\"total_tokens\":" + std::to_string(10 + tokens) + "}}\n\n";
  if (done) s += "data: [DONE]\n\n";
  return s;
}

std::string RawTarget::chunked(const std::string& body) {
  std::string out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t end = body.find("\n\n", pos);
    end = end == std::string::npos ? body.size() : end + 2;
    char size_hex[32];
    const int n = std::snprintf(size_hex, sizeof size_hex, "%zx\r\n", end - pos);
    out.append(size_hex, static_cast<std::size_t>(n)).append(body, pos, end - pos).append("\r\n");
    pos = end;
  }
  out += "0\r\n\r\n";
  return out;
}

RawReply RawTarget::ok_chunked(int tokens) {
  RawReply r;
  r.head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
      "Connection: close\r\n\r\n" +
      chunked(sse_events(tokens));
  return r;
}

}  // namespace llmcap::fakes
