// `--set key.path=value` of `llmcapd run` and `llmcapd predict`: changes one value of a plan
// document before the plan reader sees it, so any plan (a file, or one built from the ad-hoc
// flags) can be adjusted on the command line without editing JSON. The result is read and
// validated exactly like a file. Pure functions on a JSON document: no I/O; thread-compatible.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace llmcap::server {

struct PlanOverride {
  std::string pointer;  // JSON pointer (RFC 6901) of the value set, e.g. "/phases/0/duration_s"
  std::string error;    // "" on success; else what is wrong, naming the path
};

// Applies `assignment` ("phases.0.duration_s=30") to `plan`. The path before the first '=' is a
// list of segments separated by dots: an object's key, or an array's 0-based index (the array's
// size appends an item). Objects missing on the way are created. The value is parsed as JSON
// when it parses ("30", "true", "[1,4,16]", "{\"p95\": 800}"), else taken as a string ("gpu-a",
// "chat"); `null` removes the key or array item. A key containing a dot cannot be named (write a
// percentile p99.9 as p99_9, which the plan reader takes too).
// Fails, leaving `plan` unchanged, on a missing '=', an empty path or segment, a segment through
// a value that is neither object nor array, or an array index that is not a number or lies past
// the end.
PlanOverride apply_plan_override(nlohmann::ordered_json& plan, std::string_view assignment);

}  // namespace llmcap::server
