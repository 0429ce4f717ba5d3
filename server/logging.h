// Logging set-up: one named spdlog logger per module ("server", "api", "agent", "sim",
// "storage"), all writing to stderr through one sink, either as human-readable lines or as
// JSON lines for log shippers. Modules fetch their logger with spdlog::get("<module>") and fall
// back to the default logger when the daemon did not set one up (tests).
// Call setup_logging() once at start-up, before other threads start.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace spdlog {
class logger;
}

namespace llmcap::server {

struct LogOptions {
  std::string level = "info";  // trace, debug, info, warn, error, critical, off
  bool json = false;           // JSON lines ({"ts","level","logger","msg"}) instead of text
};

// Returns "" or an error naming the bad level.
std::string setup_logging(const LogOptions& options);

// The "server" logger, or the default logger when setup_logging() did not run (tests).
std::shared_ptr<spdlog::logger> server_log();

// Escapes a string for inclusion in a JSON string literal (no quotes added).
std::string json_escape(std::string_view s);

}  // namespace llmcap::server
