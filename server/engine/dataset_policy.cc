#include "server/engine/dataset_policy.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "agent/dataset.h"

namespace llmcap::server {

namespace {

// realpath(3), "" when the path does not resolve.
std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) == nullptr) return "";
  return buf;
}

bool has_dotdot(const std::string& p) {
  for (const auto& part : std::filesystem::path(p)) {
    if (part == "..") return true;
  }
  return false;
}

}  // namespace

DatasetCheck check_dataset(const std::string& path, const std::string& field,
                           const DatasetPolicy& policy) {
  DatasetCheck out;
  auto problem = [&](std::string message) {
    out.problem = api::FieldError{field, std::move(message)};
    return out;
  };
  std::string file = path;
  if (policy.confined) {
    if (policy.root_dir.empty())
      return problem(
          "this daemon reads no dataset files (set dataset_dir to a directory of datasets)");
    if (path.empty() || path.front() == '/' || has_dotdot(path))
      return problem("'" + path +
                     "': must be a path relative to dataset_dir, without '..' or a leading '/'");
    const std::string root = real_path(policy.root_dir);
    if (root.empty()) return problem("dataset_dir is not a readable directory");
    file = real_path(root + "/" + path);
    // One answer for anything that does not resolve to a file under the directory (absent, or
    // a symlink that leaves it), so the check tells nothing about the rest of the file system.
    if (file.empty() || file.rfind(root + "/", 0) != 0)
      return problem("'" + path + "' is not a file in dataset_dir");
  }
  agent::DatasetLimits limits;
  limits.max_bytes = policy.max_bytes;
  auto ds = agent::Dataset::load(file, limits);
  if (!ds) {
    std::string why = ds.error();
    // Name the path as the plan gave it, not where dataset_dir lives.
    if (policy.confined) {
      for (std::size_t at = why.find(file); at != std::string::npos; at = why.find(file))
        why.replace(at, file.size(), path);
    }
    return problem(why);
  }
  out.resolved_path = policy.confined ? file : std::filesystem::absolute(file).string();
  return out;
}

std::vector<api::FieldError> check_plan_datasets(api::TestPlan& plan, nlohmann::json& normalized,
                                                 const DatasetPolicy& policy) {
  std::vector<api::FieldError> problems;
  // A dataset of chat "messages" cannot be sent to a completions endpoint: a plan error too.
  auto check_api = [&](const std::string& file, const std::string& api, const std::string& field) {
    if (api != "completions") return;
    agent::DatasetLimits limits;
    limits.max_bytes = policy.max_bytes;
    auto ds = agent::Dataset::load(file, limits);
    if (ds && ds.value().has_messages())
      problems.push_back(
          api::FieldError{field,
                          "dataset has \"messages\" requests but the target's api is completions "
                          "(use \"api\": \"chat\")"});
  };
  auto check = [&](api::PlanWorkload& w, nlohmann::json* doc, const std::string& where,
                   const std::vector<const api::PlanTarget*>& targets) {
    if (w.dataset_path.empty()) return;
    const std::string field = where + "/dataset/path";
    auto c = check_dataset(w.dataset_path, field, policy);
    if (c.problem) {
      problems.push_back(*c.problem);
      return;
    }
    for (const auto* t : targets) check_api(c.resolved_path, t->api, field);
    w.dataset_path = c.resolved_path;
    // Confined: the stored and echoed plan keep the path relative to dataset_dir (the daemon's
    // directory layout stays private; the job runner resolves it again when the job starts).
    if (!policy.confined && doc && doc->contains("dataset") && (*doc)["dataset"].is_object())
      (*doc)["dataset"]["path"] = c.resolved_path;
  };
  std::vector<const api::PlanTarget*> plain;  // targets that use the plan's workload
  for (const auto& t : plan.targets)
    if (!t.workload) plain.push_back(&t);
  nlohmann::json* workload = normalized.contains("workload") ? &normalized["workload"] : nullptr;
  check(plan.workload, workload, "/workload", plain);
  for (std::size_t i = 0; i < plan.targets.size(); ++i) {
    auto& t = plan.targets[i];
    if (!t.workload) continue;
    nlohmann::json* doc = nullptr;
    if (normalized.contains("targets") && normalized["targets"].size() > i &&
        normalized["targets"][i].contains("workload"))
      doc = &normalized["targets"][i]["workload"];
    check(*t.workload, doc, "/targets/" + std::to_string(i) + "/workload", {&t});
  }
  return problems;
}

}  // namespace llmcap::server
