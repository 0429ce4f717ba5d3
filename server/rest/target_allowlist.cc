#include "server/rest/target_allowlist.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <boost/url/parse.hpp>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace llmcap::server {

std::optional<std::vector<ResolvedAddress>> resolve_with_getaddrinfo(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return std::nullopt;
  std::vector<ResolvedAddress> out;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    ResolvedAddress r;
    r.family = a->ai_family;
    if (a->ai_family == AF_INET)
      std::memcpy(r.bytes.data(), &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, 4);
    else if (a->ai_family == AF_INET6)
      std::memcpy(r.bytes.data(), &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, 16);
    else
      continue;
    out.push_back(r);
  }
  freeaddrinfo(res);
  return out;
}

TargetAllowlist::TargetAllowlist(const std::vector<std::string>& entries)
    : TargetAllowlist(entries, Options{}) {}

TargetAllowlist::TargetAllowlist(const std::vector<std::string>& entries, Options options)
    : filter_(entries), options_(std::move(options)) {}

std::optional<std::vector<ResolvedAddress>> TargetAllowlist::resolve(const std::string& host,
                                                                     std::string& why) const {
  struct Lookup {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    std::optional<std::vector<ResolvedAddress>> result;
  };
  if (pending_->fetch_add(1) >= options_.max_pending) {
    pending_->fetch_sub(1);
    why = "too many host names are being resolved right now; retry later";
    return std::nullopt;
  }
  auto lookup = std::make_shared<Lookup>();
  // Detached: a resolver that never answers keeps only its own thread (and one pending slot).
  std::thread([lookup, host, resolver = options_.resolver, pending = pending_] {
    auto result = resolver(host);
    {
      std::lock_guard lock(lookup->mu);
      lookup->result = std::move(result);
      lookup->done = true;
    }
    lookup->done_cv.notify_all();
    pending->fetch_sub(1);
  }).detach();
  std::unique_lock lock(lookup->mu);
  if (!lookup->done_cv.wait_for(lock, options_.resolve_timeout, [&] { return lookup->done; })) {
    why = "host '" + host + "' did not resolve within " +
          std::to_string(options_.resolve_timeout.count()) + " ms";
    return std::nullopt;
  }
  if (!lookup->result) why = "host '" + host + "' does not resolve";
  return lookup->result;
}

std::string TargetAllowlist::check(const std::string& url) const {
  if (url.rfind("sim://", 0) == 0) return "";
  auto u = boost::urls::parse_uri(url);
  if (!u) return "not a valid URL";
  std::string host(u->host_address());
  if (filter_.allows_name(host)) return "";
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
  std::string why;
  const auto addresses = resolve(host, why);
  if (!addresses) return why;
  if (addresses->empty()) return "host '" + host + "' resolves to no IPv4/IPv6 address";
  for (const auto& a : *addresses) {
    if (!filter_.allows_address(a.family, a.bytes.data())) {
      char text[INET6_ADDRSTRLEN] = {};
      inet_ntop(a.family, a.bytes.data(), text, sizeof text);
      return "host '" + host + "' resolves to " + text + ", outside target_allowlist";
    }
  }
  return "";
}

}  // namespace llmcap::server
