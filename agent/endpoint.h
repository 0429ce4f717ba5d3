// Endpoint: a parsed base URL of an inference target (scheme, host, port, base path).
// A plain value; parse_endpoint() is pure and thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "agent/expected.h"

namespace llmcap::agent {

struct Endpoint {
  bool tls = false;       // https://
  std::string host;       // host name or IP literal (IPv6 without brackets)
  std::string port;       // numeric, defaulted from the scheme (80/443)
  std::string base_path;  // path prefix without a trailing '/', e.g. "" or "/proxy"

  // Value of the Host header ("host:port", IPv6 in brackets).
  std::string host_header() const;
  // base_path + path; path must start with '/'.
  std::string target(std::string_view path) const;
};

// Parses "http[s]://host[:port][/prefix]". Fails naming what is wrong (scheme, host, port,
// query/fragment present).
Expected<Endpoint> parse_endpoint(std::string_view url);

}  // namespace llmcap::agent
