#include "server/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace llmcap::server {

std::shared_ptr<spdlog::logger> server_log() {
  if (auto l = spdlog::get("server")) return l;
  return spdlog::default_logger();
}

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out;
}

namespace {

// Formats each record as one JSON object per line.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto t = std::chrono::system_clock::to_time_t(msg.time);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count() %
        1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char ts[96];
    std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms));
    const auto level = spdlog::level::to_string_view(msg.level);
    std::string line =
        std::string("{\"ts\":\"") + ts + "\",\"level\":\"" +
        std::string(level.data(), level.size()) + "\",\"logger\":\"" +
        json_escape(std::string_view(msg.logger_name.data(), msg.logger_name.size())) +
        "\",\"msg\":\"" + json_escape(std::string_view(msg.payload.data(), msg.payload.size())) +
        "\"}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

constexpr std::array<const char*, 5> kModules = {"server", "api", "agent", "sim", "storage"};

}  // namespace

std::string setup_logging(const LogOptions& options) {
  const auto level = spdlog::level::from_str(options.level);
  if (level == spdlog::level::off && options.level != "off") {
    return "log_level: unknown level '" + options.level +
           "' (use trace, debug, info, warn, error, critical, off)";
  }
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  if (options.json) {
    sink->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    sink->set_formatter(
        std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ [%n] %v"));
  }
  for (const char* name : kModules) {
    spdlog::drop(name);
    auto logger = std::make_shared<spdlog::logger>(name, sink);
    logger->set_level(level);
    spdlog::register_logger(logger);
  }
  auto def = std::make_shared<spdlog::logger>("llmcap", sink);
  def->set_level(level);
  spdlog::set_default_logger(def);
  return "";
}

}  // namespace llmcap::server
