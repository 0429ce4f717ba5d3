#include "agent/client_resource_error.h"

#include <cerrno>
#include <cstring>

namespace llmcap::agent {

std::optional<ClientResourceError> client_resource_error(int errno_value) {
  switch (errno_value) {
    case EMFILE:
      return ClientResourceError{"EMFILE", "file descriptors",
                                 "raise the agent's descriptor limit (ulimit -n; LimitNOFILE= "
                                 "under systemd) or lower the concurrency"};
    case ENFILE:
      return ClientResourceError{"ENFILE", "file descriptors",
                                 "the system's file table is full: raise fs.file-max or lower "
                                 "the concurrency"};
    case EADDRNOTAVAIL:
      return ClientResourceError{"EADDRNOTAVAIL", "local ports",
                                 "no free local port: widen net.ipv4.ip_local_port_range, use "
                                 "more agents (scale-out) or lower the concurrency"};
    case ENOBUFS:
      return ClientResourceError{"ENOBUFS", "socket memory",
                                 "the kernel is short of socket buffers: lower the concurrency "
                                 "or give the agent's host more memory"};
    case ENOMEM:
      return ClientResourceError{"ENOMEM", "socket memory",
                                 "the agent's host is out of memory: lower the concurrency or "
                                 "give it more memory"};
    default: return std::nullopt;
  }
}

std::string describe_client_resource_error(const ClientResourceError& e, int errno_value,
                                           std::string_view what) {
  std::string out = "client resources exhausted: ";
  out.append(what).append(" failed with ").append(e.errno_name);
  out.append(" (").append(std::strerror(errno_value)).append("); ").append(e.remedy);
  return out;
}

}  // namespace llmcap::agent
