#include "api/report_negotiation.h"

#include <gtest/gtest.h>

namespace llmcap::api {
namespace {

using F = ReportFormat;
const std::vector<F> kReport = {F::kJson, F::kHtml, F::kMarkdown, F::kCsv, F::kJunit};
const std::vector<F> kCompare = {F::kJson, F::kHtml, F::kMarkdown, F::kCsv};

std::optional<F> pick(std::optional<std::string_view> accept,
                      const std::vector<F>& supported = kReport) {
  return choose_report_format(std::nullopt, accept, supported).format;
}

TEST(ReportNegotiationTest, APlainRequestGetsJsonOnBothRoutes) {
  // curl sends */*; python's http.client sends no Accept at all.
  for (const auto& supported : {kReport, kCompare}) {
    EXPECT_EQ(pick(std::nullopt, supported), F::kJson);
    EXPECT_EQ(pick("", supported), F::kJson);
    EXPECT_EQ(pick("*/*", supported), F::kJson);
  }
}

TEST(ReportNegotiationTest, AcceptPicksByMediaTypeAndQuality) {
  // Chromium's and Firefox's navigation Accept: the page.
  EXPECT_EQ(pick("text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
                 "*/*;q=0.8"),
            F::kHtml);
  EXPECT_EQ(pick("application/json"), F::kJson);
  EXPECT_EQ(pick("text/markdown"), F::kMarkdown);
  EXPECT_EQ(pick("TEXT/CSV; charset=utf-8"), F::kCsv);
  EXPECT_EQ(pick("application/json;q=0.5, text/html"), F::kHtml);
  EXPECT_EQ(pick("text/html;q=0.2, */*;q=0.9"), F::kJson);  // */* outranks a low html
  EXPECT_EQ(pick("text/*"), F::kHtml);                      // ties: the route's order
  EXPECT_EQ(pick("text/*, text/csv"), F::kCsv);             // the more specific match
  EXPECT_EQ(pick("application/json, text/html"), F::kJson);
  EXPECT_EQ(pick("text/html;q=0, */*"), F::kJson);  // q=0: not acceptable
}

TEST(ReportNegotiationTest, FormatWinsOverAccept) {
  const auto c = choose_report_format("markdown", "text/html", kReport);
  EXPECT_EQ(c.format, F::kMarkdown);
  EXPECT_EQ(choose_report_format("junit", "application/json", kReport).format, F::kJunit);
  EXPECT_EQ(choose_report_format("json", "text/html", kCompare).format, F::kJson);
}

TEST(ReportNegotiationTest, AFormatTheRouteDoesNotRenderIsABadFormat) {
  const auto xunit = choose_report_format("xunit", std::nullopt, kReport);
  EXPECT_FALSE(xunit.format);
  EXPECT_TRUE(xunit.bad_format);
  EXPECT_EQ(xunit.detail, "must be json, html, markdown, csv or junit");
  const auto junit = choose_report_format("junit", std::nullopt, kCompare);
  EXPECT_TRUE(junit.bad_format);
  EXPECT_EQ(junit.detail, "must be json, html, markdown or csv");
  EXPECT_TRUE(choose_report_format("HTML", std::nullopt, kCompare).bad_format);
}

TEST(ReportNegotiationTest, JunitIsReachedOnlyByFormatAndUnknownTypesAreNotAcceptable) {
  // application/xml is generic (browsers send it): never JUnit by Accept.
  const auto xml = choose_report_format(std::nullopt, "application/xml", kReport);
  EXPECT_FALSE(xml.format);
  EXPECT_TRUE(xml.not_acceptable);
  EXPECT_NE(xml.detail.find("text/html"), std::string::npos) << xml.detail;
  EXPECT_NE(xml.detail.find("?format="), std::string::npos) << xml.detail;
  EXPECT_TRUE(choose_report_format(std::nullopt, "image/png", kCompare).not_acceptable);
}

TEST(ReportNegotiationTest, ContentTypes) {
  EXPECT_EQ(report_content_type(F::kJson), "application/json");
  EXPECT_EQ(report_content_type(F::kHtml), "text/html; charset=utf-8");
  EXPECT_EQ(report_content_type(F::kJunit), "application/xml; charset=utf-8");
}

}  // namespace
}  // namespace llmcap::api
