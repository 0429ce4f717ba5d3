#include "server/rest/target_allowlist.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <boost/url/parse.hpp>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <system_error>
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

struct TargetAllowlist::Lookup {
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  std::optional<std::vector<ResolvedAddress>> result;
};

std::shared_ptr<TargetAllowlist::Lookup> TargetAllowlist::start_lookup(
    const std::string& host) const {
  auto lookup = std::make_shared<Lookup>();
  // An address literal needs no lookup (and no thread).
  ResolvedAddress literal;
  if (inet_pton(AF_INET, host.c_str(), literal.bytes.data()) == 1) {
    literal.family = AF_INET;
  } else if (inet_pton(AF_INET6, host.c_str(), literal.bytes.data()) == 1) {
    literal.family = AF_INET6;
  }
  if (literal.family != 0) {
    lookup->result = std::vector<ResolvedAddress>{literal};
    lookup->done = true;
    return lookup;
  }
  if (pending_->fetch_add(1) >= options_.max_pending) {
    pending_->fetch_sub(1);
    return nullptr;
  }
  try {
    // Detached: a resolver that never answers keeps only its own thread (and one slot).
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
  } catch (const std::system_error&) {
    pending_->fetch_sub(1);  // no thread to be had: treated like a full resolver
    return nullptr;
  }
  return lookup;
}

TargetAllowlist::Verdicts TargetAllowlist::check_all(const std::vector<std::string>& urls) const {
  Verdicts out;
  out.reasons.resize(urls.size());
  // Every distinct host is looked up at once; all share one deadline, so a plan naming many
  // hosts costs resolve_timeout at most, not one per host.
  std::map<std::string, std::shared_ptr<Lookup>> lookups;
  std::vector<std::string> host_of(urls.size());
  for (std::size_t i = 0; i < urls.size(); ++i) {
    const std::string& url = urls[i];
    if (url.rfind("sim://", 0) == 0) continue;
    auto u = boost::urls::parse_uri(url);
    if (!u) {
      out.reasons[i] = "not a valid URL";
      continue;
    }
    std::string host(u->host_address());
    if (filter_.allows_name(host)) continue;
    if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
    host_of[i] = host;
    if (!lookups.count(host)) lookups.emplace(host, start_lookup(host));
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.resolve_timeout;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    const std::string& host = host_of[i];
    if (host.empty()) continue;
    const auto& lookup = lookups.at(host);
    if (!lookup) {
      out.busy = true;
      out.reasons[i] = "too many host names are being resolved right now; retry later";
      continue;
    }
    std::unique_lock lock(lookup->mu);
    if (!lookup->done_cv.wait_until(lock, deadline, [&] { return lookup->done; })) {
      out.reasons[i] = "host '" + host + "' did not resolve within " +
                       std::to_string(options_.resolve_timeout.count()) + " ms";
      continue;
    }
    if (!lookup->result) {
      out.reasons[i] = "host '" + host + "' does not resolve";
      continue;
    }
    if (lookup->result->empty()) {
      out.reasons[i] = "host '" + host + "' resolves to no IPv4/IPv6 address";
      continue;
    }
    for (const auto& a : *lookup->result) {
      if (!filter_.allows_address(a.family, a.bytes.data())) {
        char text[INET6_ADDRSTRLEN] = {};
        inet_ntop(a.family, a.bytes.data(), text, sizeof text);
        out.reasons[i] = "host '" + host + "' resolves to " + text +
                         ", outside target_allowlist (to allow it, add '" + host +
                         "' or its network to the daemon's target_allowlist setting: "
                         "--target-allowlist, LLMCAP_TARGET_ALLOWLIST or the config file)";
        break;
      }
    }
  }
  return out;
}

std::string TargetAllowlist::check(const std::string& url) const {
  return check_all({url}).reasons.front();
}

}  // namespace llmcap::server
