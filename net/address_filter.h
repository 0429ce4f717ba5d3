// AddressFilter: which hosts a client may connect to — the daemon's target_allowlist (setting;
// docs/security.md). An entry is a host name, an IPv4/IPv6 address or a CIDR network
// ("10.0.0.0/8", "::1/128"). A connection is allowed when its host is a listed name, or the
// address it is about to connect to lies in a listed network. Checked at submit time on the
// names a plan gives, and again by the load generator at connect time on the addresses the name
// resolved to then, so a name that re-resolves to another address (DNS rebinding) is refused.
// Immutable after construction: safe to share between threads.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace llmcap::net {

class AddressFilter {
 public:
  AddressFilter() = default;  // empty: allows everything
  // Entries as the setting gives them; an unparsable CIDR suffix counts as a host name.
  explicit AddressFilter(const std::vector<std::string>& entries);

  bool empty() const { return names_.empty() && networks_.empty(); }
  bool allows_name(const std::string& host) const;
  // family: AF_INET or AF_INET6; bytes in network order (IPv4: the first 4).
  bool allows_address(int family, const unsigned char* bytes) const;
  // An address as text ("127.0.0.1", "::1"); false for text that is not an address.
  bool allows_address(const std::string& text) const;

 private:
  struct Network {
    int family = 0;
    std::array<unsigned char, 16> addr{};
    int prefix = 0;
  };
  std::vector<std::string> names_;
  std::vector<Network> networks_;
};

}  // namespace llmcap::net
