// Which rendering a report route answers with: one rule for GET /v1/jobs/{id}/report and
// GET /v1/compare, so the two cannot drift (issue 40 #4; docs/openapi.json, "Content
// negotiation"):
//   1. `?format=` wins: json, html, markdown, csv, junit — those the route renders; any other
//      value is a bad query naming `format`.
//   2. Else the Accept header, by RFC 9110 §12.5.1: each format's q is that of the most specific
//      media range matching its type (application/json, text/html, text/markdown, text/csv);
//      the highest q wins, ties go to the more specific match, then to the route's order (JSON
//      first). JUnit XML has no Accept type (application/xml is generic; browsers send it), so
//      it is reached only by ?format=junit. An Accept that matches no format is not acceptable.
//   3. No Accept, an empty one, or only */* (a plain curl, python requests): JSON, as every
//      other /v1 route answers; a browser's Accept names text/html and gets the page.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmcap::api {

enum class ReportFormat { kJson, kHtml, kMarkdown, kCsv, kJunit };

// "json", "html", "markdown", "csv", "junit".
std::string_view report_format_name(ReportFormat f);
// "application/json; charset=utf-8", "text/html; charset=utf-8", …, "application/xml; …".
std::string_view report_content_type(ReportFormat f);

struct FormatChoice {
  std::optional<ReportFormat> format;  // set on success
  bool bad_format = false;             // ?format= names a format the route does not render
  bool not_acceptable = false;         // Accept matches none of the route's formats
  std::string detail;                  // what is accepted, for the problem's text
};

// `supported` is the route's formats in its order of preference for ties; the first is the
// default for a plain request and must be kJson (the rule above).
FormatChoice choose_report_format(std::optional<std::string_view> format_param,
                                  std::optional<std::string_view> accept,
                                  const std::vector<ReportFormat>& supported);

}  // namespace llmcap::api
