// Plain HTTP request/response values exchanged between the HTTP server and its handlers.
// They carry no Beast types, so handlers (api/, sim/) stay independent of the wire library.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmcap::net {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", ... as sent
  std::string target;  // raw request target, e.g. "/v1/jobs?state=running"
  std::string path;    // target before '?', percent-encoded as sent
  std::string query;   // target after '?', without it; empty when absent
  HeaderList headers;  // names lower-cased, in arrival order
  std::string body;
  std::string remote_address;  // peer IP as text

  // First header with this (case-insensitive) name, if any.
  std::optional<std::string_view> header(std::string_view name) const;
  // Decoded value of a query parameter (first occurrence), if present.
  std::optional<std::string> query_param(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  HeaderList headers;  // Content-Length is added by the server
  std::string body;

  static HttpResponse text(int status, std::string body,
                           std::string content_type = "text/plain; charset=utf-8");
  static HttpResponse json(int status, std::string body);
  HttpResponse& with_header(std::string name, std::string value);
};

// Lower-cases ASCII letters.
std::string to_lower_ascii(std::string_view s);
// True for the headers whose values are credentials (Authorization, Proxy-Authorization,
// X-Api-Key, Api-Key; any case): the plan reader redacts them, the daemon stores them as job
// secrets, and the load generator keeps their values out of error messages.
bool is_credential_header(std::string_view name);
// Compares two secrets (bearer tokens) in time that depends only on their lengths, never on
// where they first differ, so a caller cannot find a token byte by byte from response times.
bool constant_time_equal(std::string_view a, std::string_view b);
// Percent-decodes a URL component ('+' becomes a space). Returns nullopt on a bad escape.
std::optional<std::string> percent_decode(std::string_view s);
// The standard reason phrase of a status code ("Not Found"), or "Unknown".
std::string_view reason_phrase(int status);

}  // namespace llmcap::net
