// A minimal blocking HTTP/1.1 client for talking to an llmcapd on loopback (used by
// `llmcapd demo`, which drives its own in-process daemon through the public REST API).
// One request per connection (Connection: close); a 30 s deadline per request.
#pragma once

#include <cstdint>
#include <string>

namespace llmcap::server {

struct LocalResponse {
  int status = 0;  // 0 when the request could not be made
  std::string body;
  std::string error;  // why status is 0
};

LocalResponse local_request(std::uint16_t port, const std::string& method, const std::string& path,
                            const std::string& body = "",
                            const std::string& content_type = "application/json");

}  // namespace llmcap::server
