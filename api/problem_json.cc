#include "api/problem_json.h"

#include <nlohmann/json.hpp>

namespace llmcap::api {

namespace {
struct Row {
  ApiErrorCode code;
  int status;
  std::string_view slug;
  std::string_view title;
};
// The mapping table. Keep one row per ApiErrorCode, and one section `## slug` per row in
// docs/problems.md (tests/integration/openapi_live_test.py checks both ways).
constexpr Row kRows[] = {
    {ApiErrorCode::kMalformedJson, 400, "malformed-json", "Malformed JSON"},
    {ApiErrorCode::kBadRequest, 400, "bad-request", "Bad request"},
    {ApiErrorCode::kUnauthorized, 401, "unauthorized", "Missing or invalid bearer token"},
    {ApiErrorCode::kForbidden, 403, "forbidden", "Token lacks the required role"},
    {ApiErrorCode::kNotFound, 404, "not-found", "Not found"},
    {ApiErrorCode::kMethodNotAllowed, 405, "method-not-allowed", "Method not allowed"},
    {ApiErrorCode::kNotAcceptable, 406, "not-acceptable", "Not acceptable"},
    {ApiErrorCode::kConflict, 409, "conflict", "Conflict"},
    {ApiErrorCode::kPayloadTooLarge, 413, "payload-too-large", "Request body too large"},
    {ApiErrorCode::kUnsupportedMediaType, 415, "unsupported-media-type", "Unsupported media type"},
    {ApiErrorCode::kInvalidPlan, 422, "invalid-plan", "Invalid plan"},
    {ApiErrorCode::kInvalidRequest, 422, "invalid-request", "Invalid request"},
    {ApiErrorCode::kQueueFull, 429, "queue-full", "Job queue full"},
    {ApiErrorCode::kInternal, 500, "internal", "Internal error"},
    {ApiErrorCode::kShuttingDown, 503, "shutting-down", "Shutting down"},
    {ApiErrorCode::kStorageUnavailable, 503, "storage-unavailable", "Storage unavailable"},
    {ApiErrorCode::kResolverBusy, 503, "resolver-busy", "Name resolution busy"},
    {ApiErrorCode::kInsufficientStorage, 507, "insufficient-storage", "Insufficient storage"},
};

const Row& row(ApiErrorCode code) {
  for (const auto& r : kRows) {
    if (r.code == code) return r;
  }
  return kRows[13];  // kInternal
}
}  // namespace

int http_status(ApiErrorCode code) { return row(code).status; }
std::string_view problem_title(ApiErrorCode code) { return row(code).title; }

std::string_view problem_type(ApiErrorCode code) {
  static const auto* types = [] {
    auto* m = new std::vector<std::pair<ApiErrorCode, std::string>>();
    for (const auto& r : kRows)
      m->emplace_back(r.code, std::string(kProblemTypeBase) + std::string(r.slug));
    return m;
  }();
  for (const auto& [c, t] : *types) {
    if (c == code) return t;
  }
  return "about:blank";
}

net::HttpResponse problem_response(ApiErrorCode code, std::string_view detail,
                                   const std::vector<FieldError>& errors) {
  nlohmann::json body{{"type", std::string(problem_type(code))},
                      {"title", std::string(problem_title(code))},
                      {"status", http_status(code)}};
  if (!detail.empty()) body["detail"] = std::string(detail);
  if (!errors.empty()) {
    auto arr = nlohmann::json::array();
    for (const auto& e : errors) arr.push_back({{"path", e.path}, {"message", e.message}});
    body["errors"] = std::move(arr);
  }
  return net::HttpResponse::text(
      http_status(code), body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      "application/problem+json");
}

}  // namespace llmcap::api
