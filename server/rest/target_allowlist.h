// TargetAllowlist: the hosts and networks plans may send load to (setting target_allowlist;
// docs/security.md). An entry is a host name, an IPv4/IPv6 address or a CIDR network; a URL is
// allowed when its host is a listed name or every address it resolves to is inside a listed
// network. sim:// (embedded simulators) is always allowed.
//
// Name resolution is bounded (issue 23 #6): every distinct host of a plan is looked up at once,
// each on a thread of its own (address literals need none), and check_all() waits for all of
// them until one shared deadline, resolve_timeout. A resolver that never answers so costs a
// plan validation that long, whatever the number of hosts, and holds one worker of the API's
// pool for it. At most max_pending lookups run at once; beyond that the URL is refused at once
// with busy set ("retry later": 503, not an invalid plan).
// Thread-safety: check() may be called from several threads at once.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/address_filter.h"

namespace llmcap::server {

struct ResolvedAddress {
  int family = 0;                         // AF_INET or AF_INET6
  std::array<unsigned char, 16> bytes{};  // network order; IPv4 uses the first 4
};
// Resolves a host name; nullopt when it does not resolve. May block.
using HostResolver = std::function<std::optional<std::vector<ResolvedAddress>>(const std::string&)>;
// getaddrinfo(3).
std::optional<std::vector<ResolvedAddress>> resolve_with_getaddrinfo(const std::string& host);

class TargetAllowlist {
 public:
  struct Options {
    std::chrono::milliseconds resolve_timeout{2000};
    int max_pending = 8;
    HostResolver resolver = resolve_with_getaddrinfo;
  };
  explicit TargetAllowlist(const std::vector<std::string>& entries);
  TargetAllowlist(const std::vector<std::string>& entries, Options options);
  struct Verdicts {
    std::vector<std::string> reasons;  // parallel to the URLs: "" when allowed, else why not
    bool busy = false;                 // some URL was refused only because of max_pending
  };
  Verdicts check_all(const std::vector<std::string>& urls) const;
  // "" when the URL's host is allowed; else why not, naming the host and the setting.
  std::string check(const std::string& url) const;

 private:
  struct Lookup;
  // The host's lookup, started (or done, for an address literal); null when max_pending are
  // in flight or no thread could be started.
  std::shared_ptr<Lookup> start_lookup(const std::string& host) const;
  net::AddressFilter filter_;
  Options options_;
  // Lookups in flight; shared with their threads, which may outlive this object.
  std::shared_ptr<std::atomic<int>> pending_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace llmcap::server
