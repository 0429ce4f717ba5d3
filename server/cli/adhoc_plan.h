// The ad-hoc mode of `llmcapd run` and `llmcapd predict`: flags in the habits of `vllm bench
// serve` (--base-url, --model, --concurrency 1,4,16, --num-prompts 200, --sla ttft_p95=1000ms,
// ...) that build a plan document: the same JSON a user could write (docs/plans.md, "Ad-hoc
// runs: flags instead of JSON"), which then goes through the same reader and validation as a
// plan file. Nothing here reads files or runs anything: plain structs and pure functions,
// thread-compatible.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/settings.h"

namespace llmcap::server {

// The ad-hoc flags as given, text for text ("" = not given); each names the plan key it writes.
struct AdhocFlags {
  std::string base_url;       // --base-url: targets[0].base_url (required in ad-hoc mode)
  std::string name;           // --name: targets[0].name (default: from the URL's host and port)
  std::string model;          // --model: targets[0].model, the model name requests carry
  std::string api;            // --api: targets[0].api, chat | completions
  std::string input_tokens;   // --input-tokens: workload.input_tokens (fixed length)
  std::string output_tokens;  // --output-tokens: workload.output_tokens (fixed, max_tokens)
  std::string dataset;        // --dataset: workload.dataset.path
  std::string concurrency;    // --concurrency 1,4,16: a concurrency_sweep, levels
  std::string request_rate;   // --request-rate 2,4 | search: a rate_sweep, rates_rps
  bool search = false;        // --search: a capacity_search (after the sweeps)
  std::string num_prompts;    // --num-prompts: every phase's requests
  std::string duration;       // --duration: every phase's duration_s (60, 60s, 2m)
  std::string warmup;         // --warmup: every phase's warmup_s
  std::string sla;            // --sla ttft_p95=1000ms,...: sla
  std::string price;          // --price: targets[0].price_per_hour
  std::string currency;       // --currency: targets[0].currency
  std::string seed;           // --seed: seed
};

// Binds every field to its flag (--base-url, ...) with a one-line help.
void bind_adhoc_flags(Settings& settings, AdhocFlags& flags);

// The ad-hoc flags that were given ("--base-url", ...), in the order bind_adhoc_flags() binds
// them; empty when none was (the plan comes from a file).
std::vector<std::string> given_adhoc_flags(const AdhocFlags& flags);

// Which flag wrote which value of a plan: (JSON pointer, flag), e.g. ("/phases/0/levels",
// "--concurrency"), so that an error the plan reader finds there can name the flag.
using PlanSources = std::vector<std::pair<std::string, std::string>>;

struct AdhocPlan {
  nlohmann::ordered_json plan;      // the plan document; null when `errors` is not empty
  std::vector<std::string> errors;  // every problem found, each naming its flag ("--sla: ...")
  PlanSources sources;
};

// Builds the plan: one target, the workload, the sla and, in this order, a concurrency_sweep
// (--concurrency), a rate_sweep (--request-rate) and a capacity_search (--search or
// --request-rate search; from the sweep's knee, else from 1 request/s), each step's window
// --num-prompts requests or --duration seconds. Only what a flag gives is written: the plan
// reader's defaults fill in the rest. Fails (all errors listed) on a missing --base-url, no load
// flag, text that is not the number or list a flag takes, a bad --sla entry, and flags that
// exclude each other (--num-prompts with --duration, --input-tokens with --dataset, --search
// without --sla). Ranges (a level of 0, a negative price) are left to the plan reader.
AdhocPlan build_adhoc_plan(const AdhocFlags& flags);

// Parses --sla: comma-separated METRIC_pN=TIME (metrics ttft, ttft_service, tpot, itl, e2e; TIME
// in ms by default, or with a unit: 800ms, 1.5s, 2m), error_rate=1% (or a fraction, 0.01) and
// min_requests=N, into the plan's `sla` object ({"ttft_ms": {"p95": 1000}, "max_error_rate":
// 0.01}). Returns the errors, each naming its entry; `sla` holds the good entries.
std::vector<std::string> parse_sla_flag(std::string_view text, nlohmann::ordered_json& sla);

// A target name ([a-z0-9_.-]{1,64}) for a base URL: its host and port ("127.0.0.1-8000"), or the
// hardware of a sim:// URL ("a100-80g-pcie"); "target" when the URL has no host.
std::string target_name_from_url(std::string_view base_url);

// The flag behind the value at `pointer`: the source whose pointer is `pointer` or its nearest
// ancestor (the later one on a tie, so that a --set names itself over the flag it replaced); ""
// when none is.
std::string flag_for_pointer(const PlanSources& sources, std::string_view pointer);

}  // namespace llmcap::server
