#include "server/local_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <chrono>

namespace llmcap::server {

namespace http = boost::beast::http;

LocalResponse local_request(std::uint16_t port, const std::string& method, const std::string& path,
                            const std::string& body, const std::string& content_type) {
  LocalResponse out;
  try {
    boost::asio::io_context io;
    boost::beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(30));
    stream.connect(
        boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
    http::request<http::string_body> req{http::string_to_verb(method), path, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::connection, "close");
    if (!body.empty()) {
      req.set(http::field::content_type, content_type);
      req.body() = body;
      req.prepare_payload();
    }
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

}  // namespace llmcap::server
