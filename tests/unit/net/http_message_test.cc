#include "net/http_message.h"

#include <gtest/gtest.h>

namespace llmcap::net {
namespace {

TEST(HttpMessage, HeaderLookupIsCaseInsensitive) {
  HttpRequest r;
  r.headers = {{"content-type", "application/json"}, {"x-a", "1"}};
  EXPECT_EQ(r.header("Content-Type"), "application/json");
  EXPECT_EQ(r.header("X-A"), "1");
  EXPECT_FALSE(r.header("missing").has_value());
}

TEST(HttpMessage, QueryParamsAreDecoded) {
  HttpRequest r;
  r.query = "state=running&target=a%20b&flag&x=1+2";
  EXPECT_EQ(r.query_param("state"), "running");
  EXPECT_EQ(r.query_param("target"), "a b");
  EXPECT_EQ(r.query_param("flag"), "");
  EXPECT_EQ(r.query_param("x"), "1 2");
  EXPECT_FALSE(r.query_param("nope").has_value());
}

TEST(HttpMessage, PercentDecodeRejectsBadEscapes) {
  EXPECT_EQ(percent_decode("%41%62"), "Ab");
  EXPECT_FALSE(percent_decode("%4").has_value());
  EXPECT_FALSE(percent_decode("%zz").has_value());
  EXPECT_FALSE(percent_decode("abc%").has_value());
}

TEST(HttpMessage, ReasonPhrases) {
  EXPECT_EQ(reason_phrase(404), "Not Found");
  EXPECT_EQ(reason_phrase(422), "Unprocessable Content");
  EXPECT_EQ(reason_phrase(799), "Unknown");
}

}  // namespace
}  // namespace llmcap::net
