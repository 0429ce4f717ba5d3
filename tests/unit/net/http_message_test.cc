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

TEST(HttpMessage, ConstantTimeEqualComparesWholeSecrets) {
  // Issue 23 #4: tokens are compared without an early exit; the result is plain equality.
  EXPECT_TRUE(constant_time_equal("0123456789abcdef", "0123456789abcdef"));
  EXPECT_FALSE(constant_time_equal("0123456789abcdef", "0123456789abcdeX"));
  EXPECT_FALSE(constant_time_equal("0123456789abcdef", "X123456789abcdef"));
  EXPECT_FALSE(constant_time_equal("0123456789abcdef", "0123456789abcde"));
  EXPECT_FALSE(constant_time_equal("0123456789abcde", "0123456789abcdef"));
  EXPECT_FALSE(constant_time_equal("", "a"));
  EXPECT_TRUE(constant_time_equal("", ""));
  const std::string with_nul("ab\0cd", 5);
  EXPECT_FALSE(constant_time_equal(with_nul, "ab"));
  EXPECT_TRUE(constant_time_equal(with_nul, std::string("ab\0cd", 5)));
}

}  // namespace
}  // namespace llmcap::net
