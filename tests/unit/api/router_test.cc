#include "api/router.h"

#include <gtest/gtest.h>

namespace llmcap::api {
namespace {

Router make_router() {
  return Router({
      {"GET", "/v1/jobs", "list_jobs"},
      {"POST", "/v1/jobs", "create_job"},
      {"GET", "/v1/jobs/{id}", "get_job"},
      {"DELETE", "/v1/jobs/{id}", "delete_job"},
      {"POST", "/v1/jobs/{id}:cancel", "cancel_job"},
      {"POST", "/v1/jobs/{id}:resume", "resume_job"},
      {"GET", "/v1/jobs/{id}/results", "get_results"},
      {"POST", "/v1/plans:validate", "validate_plan"},
  });
}

TEST(Router, MatchesStaticAndParameterisedRoutes) {
  const auto r = make_router();
  auto m = r.match("GET", "/v1/jobs");
  ASSERT_EQ(m.kind, RouteMatch::Kind::kFound);
  EXPECT_EQ(m.route->name, "list_jobs");
  m = r.match("GET", "/v1/jobs/job_123/results");
  ASSERT_EQ(m.kind, RouteMatch::Kind::kFound);
  EXPECT_EQ(m.route->name, "get_results");
  EXPECT_EQ(m.params.at("id"), "job_123");
}

TEST(Router, CustomMethodSuffixes) {
  const auto r = make_router();
  auto m = r.match("POST", "/v1/jobs/job_9:cancel");
  ASSERT_EQ(m.kind, RouteMatch::Kind::kFound);
  EXPECT_EQ(m.route->name, "cancel_job");
  EXPECT_EQ(m.params.at("id"), "job_9");
  EXPECT_EQ(r.match("POST", "/v1/jobs/job_9:resume").route->name, "resume_job");
  EXPECT_EQ(r.match("POST", "/v1/plans:validate").route->name, "validate_plan");
  EXPECT_EQ(r.match("POST", "/v1/jobs/job_9:explode").kind, RouteMatch::Kind::kNotFound);
  EXPECT_EQ(r.match("POST", "/v1/jobs/:cancel").kind, RouteMatch::Kind::kNotFound);
}

TEST(Router, WrongMethodListsAllowed) {
  const auto r = make_router();
  auto m = r.match("PUT", "/v1/jobs/job_1");
  ASSERT_EQ(m.kind, RouteMatch::Kind::kMethodNotAllowed);
  EXPECT_EQ(m.allowed_methods, (std::vector<std::string>{"GET", "DELETE", "HEAD"}));
  m = r.match("GET", "/v1/plans:validate");
  ASSERT_EQ(m.kind, RouteMatch::Kind::kMethodNotAllowed);
  EXPECT_EQ(m.allowed_methods, std::vector<std::string>{"POST"});
}

TEST(Router, HeadIsGetAndUnknownIs404) {
  const auto r = make_router();
  EXPECT_EQ(r.match("HEAD", "/v1/jobs").kind, RouteMatch::Kind::kFound);
  EXPECT_EQ(r.match("GET", "/v2/jobs").kind, RouteMatch::Kind::kNotFound);
  EXPECT_EQ(r.match("GET", "/v1/jobs/a/b/c").kind, RouteMatch::Kind::kNotFound);
  EXPECT_EQ(r.match("GET", "/v1/jobs/").kind, RouteMatch::Kind::kNotFound);
}

TEST(Router, ParametersArePercentDecoded) {
  const auto r = make_router();
  auto m = r.match("GET", "/v1/jobs/a%2Db");
  ASSERT_EQ(m.kind, RouteMatch::Kind::kFound);
  EXPECT_EQ(m.params.at("id"), "a-b");
  EXPECT_EQ(r.match("GET", "/v1/jobs/%zz").kind, RouteMatch::Kind::kNotFound);
}

}  // namespace
}  // namespace llmcap::api
