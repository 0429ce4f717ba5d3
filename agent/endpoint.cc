#include "agent/endpoint.h"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

namespace llmcap::agent {

std::string Endpoint::host_header() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  std::string h = ipv6 ? "[" + host + "]" : host;
  return h + ":" + port;
}

std::string Endpoint::target(std::string_view path) const { return base_path + std::string(path); }

Expected<Endpoint> parse_endpoint(std::string_view url) {
  auto parsed = boost::urls::parse_absolute_uri(url);
  if (!parsed) {
    return Expected<Endpoint>::failure("target URL '" + std::string(url) +
                                       "' is not an absolute URL: " + parsed.error().message());
  }
  const boost::urls::url_view u = *parsed;
  Endpoint ep;
  const std::string scheme(u.scheme());
  if (scheme == "http") {
    ep.tls = false;
  } else if (scheme == "https") {
    ep.tls = true;
  } else {
    return Expected<Endpoint>::failure("target URL scheme must be http or https, got '" + scheme +
                                       "'");
  }
  if (u.host_type() == boost::urls::host_type::ipv6) {
    ep.host = std::string(u.host_address());
  } else {
    ep.host = std::string(u.encoded_host());
  }
  if (ep.host.empty()) return Expected<Endpoint>::failure("target URL has no host");
  if (u.has_port()) {
    const std::string p(u.port());
    if (p.empty() || u.port_number() == 0) {
      return Expected<Endpoint>::failure("target URL port '" + p + "' is not in 1..65535");
    }
    ep.port = p;
  } else {
    ep.port = ep.tls ? "443" : "80";
  }
  if (u.has_query() || u.has_fragment()) {
    return Expected<Endpoint>::failure("target URL must not have a query or fragment");
  }
  if (u.has_userinfo()) {
    return Expected<Endpoint>::failure(
        "target URL must not carry credentials; use a header (Authorization) instead");
  }
  std::string path(u.encoded_path());
  while (!path.empty() && path.back() == '/') path.pop_back();
  ep.base_path = path;
  return ep;
}

}  // namespace llmcap::agent
