#include "bench/bench_support.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace llmcap::bench {

BenchFlags::BenchFlags(int argc, char** argv) : program_(argc > 0 ? argv[0] : "bench") {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || a.find('=') == std::string::npos) {
      std::cerr << program_ << ": argument '" << a << "' is not --name=value\n";
      std::exit(2);
    }
    const auto eq = a.find('=');
    given_[a.substr(2, eq - 2)] = a.substr(eq + 1);
  }
}

double BenchFlags::number(const std::string& name, double fallback) {
  known_.push_back(name);
  const auto it = given_.find(name);
  if (it == given_.end()) return fallback;
  used_[name] = true;
  try {
    std::size_t n = 0;
    const double v = std::stod(it->second, &n);
    if (n != it->second.size()) throw std::invalid_argument("trailing");
    return v;
  } catch (const std::exception&) {
    std::cerr << program_ << ": --" << name << ": '" << it->second << "' is not a number\n";
    std::exit(2);
  }
}

std::string BenchFlags::text(const std::string& name, const std::string& fallback) {
  known_.push_back(name);
  const auto it = given_.find(name);
  if (it == given_.end()) return fallback;
  used_[name] = true;
  return it->second;
}

void BenchFlags::check_all_used() const {
  for (const auto& [name, value] : given_) {
    if (used_.count(name) != 0) continue;
    std::cerr << program_ << ": unknown flag --" << name << "; known:";
    for (const auto& k : known_) std::cerr << " --" << k;
    std::cerr << "\n";
    std::exit(2);
  }
}

namespace {
std::int64_t status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::atoll(line.c_str() + key.size());
  }
  return -1;
}
}  // namespace

std::int64_t rss_kib() { return status_kib("VmRSS:"); }
std::int64_t peak_rss_kib() { return status_kib("VmHWM:"); }

std::int64_t raise_nofile(std::int64_t want) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
  const rlim_t target = std::min<rlim_t>(static_cast<rlim_t>(want), rl.rlim_max);
  if (rl.rlim_cur < target) {
    rl.rlim_cur = target;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return static_cast<std::int64_t>(rl.rlim_cur);
}

ForkedServer::~ForkedServer() { stop(); }

void ForkedServer::start(const std::function<void(int)>& serve) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::cout.flush();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    try {
      serve(fds[1]);
    } catch (const std::exception& e) {
      std::cerr << "server child: " << e.what() << "\n";
      _exit(1);
    }
    _exit(0);
  }
  close(fds[1]);
  std::uint16_t port = 0;
  const ssize_t n = read(fds[0], &port, sizeof port);
  close(fds[0]);
  pid_ = pid;
  if (n != static_cast<ssize_t>(sizeof port) || port == 0) {
    stop();
    throw std::runtime_error("server child did not report a port");
  }
  port_ = port;
}

std::int64_t ForkedServer::stop() {
  if (pid_ <= 0) return 0;
  kill(pid_, SIGTERM);
  int status = 0;
  rusage ru{};
  wait4(pid_, &status, 0, &ru);
  pid_ = -1;
  auto ns = [](const timeval& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_usec * 1000;
  };
  return ns(ru.ru_utime) + ns(ru.ru_stime);
}

void serve_firehose(const FirehoseOptions& options, int port_fd) {
  raise_nofile(static_cast<std::int64_t>(options.max_connections) + 256);
  boost::asio::io_context io(1);
  FirehoseServer server(io, options);
  server.start();
  const std::uint16_t port = server.port();
  if (write(port_fd, &port, sizeof port) != static_cast<ssize_t>(sizeof port)) return;
  close(port_fd);
  auto guard = boost::asio::make_work_guard(io);
  io.run();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

agent::StepSpec local_step(std::uint16_t port, std::int32_t concurrency, std::int32_t input_tokens,
                           std::int32_t output_tokens, double duration_s) {
  agent::StepSpec s;
  s.target.base_url = "http://127.0.0.1:" + std::to_string(port);
  s.target.api = agent::ApiKind::kCompletions;
  s.target.model = "firehose";
  s.workload.calibrate = false;
  s.workload.input_tokens = analysis::LengthDistribution::fixed(input_tokens);
  s.workload.output_tokens = analysis::LengthDistribution::fixed(output_tokens);
  s.load.kind = agent::LoadKind::kClosed;
  s.load.concurrency = concurrency;
  s.warmup_s = 0;
  s.duration_s = duration_s;
  s.drain = agent::DrainPolicy::kCancel;
  s.progress_interval_ms = 200;
  return s;
}

std::uint64_t total_token_events(const std::vector<analysis::RequestSample>& samples) {
  std::uint64_t n = 0;
  for (const auto& s : samples) n += s.token_events;
  return n;
}

}  // namespace llmcap::bench
