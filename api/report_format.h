// Small text helpers shared by the report renderers (report_html, report_tables, svg_chart):
// HTML/XML escaping, number formatting for humans and safe look-ups into a results document
// whose optional fields may be missing or null. Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmcap::api {

// Escapes & < > " ' so the text is safe in HTML/SVG element content and attribute values.
std::string html_escape(std::string_view text);

// Text safe in XML 1.0 element content and attribute values (JUnit XML, report_junit.h): & < > "
// ' escaped as html_escape does; tab, LF and CR as character references, so an attribute keeps
// them (a parser normalises literal ones to spaces); what XML 1.0 cannot carry at all — the other
// C0 control characters, U+FFFE, U+FFFF and bytes that are not well-formed UTF-8 — replaced by
// U+FFFD, one per character or stray byte.
std::string xml_escape(std::string_view text);

// Fixed-point with `decimals` digits; "-" for NaN/inf.
std::string format_fixed(double value, int decimals);

// An optional figure for a report cell: format_fixed, or "-" when it was not measured.
std::string opt_fixed(const std::optional<double>& value, int decimals);
// An optional fraction as a percentage with 2 decimals ("12.50%"), or "-".
std::string percent(const std::optional<double>& fraction);

// Compact form for axis ticks and labels: up to 3 significant digits, no trailing zeros,
// thousands as "1.5k" / millions as "2M" (12, 0.25, 1.2k, 15k).
std::string format_compact(double value);

// Member `key` of `object` as a number; nullopt when absent, null or not a number (the results
// document writes null for "not measured").
std::optional<double> json_number(const nlohmann::json& object, std::string_view key);

// Member `key` as a string; `fallback` when absent or not a string.
std::string json_string(const nlohmann::json& object, std::string_view key,
                        std::string_view fallback = "");

// Member `key` itself, or a shared null value when `object` is not an object or lacks it.
const nlohmann::json& json_member(const nlohmann::json& object, std::string_view key);
// The results document's `targets` array, or a shared empty array when it has none.
const nlohmann::json& targets_of(const nlohmann::json& results);

// Markdown tables: a cell's text with pipes escaped and line breaks flattened; a row of cells;
// a header row with its alignment line (`align`: one 'l' (text) or 'r' (number) per column).
std::string markdown_cell(std::string_view text);
std::string markdown_row(const std::vector<std::string>& cells);
std::string markdown_header(const std::vector<std::string>& cells, std::string_view align);

}  // namespace llmcap::api
