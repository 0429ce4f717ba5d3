// ClientResourceError: recognises a failure of the load generator's own resources on the way to
// a connection — file descriptors (EMFILE, ENFILE), local ports (EADDRNOTAVAIL), socket memory
// (ENOBUFS, ENOMEM) when socket(), connect() or the name lookup fails — and says what to change.
// Such a request never reached the target: it is ErrorClass::kClientResources, never a target
// error, and its step is inconclusive (analysis/verdict.h, client_resources; issue 35 #5).
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace llmcap::agent {

struct ClientResourceError {
  std::string_view errno_name;  // "EMFILE", ...
  std::string_view resource;    // "file descriptors", "local ports", "socket memory"
  std::string_view remedy;      // what the operator can change, e.g. "raise ulimit -n ..."
};

// The resource an errno value (from socket(), connect(), getaddrinfo's EAI_SYSTEM) says ran out;
// nullopt for every other errno (a refused or unreachable target is not the client's).
std::optional<ClientResourceError> client_resource_error(int errno_value);

// The sample's error message: "client resources exhausted: <what> failed with EMFILE (Too many
// open files); raise ulimit -n (LimitNOFILE= under systemd) or lower the concurrency".
std::string describe_client_resource_error(const ClientResourceError& e, int errno_value,
                                           std::string_view what);

}  // namespace llmcap::agent
