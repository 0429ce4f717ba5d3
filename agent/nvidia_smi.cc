#include "agent/nvidia_smi.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstring>

extern char** environ;

namespace llmcap::agent {
namespace {

std::string_view smi_trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// "[N/A]", "[Not Supported]", "N/A" and garbage read as absent.
std::optional<double> number(std::string_view s) {
  s = smi_trim(s);
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

GpuInventory parse_nvidia_smi_csv(std::string_view text) {
  GpuInventory inv;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = smi_trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line.empty()) continue;
    std::vector<std::string_view> fields;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = line.find(',', start);
      fields.push_back(smi_trim(
          line.substr(start, comma == std::string_view::npos ? line.npos : comma - start)));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (fields.size() != 4) {
      if (!inv.note.empty()) inv.note += "; ";
      inv.note += "line " + std::to_string(line_no) + ": expected 4 fields, got " +
                  std::to_string(fields.size());
      continue;
    }
    GpuInfo gpu;
    gpu.index = static_cast<int>(inv.gpus.size());
    gpu.name = std::string(fields[0]);
    gpu.memory_total_mib = number(fields[1]);
    gpu.driver_version = std::string(fields[2]);
    gpu.power_limit_w = number(fields[3]);
    inv.gpus.push_back(std::move(gpu));
  }
  inv.available = true;
  return inv;
}

GpuInventory query_gpus(const std::string& executable, int timeout_s) {
  GpuInventory skipped;
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    skipped.note = "nvidia-smi skipped: pipe: " + std::string(std::strerror(errno));
    return skipped;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string arg0 = executable;
  std::string arg1 = "--query-gpu=name,memory.total,driver_version,power.limit";
  std::string arg2 = "--format=csv,noheader,nounits";
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, executable.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    skipped.note = "nvidia-smi skipped: " + executable + " not runnable (" +
                   std::string(std::strerror(rc)) + ")";
    return skipped;
  }
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  char buf[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out_pipe[0], POLLIN, 0};
    const int pr = ::poll(&p, 1, static_cast<int>(left));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) {
      timed_out = pr == 0;
      break;
    }
    const ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output.size() < 1024 * 1024) output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out_pipe[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    skipped.note = "nvidia-smi skipped: no answer within " + std::to_string(timeout_s) + " s";
    return skipped;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // 127 from posix_spawnp's child means "not found" on some libcs.
    skipped.note = "nvidia-smi skipped: exited with status " +
                   std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return skipped;
  }
  return parse_nvidia_smi_csv(output);
}

}  // namespace llmcap::agent
