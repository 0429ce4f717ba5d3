// TelemetryScraper: scrapes a target's Prometheus endpoint (its plan `metrics_url`) at a fixed
// interval during one step, on its own thread and io_context, and returns the points of the
// series that matter for known engines plus a step summary (TelemetryAccumulator does the
// bookkeeping; see telemetry_accumulator.h for the series and the aggregation rules).
//
// Scraping never fails a step: an unreachable endpoint, a timeout, an HTTP error status or an
// unreadable document is recorded in TelemetryResult::errors (bounded, consecutive repeats
// folded) and counted in summary.scrapes_failed; the scraper keeps trying at the next tick.
// Each scrape is one HTTP GET through agent::HttpClient (keep-alive, http or https) with one
// overall deadline (timeout_ns) and a body size limit (max_body_bytes).
//
// Timing: the first scrape starts at start(); the next ones on an absolute grid
// start + k*interval (ticks missed behind a slow scrape are skipped, not bunched). A point's
// t_ns is when the response headers arrived, minus the epoch given to start() — the same
// steady_clock epoch as the step's request samples.
//
// Thread-safety contract: start() and stop() are called by the owner, in that order, at most
// once each, never concurrently (from the same or different threads). stop() signals the scrape
// thread, which performs one final scrape (so the histogram delta covers the whole step) unless
// a scrape was in flight when stop() arrived, then joins; it blocks for at most about
// 2 × timeout_ns. stop() without start() returns an empty result; the destructor stops a
// running scraper and discards its result. Nothing else is shared with the scrape thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/telemetry_accumulator.h"
#include "agent/tls_options.h"

namespace llmcap::agent {

struct TelemetryScraperOptions {
  // http[s]://host[:port]/path[?query]; an empty path means "/metrics".
  std::string metrics_url;
  std::int64_t interval_ns = 1'000'000'000;       // scrape period (daemon: telemetry_interval_s)
  std::int64_t timeout_ns = 2'000'000'000;        // per scrape: connect + whole response
  std::size_t max_body_bytes = 16 * 1024 * 1024;  // larger documents are a scrape error
  bool final_scrape_on_stop = true;               // see the file comment
  std::size_t max_errors = 20;                    // error messages kept (then one summary line)
  TlsOptions tls;                                 // for https:// endpoints
  std::vector<std::string> address_allowlist;     // as TargetSpec's (empty: any address)
  TelemetryAccumulatorOptions accumulator;        // point bound, histogram buckets
};

struct TelemetryResult {
  std::vector<TelemetryPoint> points;  // in scrape order
  TelemetrySummary summary;
  std::vector<std::string> errors;  // human-readable, each naming the time and the URL
};

class TelemetryScraper {
 public:
  explicit TelemetryScraper(TelemetryScraperOptions options);
  ~TelemetryScraper();
  TelemetryScraper(const TelemetryScraper&) = delete;
  TelemetryScraper& operator=(const TelemetryScraper&) = delete;

  // Starts scraping; epoch_steady_ns is the step's steady_clock epoch (ns since the clock's
  // epoch). An invalid metrics_url or TLS setup does not throw: no thread starts and stop()
  // returns the reason in errors.
  void start(std::int64_t epoch_steady_ns);
  // Stops (see the contract above) and returns everything collected.
  TelemetryResult stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmcap::agent
