// ForkedServer: a server under test (firehose, simulator) run in a forked child process, so
// the benchmark's own CPU time and memory (the agent's) are measured without the server's.
// Owns the child: stop() (or the destructor) kills it with SIGTERM and reaps it, returning its
// CPU time. Not thread-safe; start() must be called before the process creates any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>

namespace llmcap::bench {

// The child runs `serve`, which must write the listening port to the given
// fd and then block serving (it is killed with SIGTERM by stop()).
class ForkedServer {
 public:
  ForkedServer() = default;
  ~ForkedServer();
  ForkedServer(const ForkedServer&) = delete;
  ForkedServer& operator=(const ForkedServer&) = delete;
  void start(const std::function<void(int port_fd)>& serve);
  std::uint16_t port() const { return port_; }
  // Kills and reaps the child; returns its CPU time (user + system) in ns over its life.
  std::int64_t stop();

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

}  // namespace llmcap::bench
