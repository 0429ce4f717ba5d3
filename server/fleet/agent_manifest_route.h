// The resource GET /v1/jobs/{id}/agents/manifest: the Kubernetes Indexed Job of a job's agent
// fleet, from its stored plan's `agents` and the daemon's k8s_* settings — what the daemon
// creates through the API, or what an operator applies by hand when it has no service account
// (deploy/k8s/README.md). A pure function so RestApi stays a thin dispatcher.
// Thread-safety: pure; reads the service account's namespace file when k8s_namespace is empty.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "net/http_message.h"
#include "server/fleet/k8s_launcher.h"

namespace llmcap::server {

// plan_doc: the job's normalised plan. 200 with YAML (application/yaml) or, when want_json,
// the Job as JSON; 404 problem when the plan has no agents; 409 problem naming the setting
// when the daemon's k8s_* settings cannot make a valid manifest (e.g. no k8s_agent_image).
net::HttpResponse agent_manifest_response(const K8sOptions& options, std::string_view job_id,
                                          const nlohmann::json& plan_doc, bool want_json);

}  // namespace llmcap::server
