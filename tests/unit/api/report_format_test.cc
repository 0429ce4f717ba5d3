#include "api/report_format.h"

#include <gtest/gtest.h>

#include <cmath>

namespace llmcap::api {
namespace {

TEST(ReportFormatTest, HtmlEscapeCoversMarkupAndQuotes) {
  EXPECT_EQ(html_escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;");
  EXPECT_EQ(html_escape("plain ≤ text"), "plain ≤ text");
}

TEST(ReportFormatTest, FixedAndCompactNumbers) {
  EXPECT_EQ(format_fixed(855.71274, 1), "855.7");
  EXPECT_EQ(format_fixed(-0.0001, 2), "0.00");
  EXPECT_EQ(format_fixed(std::nan(""), 2), "-");
  EXPECT_EQ(format_compact(0), "0");
  EXPECT_EQ(format_compact(12), "12");
  EXPECT_EQ(format_compact(0.25), "0.25");
  EXPECT_EQ(format_compact(2.5), "2.5");
  EXPECT_EQ(format_compact(1500), "1500");
  EXPECT_EQ(format_compact(15000), "15k");
  EXPECT_EQ(format_compact(2'000'000), "2M");
  EXPECT_EQ(format_compact(0.0012), "0.0012");
}

TEST(ReportFormatTest, LookupsTolerateMissingAndNull) {
  const auto j = nlohmann::json::parse(R"({"a": 1.5, "b": null, "c": "x", "d": {"e": 2}})");
  EXPECT_EQ(json_number(j, "a"), 1.5);
  EXPECT_FALSE(json_number(j, "b"));
  EXPECT_FALSE(json_number(j, "c"));
  EXPECT_FALSE(json_number(j, "missing"));
  EXPECT_FALSE(json_number(nlohmann::json::array(), "a"));
  EXPECT_EQ(json_string(j, "c"), "x");
  EXPECT_EQ(json_string(j, "a", "fb"), "fb");
  EXPECT_TRUE(json_member(j, "zz").is_null());
  EXPECT_EQ(json_number(json_member(j, "d"), "e"), 2.0);
}

}  // namespace
}  // namespace llmcap::api
