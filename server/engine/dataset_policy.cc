#include "server/engine/dataset_policy.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "agent/dataset.h"
#include "agent/trace.h"

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

namespace {

// The file check both request sets share: where `path` may point (confined or not), then
// `load(file)`, which returns "" or the loader's error. Errors name `field` and the path as the
// plan gave it.
template <class Load>
DatasetCheck check_request_file(const std::string& path, const std::string& field,
                                const DatasetPolicy& policy, const char* dir_what, Load&& load) {
  DatasetCheck out;
  auto problem = [&](std::string message) {
    out.problem = api::FieldError{field, std::move(message)};
    return out;
  };
  std::string file = path;
  if (policy.confined) {
    if (policy.root_dir.empty())
      return problem(std::string("this daemon reads no ") + dir_what +
                     " files (set dataset_dir to a directory of datasets)");
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
  std::string why = load(file);
  if (!why.empty()) {
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

}  // namespace

DatasetCheck check_dataset(const std::string& path, const std::string& field,
                           const DatasetPolicy& policy) {
  return check_request_file(path, field, policy, "dataset", [&policy](const std::string& file) {
    agent::DatasetLimits limits;
    limits.max_bytes = policy.max_bytes;
    auto ds = agent::Dataset::load(file, limits);
    return ds ? std::string() : ds.error();
  });
}

DatasetCheck check_trace(const api::PlanTrace& trace, const std::string& field,
                         const DatasetPolicy& policy) {
  const auto format = agent::parse_trace_format(trace.format);
  if (!format) {
    DatasetCheck out;
    out.problem = api::FieldError{field, "unknown trace format '" + trace.format + "'"};
    return out;
  }
  return check_request_file(trace.path, field, policy, "trace", [&](const std::string& file) {
    agent::DatasetLimits limits;
    limits.max_bytes = policy.max_bytes;
    auto t = agent::Trace::load(file, *format, limits);
    if (!t) return t.error();
    agent::TraceWindow w;
    w.start_s = trace.start_s;
    w.duration_s = trace.duration_s;
    w.max_requests = trace.max_requests;
    if (t->window(w).records().empty())
      return file + ": no request of the trace lies in its window (start_s " +
             std::to_string(trace.start_s) + " s, trace span " +
             std::to_string(static_cast<double>(t->span_ns()) / 1e9) + " s)";
    return std::string();
  });
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
  auto check_trace_of = [&](api::PlanWorkload& w, nlohmann::json* doc, const std::string& where) {
    if (!w.trace) return;
    auto c = check_trace(*w.trace, where + "/trace/path", policy);
    if (c.problem) {
      problems.push_back(*c.problem);
      return;
    }
    w.trace->path = c.resolved_path;
    if (!policy.confined && doc && doc->contains("trace") && (*doc)["trace"].is_object())
      (*doc)["trace"]["path"] = c.resolved_path;
  };
  std::vector<const api::PlanTarget*> plain;  // targets that use the plan's workload
  for (const auto& t : plan.targets)
    if (!t.workload) plain.push_back(&t);
  nlohmann::json* workload = normalized.contains("workload") ? &normalized["workload"] : nullptr;
  check(plan.workload, workload, "/workload", plain);
  check_trace_of(plan.workload, workload, "/workload");
  for (std::size_t i = 0; i < plan.targets.size(); ++i) {
    auto& t = plan.targets[i];
    if (!t.workload) continue;
    nlohmann::json* doc = nullptr;
    if (normalized.contains("targets") && normalized["targets"].size() > i &&
        normalized["targets"][i].contains("workload"))
      doc = &normalized["targets"][i]["workload"];
    check(*t.workload, doc, "/targets/" + std::to_string(i) + "/workload", {&t});
    check_trace_of(*t.workload, doc, "/targets/" + std::to_string(i) + "/workload");
  }
  return problems;
}

}  // namespace llmcap::server
