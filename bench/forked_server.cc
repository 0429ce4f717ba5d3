#include "bench/forked_server.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>
#include <stdexcept>

namespace llmcap::bench {

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

}  // namespace llmcap::bench
