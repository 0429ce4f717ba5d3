// The REST routes of agent shards (issue 11, docs/openapi.json), thin handlers over ShardHub:
//   POST /v1/jobs/{id}/shards/{shard}/clock       clock exchange (daemon wall clock t1, t2)
//   POST /v1/jobs/{id}/shards/{shard}/register    register with the measured clock offset
//   GET  /v1/jobs/{id}/shards/{shard}/assignment  next step to run (?after=<step>), or wait/done
//   POST /v1/jobs/{id}/shards/{shard}/results     upload a shard result (Idempotency-Key)
// 404 (problem+json) while the job has no fleet — not started yet, or its plan has no agents;
// agents retry that. Auth is the caller's (rest_api.cc: admin token, like other mutations).
// Thread-safe; runs on the blocking pool (uploads are decoded here).
#pragma once

#include <string>

#include "net/http_message.h"

namespace llmcap::server {

class ShardHub;

// route: "shard_clock" | "shard_register" | "shard_assignment" | "shard_results".
net::HttpResponse handle_shard_route(ShardHub& hub, const std::string& route,
                                     const std::string& job_id, const std::string& shard,
                                     const net::HttpRequest& req);

}  // namespace llmcap::server
