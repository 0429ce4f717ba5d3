// Tests of the error-code → HTTP mapping (api/problem_json.h): status per code, stable type
// URIs, and the problem+json body with every field error.
#include "api/problem_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace llmcap::api {
namespace {

using nlohmann::json;

TEST(ProblemJson, EveryCodeHasItsStatusTypeAndTitle) {
  const std::pair<ApiErrorCode, int> expected[] = {
      {ApiErrorCode::kMalformedJson, 400},   {ApiErrorCode::kBadRequest, 400},
      {ApiErrorCode::kUnauthorized, 401},    {ApiErrorCode::kForbidden, 403},
      {ApiErrorCode::kNotFound, 404},        {ApiErrorCode::kMethodNotAllowed, 405},
      {ApiErrorCode::kNotAcceptable, 406},   {ApiErrorCode::kConflict, 409},
      {ApiErrorCode::kPayloadTooLarge, 413}, {ApiErrorCode::kUnsupportedMediaType, 415},
      {ApiErrorCode::kInvalidPlan, 422},     {ApiErrorCode::kInvalidRequest, 422},
      {ApiErrorCode::kQueueFull, 429},       {ApiErrorCode::kInternal, 500},
      {ApiErrorCode::kShuttingDown, 503},    {ApiErrorCode::kStorageUnavailable, 503},
  };
  std::set<std::string> types;
  for (const auto& [code, status] : expected) {
    EXPECT_EQ(http_status(code), status) << static_cast<int>(code);
    const std::string type(problem_type(code));
    EXPECT_EQ(type.rfind(kProblemTypeBase, 0), 0u) << type;
    EXPECT_FALSE(problem_title(code).empty());
    types.insert(type);
  }
  EXPECT_EQ(types.size(), std::size(expected));  // one distinct type per code
  EXPECT_EQ(problem_type(ApiErrorCode::kInvalidPlan),
            "https://github.com/llmcap/llmcap/blob/main/docs/problems.md#invalid-plan");
}

TEST(ProblemJson, ResponseCarriesEveryFieldError) {
  const std::vector<FieldError> errors = {{"/targets/0/name", "is required"},
                                          {"/phases/1/levels/3", "must be an integer"}};
  const auto r = problem_response(ApiErrorCode::kInvalidPlan, "2 errors", errors);
  EXPECT_EQ(r.status, 422);
  bool content_type = false;
  for (const auto& [k, v] : r.headers) {
    if (k == "Content-Type" || k == "content-type") {
      content_type = true;
      EXPECT_EQ(v, "application/problem+json");
    }
  }
  EXPECT_TRUE(content_type);
  const json body = json::parse(r.body);
  EXPECT_EQ(body["type"],
            "https://github.com/llmcap/llmcap/blob/main/docs/problems.md#invalid-plan");
  EXPECT_EQ(body["title"], "Invalid plan");
  EXPECT_EQ(body["status"], 422);
  EXPECT_EQ(body["detail"], "2 errors");
  ASSERT_EQ(body["errors"].size(), 2u);
  EXPECT_EQ(body["errors"][0]["path"], "/targets/0/name");
  EXPECT_EQ(body["errors"][1]["message"], "must be an integer");
}

TEST(ProblemJson, EmptyDetailAndErrorsAreOmitted) {
  const json body = json::parse(problem_response(ApiErrorCode::kNotFound, "").body);
  EXPECT_FALSE(body.contains("detail"));
  EXPECT_FALSE(body.contains("errors"));
  EXPECT_EQ(body["status"], 404);
}

TEST(ProblemJson, InvalidUtf8InADetailDoesNotThrow) {
  net::HttpResponse r;
  ASSERT_NO_THROW(r = problem_response(ApiErrorCode::kBadRequest, "bad \xff\xfe byte",
                                       {{"/x\xc3", "oops \x80"}}));
  const json body = json::parse(r.body, nullptr, false);
  ASSERT_FALSE(body.is_discarded());
  EXPECT_EQ(body["status"], 400);
}

}  // namespace
}  // namespace llmcap::api
