// Talks raw HTTP to HttpServer over loopback sockets (blocking client in the test thread).
#include "net/http_server.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <thread>

namespace llmcap::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class ServerFixture : public ::testing::Test {
 protected:
  void start(HttpServerOptions options, Handler handler) {
    server_ = std::make_unique<HttpServer>(io_, std::move(options), std::move(handler));
    server_->start();
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    work_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }
  // Sends raw bytes, reads until the server closes or `until` appears.
  std::string exchange(const std::string& bytes, const std::string& until = "") {
    asio::io_context client_io;
    tcp::socket s(client_io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
    asio::write(s, asio::buffer(bytes));
    std::string out;
    char buf[4096];
    for (;;) {
      boost::system::error_code ec;
      const auto n = s.read_some(asio::buffer(buf), ec);
      out.append(buf, n);
      if (ec) break;
      if (!until.empty() && out.find(until) != std::string::npos) break;
    }
    return out;
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

Handler echo_handler() {
  return [](HttpRequest& req, ResponseStream&) -> asio::awaitable<std::optional<HttpResponse>> {
    co_return HttpResponse::text(
        200, req.method + " " + req.path + " q=" + req.query + " body=" + req.body);
  };
}

TEST_F(ServerFixture, ServesRequestsWithKeepAlive) {
  start({}, echo_handler());
  const std::string two =
      "GET /a?x=1 HTTP/1.1\r\nHost: t\r\n\r\n"
      "POST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc";
  const std::string out = exchange(two);
  EXPECT_NE(out.find("GET /a q=x=1 body="), std::string::npos) << out;
  EXPECT_NE(out.find("POST /b q= body=abc"), std::string::npos) << out;
  EXPECT_NE(out.find("Connection: close"), std::string::npos);
}

TEST_F(ServerFixture, OversizedBodyGets413) {
  HttpServerOptions o;
  o.max_body_bytes = 10;
  start(o, echo_handler());
  const std::string out = exchange("POST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n" +
                                   std::string(100, 'x'));
  EXPECT_EQ(out.rfind("HTTP/1.1 413", 0), 0u) << out;
  EXPECT_NE(out.find("application/problem+json"), std::string::npos);
}

TEST_F(ServerFixture, OversizedHeadersGet431) {
  HttpServerOptions o;
  o.max_header_bytes = 256;
  start(o, echo_handler());
  const std::string out =
      exchange("GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(1000, 'y') + "\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 431", 0), 0u) << out;
}

TEST_F(ServerFixture, MalformedRequestGets400) {
  start({}, echo_handler());
  const std::string out = exchange("NOT HTTP AT ALL\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 400", 0), 0u) << out;
}

TEST_F(ServerFixture, SlowHeadersAreCutOffByReadTimeout) {
  HttpServerOptions o;
  o.read_timeout = std::chrono::milliseconds(200);
  start(o, echo_handler());
  const auto t0 = std::chrono::steady_clock::now();
  const std::string out = exchange("GET / HTTP/1.1\r\nHost: t\r\n");  // never finished
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(out.empty()) << out;
  EXPECT_LT(waited, std::chrono::seconds(5));
}

TEST_F(ServerFixture, HandlerExceptionBecomes500WithoutInternals) {
  start({}, [](HttpRequest&, ResponseStream&) -> asio::awaitable<std::optional<HttpResponse>> {
    throw std::runtime_error("secret internal detail");
    co_return std::nullopt;
  });
  const std::string out = exchange("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 500", 0), 0u) << out;
  EXPECT_EQ(out.find("secret"), std::string::npos);
}

asio::awaitable<std::optional<HttpResponse>> stream_three(HttpRequest&, ResponseStream& s) {
  HeaderList headers;
  headers.emplace_back("Content-Type", "text/event-stream");
  co_await s.start(200, std::move(headers));
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (int i = 0; i < 3; ++i) {
    const std::string event = "data: " + std::to_string(i) + "\n\n";
    co_await s.write(event);
    timer.expires_after(std::chrono::milliseconds(5));
    co_await timer.async_wait(asio::use_awaitable);
  }
  co_await s.finish();
  co_return std::nullopt;
}

TEST_F(ServerFixture, StreamsChunkedEvents) {
  start({}, &stream_three);
  const std::string out =
      exchange("GET /s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", "0\r\n\r\n");
  EXPECT_NE(out.find("Transfer-Encoding: chunked"), std::string::npos) << out;
  EXPECT_NE(out.find("9\r\ndata: 0\n\n\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("9\r\ndata: 2\n\n\r\n0\r\n\r\n"), std::string::npos) << out;
}

TEST_F(ServerFixture, ConnectionLimitAnswers503) {
  HttpServerOptions o;
  o.max_connections = 1;
  start(o, echo_handler());
  asio::io_context client_io;
  tcp::socket held(client_io);
  held.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
  // Make sure the first connection is registered before the second arrives.
  for (int i = 0; i < 100 && server_->connection_count() < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const std::string out = exchange("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 503", 0), 0u) << out;
}

}  // namespace
}  // namespace llmcap::net
