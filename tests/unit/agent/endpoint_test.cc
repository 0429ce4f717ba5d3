#include "agent/endpoint.h"

#include <gtest/gtest.h>

namespace llmcap::agent {
namespace {

TEST(Endpoint, ParsesSchemesPortsAndPrefix) {
  auto e = parse_endpoint("http://127.0.0.1:8000");
  ASSERT_TRUE(e) << e.error();
  EXPECT_FALSE(e->tls);
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, "8000");
  EXPECT_EQ(e->target("/v1/completions"), "/v1/completions");
  EXPECT_EQ(e->host_header(), "127.0.0.1:8000");

  e = parse_endpoint("https://api.example.com/proxy/");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->tls);
  EXPECT_EQ(e->port, "443");
  EXPECT_EQ(e->target("/v1/models"), "/proxy/v1/models");

  e = parse_endpoint("http://[::1]:9000");
  ASSERT_TRUE(e) << e.error();
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->host_header(), "[::1]:9000");
  EXPECT_EQ(parse_endpoint("http://h")->port, "80");
}

TEST(Endpoint, RejectsBadUrls) {
  EXPECT_NE(parse_endpoint("ftp://h").error().find("scheme must be http or https"),
            std::string::npos);
  EXPECT_NE(parse_endpoint("not a url").error().find("not an absolute URL"), std::string::npos);
  EXPECT_NE(parse_endpoint("http://h:0").error().find("port"), std::string::npos);
  EXPECT_NE(parse_endpoint("http://h/x?y=1").error().find("query"), std::string::npos);
  EXPECT_NE(parse_endpoint("http://u:p@h/").error().find("credentials"), std::string::npos);
}

}  // namespace
}  // namespace llmcap::agent
