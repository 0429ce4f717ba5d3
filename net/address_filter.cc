#include "net/address_filter.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

namespace llmcap::net {

AddressFilter::AddressFilter(const std::vector<std::string>& entries) {
  for (const auto& e : entries) {
    const auto slash = e.find('/');
    const std::string ip = e.substr(0, slash);
    Network n;
    int max_prefix = 0;
    if (inet_pton(AF_INET, ip.c_str(), n.addr.data()) == 1) {
      n.family = AF_INET;
      max_prefix = 32;
    } else if (inet_pton(AF_INET6, ip.c_str(), n.addr.data()) == 1) {
      n.family = AF_INET6;
      max_prefix = 128;
    } else {
      names_.push_back(e);
      continue;
    }
    n.prefix = max_prefix;
    if (slash != std::string::npos) {
      const std::string bits = e.substr(slash + 1);
      int p = -1;
      const auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), p);
      if (ec != std::errc() || end != bits.data() + bits.size() || p < 0 || p > max_prefix) {
        names_.push_back(e);  // never matches a real host: refuses rather than widens
        continue;
      }
      n.prefix = p;
    }
    networks_.push_back(n);
  }
}

bool AddressFilter::allows_name(const std::string& host) const {
  return std::find(names_.begin(), names_.end(), host) != names_.end();
}

bool AddressFilter::allows_address(int family, const unsigned char* bytes) const {
  for (const auto& n : networks_) {
    if (n.family != family) continue;
    int bits = n.prefix;
    bool match = true;
    for (int i = 0; bits > 0 && match; ++i, bits -= 8) {
      const unsigned char mask = bits >= 8 ? 0xff : static_cast<unsigned char>(0xff << (8 - bits));
      match = (bytes[i] & mask) == (n.addr[static_cast<std::size_t>(i)] & mask);
    }
    if (match) return true;
  }
  return false;
}

bool AddressFilter::allows_address(const std::string& text) const {
  std::array<unsigned char, 16> bytes{};
  if (inet_pton(AF_INET, text.c_str(), bytes.data()) == 1)
    return allows_address(AF_INET, bytes.data());
  if (inet_pton(AF_INET6, text.c_str(), bytes.data()) == 1)
    return allows_address(AF_INET6, bytes.data());
  return false;
}

}  // namespace llmcap::net
