// TargetAllowlist: the hosts and networks plans may send load to (setting target_allowlist;
// docs/security.md). An entry is a host name, an IPv4/IPv6 address or a CIDR network; a URL is
// allowed when its host is a listed name or every address it resolves to is inside a listed
// network. sim:// (embedded simulators) is always allowed.
//
// Name resolution is bounded: each lookup runs on a thread of its own and check() waits for it
// at most resolve_timeout, so a resolver that never answers costs a plan validation that long,
// never the API's worker pool (issue 23 #6). At most max_pending lookups run at once; beyond
// that check() refuses at once ("retry later") instead of queueing.
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
  // "" when the URL's host is allowed; else why not, naming the host and the setting.
  std::string check(const std::string& url) const;

 private:
  // The host's addresses, or why there are none ("does not resolve", a timeout, too many
  // lookups in flight).
  std::optional<std::vector<ResolvedAddress>> resolve(const std::string& host,
                                                      std::string& why) const;
  net::AddressFilter filter_;
  Options options_;
  // Lookups in flight; shared with their threads, which may outlive this object.
  std::shared_ptr<std::atomic<int>> pending_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace llmcap::server
