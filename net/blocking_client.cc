#include "net/blocking_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>

namespace llmcap::net {

namespace http = boost::beast::http;

BlockingClient::BlockingClient(std::string base_url, std::string token,
                               std::chrono::milliseconds deadline)
    : token_(std::move(token)), deadline_(deadline) {
  auto u = boost::urls::parse_uri(base_url);
  if (!u) {
    url_error_ = "daemon URL '" + base_url + "' is not a URL (http://host:port)";
    return;
  }
  if (u->scheme() != "http") {
    url_error_ = "daemon URL '" + base_url + "': only http:// is supported (use a TLS sidecar)";
    return;
  }
  host_ = std::string(u->host_address());
  port_ = u->has_port() ? std::string(u->port()) : "80";
  prefix_ = std::string(u->encoded_path());
  while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
  if (host_.empty()) url_error_ = "daemon URL '" + base_url + "' has no host";
}

BlockingReply BlockingClient::request(const std::string& method, const std::string& path,
                                      const std::string& body, const HeaderList& headers) const {
  BlockingReply out;
  if (!url_error_.empty()) {
    out.error = url_error_;
    return out;
  }
  try {
    boost::asio::io_context io;
    boost::asio::ip::tcp::resolver resolver(io);
    boost::beast::tcp_stream stream(io);
    stream.expires_after(deadline_);
    const auto endpoints = resolver.resolve(host_, port_);
    stream.connect(endpoints);
    http::request<http::string_body> req{http::string_to_verb(method), prefix_ + path, 11};
    req.set(http::field::host, host_);
    req.set(http::field::connection, "close");
    if (!token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
    if (!body.empty()) {
      req.set(http::field::content_type, "application/json");  // unless `headers` says otherwise
      req.body() = body;
    }
    for (const auto& [k, v] : headers) req.set(k, v);
    req.prepare_payload();
    http::write(stream, req);
    boost::beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    http::read(stream, buffer, parser);
    out.status = static_cast<int>(parser.get().result_int());
    out.body = std::move(parser.get().body());
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

}  // namespace llmcap::net
