#include "server/engine/target_probe.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cmath>
#include <exception>
#include <nlohmann/json.hpp>

#include "agent/endpoint.h"
#include "agent/http_client.h"
#include "net/address_filter.h"

namespace llmcap::server {

using nlohmann::json;

std::optional<SimulatorIdentity> simulator_identity(std::string_view models_body) {
  const json doc = json::parse(models_body, nullptr, false);
  if (!doc.is_object() || !doc.contains("data") || !doc["data"].is_array() || doc["data"].empty())
    return std::nullopt;
  const json& entry = doc["data"][0];
  if (!entry.is_object() || !entry.contains("metadata") || !entry["metadata"].is_object())
    return std::nullopt;
  const json& meta = entry["metadata"];
  if (!meta.contains("simulated") || meta["simulated"] != true) return std::nullopt;
  SimulatorIdentity id;
  if (meta.contains("time_scale") && meta["time_scale"].is_number()) {
    const double k = meta["time_scale"].get<double>();
    if (k > 0 && std::isfinite(k)) id.time_scale = k;
  }
  if (meta.contains("hardware") && meta["hardware"].is_string())
    id.hardware = meta["hardware"].get<std::string>();
  if (meta.contains("model") && meta["model"].is_string())
    id.model = meta["model"].get<std::string>();
  return id;
}

std::optional<SimulatorIdentity> probe_simulator(const agent::TargetSpec& target,
                                                 std::int64_t timeout_ms) {
  const auto endpoint = agent::parse_endpoint(target.base_url);
  if (!endpoint) return std::nullopt;
  boost::asio::io_context io;
  agent::HttpClientOptions options;
  options.tls = target.tls;
  options.connect_timeout_ns = timeout_ms * 1'000'000;
  options.allowed = net::AddressFilter(target.address_allowlist);
  agent::OutgoingRequest request;
  request.method = "GET";
  request.path = "/v1/models";
  request.accept = "application/json";
  request.headers = target.headers;
  agent::FetchResult result;
  try {
    agent::HttpClient client(io, *endpoint, options);
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          result = co_await client.fetch(request, timeout_ms * 1'000'000, 1 << 20);
        },
        boost::asio::detached);
    io.run();
  } catch (const std::exception&) {  // a CA file OpenSSL cannot read: the steps will say so
    return std::nullopt;
  }
  if (result.exchange.error != analysis::ErrorClass::kNone || result.exchange.http_status != 200)
    return std::nullopt;
  return simulator_identity(result.body);
}

}  // namespace llmcap::server
