// `--set key.path=value` (server/cli/plan_override.h): paths through objects and arrays, values
// as JSON or text, removal, and errors that name the path and leave the plan as it was.
#include "server/cli/plan_override.h"

#include <gtest/gtest.h>

namespace llmcap::server {
namespace {

using nlohmann::ordered_json;

ordered_json plan() {
  return ordered_json::parse(R"({"version": 1,
      "targets": [{"name": "a", "base_url": "http://h:1"}],
      "sla": {"ttft_ms": {"p95": 1000}},
      "phases": [{"kind": "concurrency_sweep", "levels": [1, 8], "requests": 200}]})");
}

TEST(PlanOverride, SetsNumbersThroughObjectsAndArrays) {
  ordered_json p = plan();
  PlanOverride o = apply_plan_override(p, "phases.0.warmup_s=2");
  EXPECT_EQ(o.error, "");
  EXPECT_EQ(o.pointer, "/phases/0/warmup_s");
  EXPECT_EQ(p["phases"][0]["warmup_s"], 2);
  EXPECT_EQ(apply_plan_override(p, "sla.ttft_ms.p95=800").error, "");
  EXPECT_EQ(p["sla"]["ttft_ms"]["p95"], 800);
  EXPECT_EQ(apply_plan_override(p, "phases.0.levels.1=16").error, "");
  EXPECT_EQ(p["phases"][0]["levels"], ordered_json::parse("[1, 16]"));
}

TEST(PlanOverride, ValuesAreJsonWhenTheyParseElseText) {
  ordered_json p = plan();
  EXPECT_EQ(apply_plan_override(p, "targets.0.api=chat").error, "");
  EXPECT_EQ(p["targets"][0]["api"], "chat");
  EXPECT_EQ(apply_plan_override(p, "phases.0.levels=[2,4]").error, "");
  EXPECT_EQ(p["phases"][0]["levels"], ordered_json::parse("[2, 4]"));
  EXPECT_EQ(apply_plan_override(p, "workload.ignore_eos=false").error, "");
  EXPECT_EQ(p["workload"]["ignore_eos"], false);
  EXPECT_EQ(apply_plan_override(p, R"(workload.input_tokens={"distribution": "uniform",
      "low": 128, "high": 512})")
                .error,
            "");
  EXPECT_EQ(p["workload"]["input_tokens"]["high"], 512);
  EXPECT_EQ(apply_plan_override(p, R"(name="42")").error, "");
  EXPECT_EQ(p["name"], "42");  // a JSON string stays a string
  EXPECT_EQ(apply_plan_override(p, "description=a=b").error, "");
  EXPECT_EQ(p["description"], "a=b");  // only the first '=' separates
  EXPECT_EQ(apply_plan_override(p, "description=").error, "");
  EXPECT_EQ(p["description"], "");
}

TEST(PlanOverride, MissingObjectsAreCreatedAndArraysAppendAtTheirSize) {
  ordered_json p = plan();
  PlanOverride o = apply_plan_override(p, "demand.requests_per_minute=90");
  EXPECT_EQ(o.error, "");
  EXPECT_EQ(p["demand"], ordered_json::parse(R"({"requests_per_minute": 90})"));
  o = apply_plan_override(p, R"(phases.1={"kind": "capacity_search", "start_from": "knee"})");
  EXPECT_EQ(o.error, "");
  EXPECT_EQ(o.pointer, "/phases/1");
  ASSERT_EQ(p["phases"].size(), 2u);
  EXPECT_EQ(p["phases"][1]["kind"], "capacity_search");
  EXPECT_EQ(apply_plan_override(p, "targets.0.headers.X-Team=ml").error, "");
  EXPECT_EQ(p["targets"][0]["headers"]["X-Team"], "ml");
}

TEST(PlanOverride, NullRemovesAKeyOrAnItem) {
  ordered_json p = plan();
  EXPECT_EQ(apply_plan_override(p, "phases.0.requests=null").error, "");
  EXPECT_FALSE(p["phases"][0].contains("requests"));
  EXPECT_EQ(apply_plan_override(p, "phases.0.levels.0=null").error, "");
  EXPECT_EQ(p["phases"][0]["levels"], ordered_json::parse("[8]"));
  EXPECT_EQ(apply_plan_override(p, "no_such_key=null").error, "");  // nothing to remove: fine
}

TEST(PlanOverride, PointersEscapeSlashesAndTildes) {
  ordered_json p = plan();
  const PlanOverride o = apply_plan_override(p, "targets.0.headers.a/b~c=1");
  EXPECT_EQ(o.error, "");
  EXPECT_EQ(o.pointer, "/targets/0/headers/a~1b~0c");
}

TEST(PlanOverride, ErrorsNameThePathAndLeaveThePlanUnchanged) {
  const ordered_json before = plan();
  struct Case {
    const char* assignment;
    const char* error;
  };
  for (const Case& c : {
           Case{"phases.0.duration_s", "expected KEY.PATH=VALUE"},
           Case{"=3", "the path before '=' is empty"},
           Case{"phases..kind=x", "phases..kind: empty segment"},
           Case{"sla.=1", "sla.: empty segment"},
           Case{"phases.first.kind=x",
                "phases.first.kind: phases is an array: 'first' is not an "
                "index"},
           Case{"phases.3.kind=x", "phases.3.kind: phases has 1 item: index 3 is past the end"},
           Case{"phases.1.kind=x", "phases.1.kind: phases has 1 item: index 1 is past the end"},
           Case{"phases.5=null", "phases.5: phases has 1 item: index 5 is past the end (1 appends"},
           Case{"phases.1=null", "phases.1: phases has no item 1 to remove"},
           Case{"version.x=1",
                "version.x: version is a number, not an object or array: it has "
                "no 'x'"},
           Case{"targets.0.name.first=1", "targets.0.name.first: targets.0.name is a string"},
           Case{"demand.rpm.x.y=1", ""},  // created on the way: not an error
       }) {
    ordered_json p = before;
    const PlanOverride o = apply_plan_override(p, c.assignment);
    if (std::string(c.error).empty()) {
      EXPECT_EQ(o.error, "") << c.assignment;
      continue;
    }
    EXPECT_NE(o.error.find(c.error), std::string::npos) << c.assignment << ": " << o.error;
    EXPECT_EQ(o.pointer, "") << c.assignment;
    EXPECT_EQ(p, before) << c.assignment;
  }
}

}  // namespace
}  // namespace llmcap::server
