#include "agent/telemetry_scraper.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <thread>

#include "agent/endpoint.h"
#include "agent/http_client.h"
#include "agent/prometheus_text.h"
#include "net/use_nothrow.h"

namespace llmcap::agent {
namespace {

namespace asio = boost::asio;
using net::use_nothrow;

struct MetricsLocation {
  Endpoint endpoint;
  std::string path;  // path + query sent in the request line
};

// Splits a metrics URL into the endpoint (scheme/host/port) and the request target, which may
// carry a query (e.g. DCGM exporters behind a proxy: /federate?match[]=...).
Expected<MetricsLocation> parse_metrics_url(const std::string& url) {
  if (url.empty()) return Expected<MetricsLocation>::failure("metrics_url: is empty");
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed) {
    return Expected<MetricsLocation>::failure("metrics_url: '" + url +
                                              "' is not a URL: " + parsed.error().message());
  }
  const boost::urls::url_view u = *parsed;
  if (u.has_fragment()) {
    return Expected<MetricsLocation>::failure("metrics_url: must not have a fragment");
  }
  const std::string base = std::string(u.scheme()) + "://" + std::string(u.encoded_authority());
  auto endpoint = parse_endpoint(base);
  if (!endpoint) return Expected<MetricsLocation>::failure("metrics_url: " + endpoint.error());
  MetricsLocation loc{std::move(endpoint).value(), std::string(u.encoded_path())};
  if (loc.path.empty()) loc.path = "/metrics";
  if (u.has_query()) loc.path += "?" + std::string(u.encoded_query());
  return loc;
}

std::string seconds_text(std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1e9);
  return buf;
}

}  // namespace

struct TelemetryScraper::Impl {
  explicit Impl(TelemetryScraperOptions o)
      : options(std::move(o)), accumulator(options.accumulator) {}

  // ---- owner side ----
  TelemetryScraperOptions options;
  std::thread thread;
  bool started = false;

  // ---- scrape-thread side (owner reads them only after join) ----
  asio::io_context io;
  std::optional<asio::steady_timer> timer;
  std::unique_ptr<HttpClient> client;
  MetricsLocation location;
  std::int64_t epoch_ns = 0;
  bool stopping = false;  // set on the io thread (posted by stop())
  bool scrape_in_flight = false;
  TelemetryAccumulator accumulator;
  std::vector<std::string> errors;
  std::size_t errors_dropped = 0;
  std::string last_error_kind;  // consecutive identical failures are folded
  std::size_t last_error_repeats = 0;

  void note_error(std::int64_t t_abs_ns, const std::string& kind) {
    if (kind == last_error_kind) {
      ++last_error_repeats;
      return;
    }
    flush_repeats();
    last_error_kind = kind;
    push_error("t=" + seconds_text(t_abs_ns - epoch_ns) + "s: " + kind);
  }
  void note_success() {
    flush_repeats();
    last_error_kind.clear();
  }
  void flush_repeats() {
    if (last_error_repeats > 0) {
      push_error("(previous error repeated " + std::to_string(last_error_repeats) + " more times)");
    }
    last_error_repeats = 0;
  }
  void push_error(std::string e) {
    if (errors.size() < options.max_errors) {
      errors.push_back(std::move(e));
    } else {
      ++errors_dropped;
    }
  }

  asio::awaitable<void> scrape_once() {
    scrape_in_flight = true;
    OutgoingRequest req;
    req.method = "GET";
    req.path = location.path;
    req.accept = "text/plain;version=0.0.4;q=1,*/*;q=0.1";
    const std::int64_t t_start = HttpClient::now_ns();
    const std::string where = "GET " + options.metrics_url + ": ";
    FetchResult r = co_await client->fetch(req, options.timeout_ns, options.max_body_bytes);
    scrape_in_flight = false;
    if (r.exchange.error != analysis::ErrorClass::kNone) {
      accumulator.add_failure();
      const std::string msg = r.exchange.error_message.empty()
                                  ? std::string(analysis::to_string(r.exchange.error))
                                  : r.exchange.error_message;
      note_error(t_start, where + std::string(analysis::to_string(r.exchange.error)) + ": " + msg);
      co_return;
    }
    if (r.exchange.http_status != 200) {
      accumulator.add_failure();
      note_error(t_start, where + "HTTP " + std::to_string(r.exchange.http_status));
      co_return;
    }
    const ParsedExposition parsed = parse_prometheus_text(r.body);
    const std::int64_t t_ns =
        (r.exchange.t_headers_ns >= 0 ? r.exchange.t_headers_ns : t_start) - epoch_ns;
    accumulator.add_scrape(t_ns, parsed);
    if (parsed.error_count > 0) {
      // The readable lines were used; report the first unreadable one.
      note_error(t_start, where + std::to_string(parsed.error_count) +
                              " unreadable line(s), first: line " +
                              std::to_string(parsed.errors.front().line) + ": " +
                              parsed.errors.front().message);
    } else {
      note_success();
    }
  }

  asio::awaitable<void> loop() {
    const std::int64_t interval = std::max<std::int64_t>(options.interval_ns, 1'000'000);
    std::int64_t next = HttpClient::now_ns();
    while (true) {
      co_await scrape_once();
      if (stopping) break;
      const std::int64_t now = HttpClient::now_ns();
      next += interval;
      if (next <= now) next += ((now - next) / interval + 1) * interval;  // skip missed ticks
      timer->expires_at(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(next)));
      co_await timer->async_wait(use_nothrow);
      if (stopping) {
        if (options.final_scrape_on_stop) co_await scrape_once();
        break;
      }
    }
    client->close_idle();
  }
};

TelemetryScraper::TelemetryScraper(TelemetryScraperOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

TelemetryScraper::~TelemetryScraper() {
  if (impl_->thread.joinable()) stop();
}

void TelemetryScraper::start(std::int64_t epoch_steady_ns) {
  Impl& im = *impl_;
  if (im.started) return;
  im.started = true;
  im.epoch_ns = epoch_steady_ns;
  auto loc = parse_metrics_url(im.options.metrics_url);
  if (!loc) {
    im.errors.push_back(loc.error());
    return;
  }
  im.location = std::move(loc).value();
  try {
    HttpClientOptions http;
    http.tls = im.options.tls;
    http.connect_timeout_ns = im.options.timeout_ns;
    http.max_idle_connections = 1;
    http.user_agent = "llmcap-telemetry";
    http.allowed = net::AddressFilter(im.options.address_allowlist);
    im.client = std::make_unique<HttpClient>(im.io, im.location.endpoint, http);
  } catch (const std::exception& e) {
    im.errors.push_back("metrics_url: TLS setup failed: " + std::string(e.what()));
    return;
  }
  im.timer.emplace(im.io);
  asio::co_spawn(im.io, im.loop(), [&im](std::exception_ptr ep) {
    if (!ep) return;
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      im.push_error(std::string("telemetry scraper stopped: ") + e.what());
    }
  });
  im.thread = std::thread([&im] { im.io.run(); });
}

TelemetryResult TelemetryScraper::stop() {
  Impl& im = *impl_;
  if (im.thread.joinable()) {
    asio::post(im.io, [&im] {
      im.stopping = true;
      if (!im.scrape_in_flight) im.timer->cancel();
    });
    im.thread.join();
  }
  im.flush_repeats();
  TelemetryResult result;
  result.points = im.accumulator.take_points();
  result.summary = im.accumulator.summary();
  result.errors = std::move(im.errors);
  if (im.errors_dropped > 0) {
    result.errors.push_back("(" + std::to_string(im.errors_dropped) + " more errors not kept)");
  }
  im.errors.clear();
  im.errors_dropped = 0;
  return result;
}

}  // namespace llmcap::agent
