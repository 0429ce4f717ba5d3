#include "server/engine/dataset_policy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "api/plan_reader.h"

namespace llmcap::server {
namespace {

namespace fs = std::filesystem;

class DatasetPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("llmcap_dsp_" + std::to_string(::getpid()));
    fs::create_directories(root_ / "sub");
    std::ofstream(root_ / "sub" / "good.jsonl") << "{\"prompt\": \"hi\", \"max_tokens\": 4}\n";
    std::ofstream(root_ / "bad.jsonl") << "secret-content-line\n";
    std::ofstream(fs::temp_directory_path() / ("llmcap_dsp_outside_" + std::to_string(::getpid())))
        << "{\"prompt\": \"outside\"}\n";
    fs::create_symlink(
        fs::temp_directory_path() / ("llmcap_dsp_outside_" + std::to_string(::getpid())),
        root_ / "escape.jsonl");
    policy_.confined = true;
    policy_.root_dir = root_.string();
  }
  void TearDown() override {
    fs::remove_all(root_);
    fs::remove(fs::temp_directory_path() / ("llmcap_dsp_outside_" + std::to_string(::getpid())));
  }
  fs::path root_;
  DatasetPolicy policy_;
};

TEST_F(DatasetPolicyTest, ConfinedPathsResolveInsideTheDirectoryOnly) {
  auto ok = check_dataset("sub/good.jsonl", "/workload/dataset/path", policy_);
  ASSERT_FALSE(ok.problem) << ok.problem->message;
  EXPECT_EQ(ok.resolved_path, fs::canonical(root_ / "sub" / "good.jsonl").string());
  for (const char* path : {"/etc/passwd", "../etc/passwd", "sub/../../x", "missing.jsonl",
                           "escape.jsonl", "sub", "bad.jsonl"}) {
    auto c = check_dataset(path, "/workload/dataset/path", policy_);
    ASSERT_TRUE(c.problem) << path;
    EXPECT_EQ(c.problem->path, "/workload/dataset/path");
    EXPECT_EQ(c.problem->message.find(root_.string()), std::string::npos) << c.problem->message;
    EXPECT_EQ(c.problem->message.find("secret-content"), std::string::npos) << c.problem->message;
  }
  DatasetPolicy none;
  none.confined = true;
  auto refused = check_dataset("sub/good.jsonl", "/workload/dataset/path", none);
  ASSERT_TRUE(refused.problem);
  EXPECT_NE(refused.problem->message.find("dataset_dir"), std::string::npos);
}

TEST_F(DatasetPolicyTest, ThePlanNamesTheResolvedFileItsStoredJsonTheRelativeOne) {
  const auto text =
      nlohmann::json{
          {"version", 1},
          {"name", "ds"},
          {"targets", {{{"name", "a"}, {"base_url", "sim://a100-80g-pcie/llama-3.1-8b"}}}},
          {"workload", {{"dataset", {{"path", "sub/good.jsonl"}}}}},
          {"phases", {{{"kind", "concurrency_sweep"}, {"levels", {1}}, {"duration_s", 1}}}}}
          .dump();
  auto parse = api::parse_plan(text);
  ASSERT_TRUE(parse.errors.empty()) << parse.errors[0].path << " " << parse.errors[0].message;
  const auto problems = check_plan_datasets(*parse.plan, parse.normalized, policy_);
  ASSERT_TRUE(problems.empty()) << problems[0].message;
  const std::string resolved = fs::canonical(root_ / "sub" / "good.jsonl").string();
  EXPECT_EQ(parse.plan->workload.dataset_path, resolved);
  // The stored (and echoed) plan never shows where dataset_dir lives.
  EXPECT_EQ(parse.normalized["workload"]["dataset"]["path"], "sub/good.jsonl");
  // From the command line (not confined) the stored plan names the absolute file.
  auto doc = nlohmann::json::parse(text);
  doc["workload"]["dataset"]["path"] = (root_ / "sub" / ".." / "sub" / "good.jsonl").string();
  auto cli = api::parse_plan(doc.dump());
  ASSERT_TRUE(cli.errors.empty());
  ASSERT_TRUE(check_plan_datasets(*cli.plan, cli.normalized, DatasetPolicy{}).empty());
  EXPECT_EQ(fs::canonical(cli.normalized["workload"]["dataset"]["path"].get<std::string>()),
            fs::path(resolved));
}

TEST_F(DatasetPolicyTest, AMessagesDatasetForACompletionsTargetIsAPlanError) {
  {
    std::ofstream f(root_ / "chat.jsonl");
    f << R"({"messages": [{"role": "user", "content": "hi"}]})"
      << "\n";
  }
  auto plan_with = [](const std::string& api) {
    return nlohmann::json{
        {"version", 1},
        {"name", "ds"},
        {"targets",
         {{{"name", "a"}, {"base_url", "sim://a100-80g-pcie/llama-3.1-8b"}, {"api", api}}}},
        {"workload", {{"dataset", {{"path", "chat.jsonl"}}}}},
        {"phases", {{{"kind", "concurrency_sweep"}, {"levels", {1}}, {"duration_s", 1}}}}}
        .dump();
  };
  auto completions = api::parse_plan(plan_with("completions"));
  ASSERT_TRUE(completions.errors.empty());
  const auto problems = check_plan_datasets(*completions.plan, completions.normalized, policy_);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].path, "/workload/dataset/path");
  EXPECT_NE(problems[0].message.find("completions"), std::string::npos);
  auto chat = api::parse_plan(plan_with("chat"));
  ASSERT_TRUE(chat.errors.empty());
  EXPECT_TRUE(check_plan_datasets(*chat.plan, chat.normalized, policy_).empty());
}

TEST_F(DatasetPolicyTest, TracesAreCheckedLikeDatasetsNamingTheFieldAndLine) {
  std::ofstream(root_ / "t.jsonl") << "{\"timestamp\": 0, \"input_length\": 600, "
                                      "\"output_length\": 9, \"hash_ids\": [1, 2]}\n"
                                      "{\"timestamp\": 1000, \"input_length\": 4, "
                                      "\"output_length\": 9}\n";
  std::ofstream(root_ / "bad.csv") << "Timestamp,Request tokens,Response tokens\n1,2,3\n1,x,3\n";
  auto plan_with = [](const nlohmann::json& trace) {
    return nlohmann::json{
        {"version", 1},
        {"targets", {{{"name", "a"}, {"base_url", "sim://a100-80g-pcie/llama-3.1-8b"}}}},
        {"workload", {{"trace", trace}}},
        {"phases", {{{"kind", "trace_replay"}}}}}
        .dump();
  };
  auto parse = api::parse_plan(plan_with({{"format", "mooncake"}, {"path", "t.jsonl"}}));
  ASSERT_TRUE(parse.plan);
  ASSERT_TRUE(check_plan_datasets(*parse.plan, parse.normalized, policy_).empty());
  EXPECT_EQ(parse.plan->workload.trace->path, fs::canonical(root_ / "t.jsonl").string());
  EXPECT_EQ(parse.normalized["workload"]["trace"]["path"], "t.jsonl");  // never dataset_dir
  struct Case {
    nlohmann::json trace;
    std::string message;
  };
  for (const auto& c : std::vector<Case>{
           {{{"format", "burstgpt"}, {"path", "bad.csv"}},
            "bad.csv: trace line 3: \"Request tokens\" must be an integer"},
           {{{"format", "mooncake"}, {"path", "bad.csv"}}, "bad.csv: trace line 1: invalid JSON"},
           {{{"format", "mooncake"}, {"path", "missing.jsonl"}}, "is not a file in dataset_dir"},
           {{{"format", "mooncake"}, {"path", "../t.jsonl"}}, "must be a path relative"},
           {{{"format", "mooncake"}, {"path", "t.jsonl"}, {"start_s", 5}},
            "t.jsonl: no request of the trace lies in its window (start_s 5"}}) {
    auto p = api::parse_plan(plan_with(c.trace));
    ASSERT_TRUE(p.plan) << c.trace.dump();
    const auto problems = check_plan_datasets(*p.plan, p.normalized, policy_);
    ASSERT_EQ(problems.size(), 1u) << c.trace.dump();
    EXPECT_EQ(problems[0].path, "/workload/trace/path");
    EXPECT_NE(problems[0].message.find(c.message), std::string::npos) << problems[0].message;
    EXPECT_EQ(problems[0].message.find(root_.string()), std::string::npos) << problems[0].message;
  }
}

}  // namespace
}  // namespace llmcap::server
