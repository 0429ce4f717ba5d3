#include "server/engine/embedded_sims.h"

#include <nlohmann/json.hpp>

#include "sim/sim_options.h"
#include "sim/sim_server.h"

namespace llmcap::server {

EmbeddedSimulators::EmbeddedSimulators()
    : work_(std::make_unique<
            boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
          io_.get_executor())),
      thread_([this] { io_.run(); }) {}

EmbeddedSimulators::~EmbeddedSimulators() { stop(); }

bool EmbeddedSimulators::is_sim_url(const std::string& url) { return url.rfind("sim://", 0) == 0; }

void EmbeddedSimulators::stop() {
  {
    std::lock_guard lock(mu_);
    for (auto& [key, server] : servers_) server->stop();
  }
  work_.reset();
  if (thread_.joinable()) {
    // Give stopped connections a moment to unwind, then stop the loop.
    io_.stop();
    thread_.join();
  }
  std::lock_guard lock(mu_);
  servers_.clear();
}

EmbeddedSimulators::Options EmbeddedSimulators::sim_options_for(const std::string& sim_url,
                                                                const std::string& sim_options_json,
                                                                std::uint64_t seed) {
  Options out;
  if (!is_sim_url(sim_url)) {
    out.error = "not a sim:// URL: " + sim_url;
    return out;
  }
  const std::string rest = sim_url.substr(6);
  const auto slash = rest.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 >= rest.size()) {
    out.error = "expected sim://<hardware>/<model>, got " + sim_url;
    return out;
  }
  nlohmann::json opts;
  try {
    opts = nlohmann::json::parse(sim_options_json.empty() ? "{}" : sim_options_json);
  } catch (const nlohmann::json::exception& e) {
    out.error = std::string("sim options: ") + e.what();
    return out;
  }
  if (!opts.is_object()) opts = nlohmann::json::object();
  opts["hardware"] = rest.substr(0, slash);
  opts["model"] = rest.substr(slash + 1);
  if (!opts.contains("seed")) opts["seed"] = seed;
  opts["address"] = "127.0.0.1";
  opts["port"] = 0;
  out.key = opts.dump();
  auto parsed = sim::sim_options_from_json(out.key);
  if (!parsed.options) {
    out.error = parsed.error;
    return out;
  }
  out.options = std::move(parsed.options);
  return out;
}

EmbeddedSimulators::Resolved EmbeddedSimulators::resolve(const std::string& sim_url,
                                                         const std::string& sim_options_json,
                                                         std::uint64_t seed) {
  Resolved out;
  auto made = sim_options_for(sim_url, sim_options_json, seed);
  if (!made.options) {
    out.error = made.error;
    return out;
  }
  const std::string& key = made.key;  // one simulator per distinct set of options

  std::lock_guard lock(mu_);
  if (auto it = servers_.find(key); it != servers_.end()) {
    out.base_url = "http://127.0.0.1:" + std::to_string(it->second->port());
    out.description = descriptions_[key];
    const sim::SimServer* sim = it->second.get();
    out.clock_lost_ns = [sim] { return sim->clock_lost_ns(); };
    return out;
  }
  try {
    auto server = std::make_unique<sim::SimServer>(io_, *made.options);
    server->start();
    out.base_url = "http://127.0.0.1:" + std::to_string(server->port());
    out.description = server->describe();
    descriptions_[key] = out.description;
    const sim::SimServer* sim = server.get();
    out.clock_lost_ns = [sim] { return sim->clock_lost_ns(); };
    servers_.emplace(key, std::move(server));
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

}  // namespace llmcap::server
