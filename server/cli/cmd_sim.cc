// `llmcapd sim`: runs one simulated GPU inference server (sim/) in the foreground.
#include <boost/asio/signal_set.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

#include "server/cli/command_line.h"
#include "server/cli/commands.h"
#include "server/cli/exit_codes.h"
#include "server/logging.h"
#include "server/settings.h"
#include "server/text_file.h"
#include "sim/profile_catalog.h"
#include "sim/sim_options.h"
#include "sim/sim_server.h"

namespace llmcap::server {

namespace {

void bind_sim(Settings& s, sim::SimOptions& o, std::int64_t& seed) {
  s.add("hardware", "GPU profile (see --list)", &o.hardware);
  s.add("model", "model profile (see --list); also the served model name", &o.model);
  s.add("served_model_name",
        "the model name requests must carry and /v1/models lists, instead of the profile name "
        "(as vLLM's --served-model-name)",
        &o.served_model_name);
  s.add("dtype", "weight dtype: bf16, fp16, fp8, int8, int4", &o.dtype);
  s.add("kv_cache_dtype", "auto (16-bit) or fp8", &o.kv_cache_dtype);
  s.add("profiles_file", "extra hardware/model profiles (JSON)", &o.profiles_file);
  s.add("address", "listen address", &o.address);
  s.add("port", "listen port (0 = any free port)", &o.port);
  s.add("seed", "seed of generated text and fault decisions", &seed);
  s.add("time_scale", "run simulated time this many times faster", &o.time_scale);
  s.add("gpu_memory_utilization", "fraction of GPU memory the engine uses",
        &o.gpu_memory_utilization);
  s.add("max_num_seqs", "running-batch cap", &o.max_num_seqs);
  s.add("max_num_batched_tokens", "token budget per engine step (chunked prefill)",
        &o.max_num_batched_tokens);
  s.add("max_model_len", "longest sequence accepted (0 = model maximum)", &o.max_model_len);
  s.add("tokens_per_event", "tokens carried by each SSE event", &o.tokens_per_event);
  s.add("fault_error_rate", "fraction of requests answered 500", &o.faults.error_rate);
  s.add("fault_429_rate", "fraction of requests answered 429", &o.faults.rate_limit_rate);
  s.add("fault_stall_rate", "fraction of streams that stall", &o.faults.stall_rate);
  s.add("fault_stall_after_tokens", "tokens before a stall", &o.faults.stall_after_tokens);
  s.add("fault_reset_rate", "fraction of streams reset mid-stream", &o.faults.reset_rate);
  s.add("fault_malformed_rate", "fraction of streams with a malformed chunk",
        &o.faults.malformed_rate);
  s.add("fault_slow_headers_rate", "fraction of requests with delayed headers",
        &o.faults.slow_headers_rate);
  s.add("fault_slow_headers_ms", "delay of slow headers", &o.faults.slow_headers_ms);
}

}  // namespace

int cmd_sim(const std::vector<std::string>& args) {
  if (!args.empty() && args.front() == "calibrate")
    return cmd_sim_calibrate({args.begin() + 1, args.end()});
  sim::SimOptions options;
  std::string config_path;
  bool list = false;
  bool help = false;
  LogOptions log;
  // First pass: find --config so the file applies before the other flags.
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--config") config_path = args[i + 1];
  }
  for (const auto& a : args) {
    if (a.rfind("--config=", 0) == 0) config_path = a.substr(9);
  }
  if (!config_path.empty()) {
    const auto text = read_text_file(config_path);
    if (!text) {
      std::cerr << "llmcapd sim: cannot read config file '" << config_path << "'\n";
      return kExitUsage;
    }
    auto parsed = sim::sim_options_from_json(*text);
    if (!parsed.options) {
      std::cerr << "llmcapd sim: " << config_path << ": " << parsed.error << "\n";
      return kExitUsage;
    }
    options = *parsed.options;
  }
  std::int64_t seed = static_cast<std::int64_t>(options.seed);
  Settings s("");
  bind_sim(s, options, seed);
  s.add("config", "JSON file of simulator options (same keys; flags override it)", &config_path);
  s.add("list", "print the known hardware and model profiles and exit", &list);
  s.add("log_level", "trace|debug|info|warn|error|critical|off", &log.level);
  s.add("log_json", "write logs as JSON lines", &log.json);
  s.add("help", "show this help", &help);
  std::vector<std::string> positional;
  const CommandLine cl{
      "sim",
      "Usage: llmcapd sim [flags]\n       llmcapd sim calibrate RESULTS.json --out PROFILE.json "
      "(see llmcapd sim calibrate --help)\n\nA simulated OpenAI-compatible inference server "
      "(roofline + continuous batching model of a GPU)."};
  if (auto rc = parse_command_line(cl, s, args, help, positional)) return *rc;
  if (seed < 0) {
    std::cerr << "llmcapd sim: seed: must not be negative\n";
    return kExitUsage;
  }
  options.seed = static_cast<std::uint64_t>(seed);
  if (auto err = setup_logging(log); !err.empty()) {
    std::cerr << "llmcapd sim: " << err << "\n";
    return kExitUsage;
  }
  if (list) {
    auto catalog = sim::ProfileCatalog::builtin();
    if (!options.profiles_file.empty()) {
      if (auto err = catalog.add_file(options.profiles_file)) {
        std::cerr << "llmcapd sim: " << *err << "\n";
        return kExitUsage;
      }
    }
    std::cout << catalog.listing();
    return kExitOk;
  }

  boost::asio::io_context io;
  std::unique_ptr<sim::SimServer> server;
  try {
    server = std::make_unique<sim::SimServer>(io, options);
    server->start();
  } catch (const std::exception& e) {
    // Listening failures are runtime errors; everything else (unknown profile, model does not
    // fit, bad option) is a configuration error.
    const std::string what = e.what();
    std::cerr << "llmcapd sim: " << what << "\n";
    return what.find("cannot listen") != std::string::npos ? kExitRuntime : kExitUsage;
  }
  std::cout << server->describe() << "\nlistening on http://" << options.address << ":"
            << server->port() << "\n"
            << std::flush;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    server->stop();
    io.stop();
  });
  io.run();
  return kExitOk;
}

}  // namespace llmcap::server
