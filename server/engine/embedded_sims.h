// EmbeddedSimulators: the simulated targets that live inside an llmcapd process, addressed by
// plans as `sim://<hardware>/<model>` (plus the target's `sim` options). Each distinct
// (hardware, model, options) gets one SimServer on a loopback port, started on first use and
// kept until the process ends, so the demo needs no extra processes.
//
// The simulators run on their own io_context and thread — never the API's or the load
// generator's — so simulated latency is not disturbed by either.
// Thread-safety: resolve() may be called from any thread (guarded by mu_).
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "sim/sim_options.h"

namespace llmcap::sim {
class SimServer;
}

namespace llmcap::server {

class EmbeddedSimulators {
 public:
  EmbeddedSimulators();
  ~EmbeddedSimulators();
  EmbeddedSimulators(const EmbeddedSimulators&) = delete;
  EmbeddedSimulators& operator=(const EmbeddedSimulators&) = delete;

  struct Resolved {
    std::string base_url;  // "http://127.0.0.1:<port>" when ok
    std::string error;     // why the simulator cannot start (numbers included), else empty
    std::string description;
    // Reads the simulator's lost wall-clock time (sim::SimServer::clock_lost_ns), ns; valid
    // until stop(). Empty when resolution failed.
    std::function<std::int64_t()> clock_lost_ns;
  };
  // sim_url: "sim://rtx4090-48g/llama-3.1-8b"; sim_options_json: the target's `sim` object as
  // JSON text ("{}" when absent); seed: the plan's seed (used unless the options set one).
  Resolved resolve(const std::string& sim_url, const std::string& sim_options_json,
                   std::uint64_t seed);
  // True for URLs of the sim:// scheme.
  static bool is_sim_url(const std::string& url);
  // The simulator's options for a target: the `sim` object, the URL's hardware and model, the
  // plan's seed unless the options set one, listening on 127.0.0.1 on any free port. On error,
  // `error` says why (a bad URL, or the option that is wrong).
  struct Options {
    std::optional<sim::SimOptions> options;
    std::string key;  // the options as canonical JSON: equal keys, equal simulators
    std::string error;
  };
  static Options sim_options_for(const std::string& sim_url, const std::string& sim_options_json,
                                 std::uint64_t seed);
  void stop();

 private:
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<sim::SimServer>> servers_;  // GUARDED_BY(mu_)
  std::map<std::string, std::string> descriptions_;                 // GUARDED_BY(mu_)
};

}  // namespace llmcap::server
