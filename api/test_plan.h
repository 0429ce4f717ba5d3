// TestPlan: a parsed, validated test plan, version 1 (docs/plans.md, docs/plan-schema.json).
// Plain values produced by parse_plan() (plan_reader.h); the daemon converts them into load
// steps. Every field has the default a plan gets when it omits the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/length_distribution.h"

namespace llmcap::api {

// workload.trace (docs/plans.md, "Trace replay"): a timestamped request trace.
struct PlanTrace {
  std::string format;               // mooncake | burstgpt
  std::string path;                 // as given; resolved by the daemon's dataset policy
  std::int32_t block_tokens = 512;  // tokens per hash_ids block (mooncake)
  double start_s = 0;               // trace time where the replay starts
  double duration_s = 0;            // > 0: trace seconds replayed; 0 = to the end
  std::int64_t max_requests = 0;    // > 0: at most this many requests; 0 = all
};

// workload.abandon (docs/plans.md, "Abandonment"): simulated users who give up.
struct PlanAbandon {
  double share = 0;               // fraction of requests abandoned
  std::int64_t after_ms = 0;      // after this long from the intended send time, or
  std::int32_t after_tokens = 0;  // after this many token events (exactly one is > 0)
};

// workload.conversation (docs/plans.md, "Conversations"): multi-turn sessions.
struct PlanConversation {
  std::int32_t turns_low = 1;  // turns per session, uniform in [low, high]
  std::int32_t turns_high = 1;
  analysis::LengthDistribution user_tokens = analysis::LengthDistribution::fixed(64);
  double think_time_s = 0;
  std::string think_time = "fixed";     // fixed | exponential
  std::int32_t max_context_tokens = 0;  // 0: no limit
};

// workload.prefix_groups (docs/plans.md, "Prefix groups"): traffic sharing prompt prefixes.
struct PlanPrefixGroup {
  double share = 0;                // fraction of requests (the groups' shares sum to 1)
  std::int32_t prefix_tokens = 0;  // length of the group's common prefix
};

struct PlanSlaBound;  // below, with the plan's SLA

// workload.mix (docs/plans.md, "Workload mixes"): one class of requests of a mixed workload.
struct PlanMixClass {
  std::string name;   // unique in the mix; a-z, 0-9, '_', '.', '-'
  double weight = 0;  // share of requests; the weights sum to 1
  analysis::LengthDistribution input_tokens = analysis::LengthDistribution::fixed(1024);
  analysis::LengthDistribution output_tokens = analysis::LengthDistribution::fixed(256);
  std::int32_t prefix_tokens = 0;  // > 0: the class's prompts share a prefix this long
  // The class's own SLA (its "sla" key): latency bounds that replace the plan's for this class
  // (nullopt: the plan's), and its error-rate limit (nullopt: the plan's).
  std::optional<std::vector<PlanSlaBound>> sla_bounds;
  std::optional<double> max_error_rate;
};

struct PlanWorkload {
  analysis::LengthDistribution input_tokens = analysis::LengthDistribution::fixed(1024);
  analysis::LengthDistribution output_tokens = analysis::LengthDistribution::fixed(256);
  std::string dataset_path;             // JSONL request set instead of synthetic prompts
  std::string dataset_mode = "sample";  // sample | replay
  std::int32_t shared_prefix_tokens = 0;
  std::vector<PlanPrefixGroup> prefix_groups;  // empty: none
  double temperature = 0;
  bool ignore_eos = true;
  bool min_tokens = false;  // also send min_tokens = max_tokens (vLLM)
  bool stream = true;
  std::string extra_body_json = "{}";
  bool record_token_times = false;
  // Synthetic prompts: measure words→tokens on the target before each step (/tokenize or a
  // usage probe). false: use the default ratio (1.3 tokens per word) and send no probe.
  bool calibrate = true;
  std::optional<PlanTrace> trace;      // requests from a trace instead of the distributions
  std::optional<PlanAbandon> abandon;  // absent: no request is abandoned
  std::optional<PlanConversation> conversation;  // absent: every request stands alone
  std::vector<PlanMixClass> mix;                 // empty: one class (input_tokens / output_tokens)

  // Planned mean lengths: the classes' weighted nominal means with a mix.
  double planned_input_mean() const;
  double planned_output_mean() const;
};

struct PlanTarget {
  std::string name;
  std::string base_url;
  std::string api = "completions";  // completions | chat
  std::string model;                // empty: discovered with GET /v1/models
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::pair<std::string, std::string>> secrets;  // api_key → Authorization: Bearer
  std::string tls_ca_file;
  bool tls_insecure = false;
  std::string hardware_json = "{}";      // the hardware/engine record as given
  std::string precision;                 // hardware.precision, else sim dtype, else ""
  std::optional<double> price_per_hour;  // absent: not priced (no cost, no cost of instances)
  std::string currency = "USD";
  std::string metrics_url;
  std::string sim_json = "{}";  // `sim` options for sim:// targets
  // Override: "per-target optimised". Starts from the plan's workload; keys it gives replace.
  std::optional<PlanWorkload> workload;
};

struct PlanSlaBound {
  std::string metric;  // ttft | ttft_service | tpot | itl | e2e
  double percentile = 95;
  double limit_ms = 0;
};

struct PlanSla {
  std::vector<PlanSlaBound> bounds;
  double max_error_rate = 0.01;
  std::string ttft_from = "intended";  // intended | send
  std::optional<double> rate_tolerance;
  std::optional<double> max_schedule_lag_p99_ms;
  std::optional<std::int64_t> min_requests;
  double window_s = 30;
};

struct PlanTimeouts {
  std::int64_t connect_ms = 10'000;
  std::int64_t first_token_ms = 120'000;
  std::int64_t idle_ms = 30'000;
  std::int64_t total_ms = 600'000;
};

// The plan's enumerations, with their JSON spellings (to_string / parse_*: nullopt for any
// other text).
enum class PhaseKind {
  kConcurrencySweep,
  kRateSweep,
  kCapacitySearch,
  kBurst,
  kSoak,
  kTraceReplay,
  kAtDemand
};
enum class Drain { kFinish, kCancel };               // at a step's end: wait, or cancel in flight
enum class Arrival { kPoisson, kConstant, kGamma };  // open-loop inter-arrival times
std::string_view to_string(PhaseKind k);
std::string_view to_string(Drain d);
std::string_view to_string(Arrival a);
std::optional<PhaseKind> parse_phase_kind(std::string_view s);
std::optional<Drain> parse_drain(std::string_view s);
std::optional<Arrival> parse_arrival(std::string_view s);
// Every open-loop phase kind (all but concurrency_sweep; a trace replay is open loop at the
// trace's own times).
inline bool is_open_loop(PhaseKind k) { return k != PhaseKind::kConcurrencySweep; }

// at_demand (docs/plans.md, "Equal-load comparison"): the offered rate every target gets,
// resolved by parse_plan() from the demand or the phase's override (not a plan key).
struct AtDemandLoad {
  double rate_rps = 0;            // offered to every target
  std::string source;             // demand | rate_rps | output_tokens_per_s
  double demand_rps = 0;          // the plan's demand.requests_per_minute / 60; 0: no demand
  double headroom = 0;            // with_headroom: rate = base × (1 + headroom); else 0
  double mean_output_tokens = 0;  // tokens per request for tok/s figures; 0: unknown (dataset)
};

// One phase. Its fields are what every consumer reads (the executor runs this struct): each
// default is given here once.
struct PlanPhase {
  PhaseKind kind = PhaseKind::kConcurrencySweep;
  std::string name;  // defaults to kind (made unique with a suffix)
  int repeat = 1;
  double duration_s = 30;  // each step's measurement window (time mode, requests == 0)
  // Request-count mode (`requests` instead of `duration_s`; concurrency_sweep, rate_sweep and
  // capacity_search's search steps): each step's window holds this many intended requests
  // (docs/plans.md, "Request-count steps"). 0: time mode.
  std::int64_t requests = 0;
  double max_duration_s = 3600;  // request-count mode: the longest a step's window may run
  double warmup_s = 5;
  Drain drain = Drain::kFinish;
  Arrival arrival = Arrival::kPoisson;
  double burstiness = 1;              // gamma shape
  std::int32_t max_in_flight = 4096;  // open loop: cap on requests in flight; parse_plan()
                                      // lowers it to PlanLimits::max_concurrency
  std::vector<std::int32_t> levels;   // concurrency_sweep
  std::vector<double> rates_rps;      // rate_sweep
  // capacity_search
  bool start_from_knee = true;
  // start_from "prediction": start at the rate the plan's prediction in virtual time qualified
  // on this target, moving by 1 + resolution (docs/metrics.md §5.2); the knee (else 1 rps)
  // where the plan cannot be predicted.
  bool start_from_prediction = false;
  double start_rps = 0;
  double low_rps = 0;
  double high_rps = 0;
  double resolution = 0.05;
  int max_steps = 20;
  double confirm_duration_s = 60;
  // burst
  double base_rps = 0;
  double multiplier = 3;
  double burst_s = 10;
  double observe_s = 60;
  // soak
  bool soak_at_qualified = false;
  double rate_rps = 0;   // the soak's rate (unless soak_at_qualified); at_demand: an override
  double window_s = 30;  // burst and soak windows
  // trace_replay: one step per speed-up of the trace's own times (2 = twice as fast)
  std::vector<double> speeds = {1};
  // at_demand: every target at the plan's demand (× (1 + demand.headroom) with with_headroom),
  // unless rate_rps or output_tokens_per_s (÷ the demand's mean output tokens) overrides it.
  bool with_headroom = false;
  double output_tokens_per_s = 0;
  AtDemandLoad at_demand;  // resolved by parse_plan()
};

// The planned length (s) of one step's measurement window. Time mode: duration_s. Request-count
// mode: open loop (rate_rps > 0) requests / rate_rps; closed loop (rate_rps == 0) a guess,
// requests / concurrency × (mean_output_tokens × 50 ms + 0.5 s) — one request's latency on a
// slowish server — since the latency is what the step measures; both capped at max_duration_s.
double planned_window_s(const PlanPhase& p, double rate_rps, std::int32_t concurrency,
                        double mean_output_tokens);
// One request's latency as a plan's estimate guesses it before anything ran: mean output tokens
// × 50 ms + 0.5 s, a slowish server (the closed-loop guess above, drains, confirm lifetimes).
double guessed_request_s(double mean_output_tokens);

struct PlanDemand {
  double requests_per_minute = 0;
  double mean_output_tokens = 0;  // 0 → the workload's output mean (dataset: the measured one)
  double headroom = 0.3;
  double hours_per_month = 730;
};

// Scale-out (`agents`, docs/plans.md "Agents"): each step is split into `count` shards, each run
// by one `llmcapd agent` process, and the shard results are merged into one step result.
// Absent from a plan: the daemon runs every step with its own in-process agent.
struct PlanAgentPlacement {
  std::string spread = "none";  // zone | node | none: spread shard pods over zones / nodes
  std::vector<std::pair<std::string, std::string>> node_selector;  // pod nodeSelector labels
};

struct PlanAgents {
  std::int32_t count = 1;            // shards per step, 1 .. 256
  std::vector<std::string> regions;  // region label per shard, cycled; empty: unlabelled
  PlanAgentPlacement placement;
  std::string launch = "kubernetes";  // kubernetes | manual (the operator starts the agents)
  double max_clock_offset_ms = 5;     // a shard whose measured offset is larger is rejected
  double start_delay_ms = 1000;       // a step's shards start this long after they are published
  double register_timeout_s = 120;    // wait for all `count` agents to register
  double result_timeout_s = 60;       // wait for uploads beyond a step's planned end

  // The region label of shard `index` ("" when no regions were given).
  std::string region_of(std::int32_t index) const {
    if (regions.empty() || index < 0) return "";
    return regions[static_cast<std::size_t>(index) % regions.size()];
  }
};

// `workloads` (docs/plans.md, "Workload matrix"): one named shape of a matrix; every phase runs
// once per workload on every target.
struct PlanNamedWorkload {
  std::string name;       // unique; a-z, 0-9, '_', '.', '-'
  PlanWorkload workload;  // the plan's `workload` with this entry's keys replacing its own
};

struct TestPlan {
  int version = 1;
  std::string name;
  std::string description;
  std::uint64_t seed = 42;
  std::vector<PlanTarget> targets;
  PlanWorkload workload;
  std::vector<PlanNamedWorkload> workloads;  // empty: `workload` alone (no matrix)
  PlanTimeouts timeouts;
  PlanSla sla;
  std::vector<PlanPhase> phases;
  std::optional<PlanDemand> demand;
  std::optional<PlanAgents> agents;  // absent: one in-process agent (the default)
};

// Limits the daemon enforces on submitted plans (from its config).
struct PlanLimits {
  int max_targets = 16;
  std::int32_t max_concurrency = 4096;
  double max_rate_rps = 10'000;
  double max_duration_s = 86'400;  // estimated duration of the whole plan
  int max_phases = 32;
  int max_list_items = 256;         // levels, rates, empirical values, headers
  int max_depth = 32;               // JSON nesting
  std::size_t max_bytes = 1 << 20;  // plan text
  // The simulator profiles a sim://<hardware>/<model> URL may name: an unknown one is refused
  // at /targets/<i>/base_url with the list and the nearest name. api/ cannot read sim/'s
  // catalogue, so server/ fills these from it (sim::ProfileCatalog). Empty: not checked (only
  // the URL's form).
  std::vector<std::string> sim_hardware;
  std::vector<std::string> sim_models;

  // No limit: for re-reading a plan the daemon accepted earlier (under limits that may have
  // been lowered since), never for a submitted one.
  static PlanLimits none() {
    PlanLimits l;
    l.max_targets = 1 << 20;
    l.max_concurrency = 1 << 30;
    l.max_rate_rps = 1e12;
    l.max_duration_s = 1e12;
    l.max_bytes = std::size_t{1} << 40;
    return l;
  }
};

}  // namespace llmcap::api
