// BlockingClient: a blocking HTTP/1.1 client for the daemon's command-line tools
// (http://host:port[/prefix], bearer token): `llmcapd agent` to its fleet's daemon, `llmcapd demo`
// and `llmcapd report` to one on loopback. One request per connection (Connection: close),
// every request bounded by the deadline given at construction (connect, write and read), and
// responses by a body limit. Used on a command's own main thread, never on an I/O thread.
// Thread-safety: const methods may be called from several threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "net/http_message.h"

namespace llmcap::net {

struct BlockingReply {
  int status = 0;  // HTTP status; 0 when no response came (error says why)
  std::string body;
  std::string error;
};

class BlockingClient {
 public:
  // base_url: "http://host:port" (an optional path prefix is kept). An invalid URL is reported
  // by valid() / url_error() and makes every request fail with that error.
  BlockingClient(std::string base_url, std::string token,
                 std::chrono::milliseconds deadline = std::chrono::seconds(30));
  bool valid() const { return url_error_.empty(); }
  const std::string& url_error() const { return url_error_; }

  BlockingReply request(const std::string& method, const std::string& path,
                        const std::string& body = "", const HeaderList& headers = {}) const;

 private:
  std::string host_, port_, prefix_, token_;
  std::chrono::milliseconds deadline_;
  std::string url_error_;
};

}  // namespace llmcap::net
