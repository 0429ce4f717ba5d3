// StepSpec: everything the load generator needs to run one step of a plan — the target, the
// workload, the load shape, timing and seed. A plain value built by server/ from the plan
// JSON; validate() names every bad field. Thread-safe to read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/api_kind.h"
#include "agent/arrival_process.h"
#include "agent/conversation.h"
#include "agent/dataset.h"
#include "agent/rate_profile.h"
#include "agent/tls_options.h"
#include "agent/trace.h"
#include "analysis/length_distribution.h"
#include "net/http_message.h"

namespace llmcap::agent {

struct TargetSpec {
  std::string base_url;  // "http[s]://host[:port][/prefix]" (no /v1)
  ApiKind api = ApiKind::kCompletions;
  std::string model;        // empty: the first id from GET /v1/models
  net::HeaderList headers;  // extra request headers, e.g. {"Authorization", "Bearer …"}
  TlsOptions tls;
  bool stream = true;  // false: non-streaming (E2E only, no TTFT/ITL)
  // The daemon's target_allowlist (net/address_filter.h): the host's addresses are checked
  // again when they are resolved for a connection. Empty: any address (`llmcapd run`).
  std::vector<std::string> address_allowlist;
};

struct DeadlineSpec {                     // 0 = no deadline (except connect, which always has one)
  std::int64_t connect_ms = 10'000;       // TCP connect + TLS → kTimeoutConnect
  std::int64_t first_token_ms = 120'000;  // from request start → kTimeoutFirstToken
  std::int64_t idle_ms = 30'000;          // gap between events after the first token
  std::int64_t total_ms = 600'000;        // whole request → kTimeoutTotal
};

enum class WorkloadSource { kSynthetic, kDataset, kTrace };

// User abandonment (docs/plans.md, "Abandonment"): a share of the requests is cancelled by the
// client once `after_ms` have passed since its intended send time, or once `after_tokens` token
// events have arrived (exactly one of the two is > 0). Which requests: abandons() below.
struct AbandonSpec {
  double share = 0;               // 0..1; 0 = no request is abandoned
  std::int64_t after_ms = 0;      // > 0: abandoned this long after t_intended
  std::int32_t after_tokens = 0;  // > 0: abandoned after this many token events
  bool enabled() const { return share > 0 && (after_ms > 0 || after_tokens > 0); }
};

// Whether the client abandons request `index` of a step seeded `seed`: a pure function of the
// two (a hash compared with the share), so the same plan abandons the same requests on every
// run and every target, independently of how fast the target answers.
bool abandons(const AbandonSpec& abandon, std::uint64_t seed, std::uint64_t index);

// workload.prefix_groups (docs/plans.md, "Prefix groups"): a share of the traffic whose prompts
// all start with the same prefix_tokens-token prefix (a system prompt or RAG template); groups'
// prefixes differ from their first token.
struct PrefixGroup {
  double share = 0;                // fraction of requests; the groups' shares sum to 1
  std::int32_t prefix_tokens = 0;  // >= 1
};

// The group of request `index` of a step seeded `seed`, or -1 without groups: a pure function of
// the two (like abandons()), so the real and the virtual-time runs pick the same groups.
int prefix_group_of(const std::vector<PrefixGroup>& groups, std::uint64_t seed,
                    std::uint64_t index);

// workload.mix (docs/plans.md, "Workload mixes"): classes of requests with their own lengths,
// sent together in one step; each request belongs to one class (mix_class_of()).
struct MixClassSpec {
  std::string name;
  double weight = 0;  // share of requests; the classes' weights sum to 1
  analysis::LengthDistribution input_tokens = analysis::LengthDistribution::fixed(256);
  analysis::LengthDistribution output_tokens = analysis::LengthDistribution::fixed(128);
  std::int32_t prefix_tokens = 0;  // > 0: every prompt of the class starts with its own prefix
};

// The class of request `index` of a step seeded `seed`, or -1 without a mix: a pure function of
// the two (like prefix_group_of(), with its own salt), so the real and the virtual-time runs
// pick the same classes, and the executor finds each sample's class from its index.
int mix_class_of(const std::vector<MixClassSpec>& mix, std::uint64_t seed, std::uint64_t index);
// The seed of class `c`'s own prompt factory (its lengths are drawn in the class's own order),
// and the prefix group id its prefix text is made from (PromptFactory::group_prefix_text: one
// vocabulary word apart from every workload.prefix_groups group), shared by both runners.
std::uint64_t mix_class_seed(std::uint64_t seed, std::size_t c);
inline constexpr int kMixPrefixGroupBase = 100;
inline constexpr std::size_t kMaxMixClasses = 16;

struct WorkloadSpec {
  WorkloadSource source = WorkloadSource::kSynthetic;
  analysis::LengthDistribution input_tokens = analysis::LengthDistribution::fixed(256);
  analysis::LengthDistribution output_tokens = analysis::LengthDistribution::fixed(128);
  std::int32_t shared_prefix_tokens = 0;   // identical prefix across prompts (prefix-cache tests)
  std::vector<PrefixGroup> prefix_groups;  // synthetic only; exclusive with shared_prefix_tokens
  bool ignore_eos = true;                  // enforce output length (docs/metrics.md §9.2)
  bool send_min_tokens = false;            // also send min_tokens = max_tokens (vLLM)
  std::optional<double> temperature = 0.0;
  std::string extra_body_json;                     // JSON object merged into every body
  std::string dataset_path;                        // JSONL (source = kDataset)
  std::uint64_t dataset_max_bytes = 256ULL << 20;  // larger files are refused when the step loads
  DatasetOrder dataset_order = DatasetOrder::kSample;
  bool calibrate = true;                 // synthetic: calibrate words→tokens on the target
  double default_tokens_per_word = 1.3;  // used when calibration is off or impossible
  // source = kTrace: a timestamped trace (agent/trace.h). Each request takes its lengths and
  // shared blocks from the next record: in a trace-replay load (LoadKind::kTrace) at the
  // record's time, in any other load in trace order (wrapping).
  std::string trace_path;
  TraceFormat trace_format = TraceFormat::kMooncake;
  std::int32_t trace_block_tokens = 512;  // tokens per hash_ids block (Mooncake: 512)
  TraceWindow trace_window;               // the part of the trace replayed
  AbandonSpec abandon;
  // Multi-turn sessions (agent/conversation.h); synthetic only. Enabled: each request is a turn,
  // a closed-loop slot is a user holding one session after another and an open-loop arrival
  // starts a session.
  ConversationSpec conversation;
  // Synthetic only; exclusive with prefix_groups and shared_prefix_tokens. Non-empty: each
  // request's lengths come from its class, not from input_tokens / output_tokens.
  std::vector<MixClassSpec> mix;

  // Planned mean input / output length: the classes' weighted nominal means with a mix, else
  // input_tokens' / output_tokens'.
  double planned_input_mean() const;
  double planned_output_mean() const;
};

// kTrace: open loop at the trace's own times (workload source kTrace), trace_speed times faster;
// the window is warmup_s .. warmup_s + duration_s as for every load, and `rate` is only the
// average rate offered in it (for judging).
enum class LoadKind { kClosed, kOpen, kTrace };

struct LoadSpec {
  LoadKind kind = LoadKind::kClosed;
  std::int32_t concurrency = 1;                   // closed loop: requests kept in flight
  RateProfile rate = RateProfile::constant(1.0);  // open loop: offered rate over time
  InterArrival inter_arrival = InterArrival::kPoisson;
  double burstiness = 1.0;              // gamma shape (1 = Poisson)
  std::int32_t in_flight_cap = 10'000;  // open loop safety valve; arrivals
                                        // beyond it are dropped and counted
  double trace_speed = 1.0;             // kTrace: 2 = the trace replayed twice as fast
};

enum class DrainPolicy {
  kWait,    // at the end of the window stop sending and let in-flight requests finish
            // (up to drain_timeout_s, then cancel)
  kCancel,  // cancel in-flight requests at the end of the window
};

struct StepSpec {
  TargetSpec target;
  DeadlineSpec deadlines;
  WorkloadSpec workload;
  LoadSpec load;
  double warmup_s = 0;     // requests intended before this are warm-up
  double duration_s = 60;  // measurement window length after warm-up (with window_requests:
                           // the longest it may run)
  // > 0: a request-count window (docs/plans.md, "Request-count steps") that ends once this many
  // requests were intended in it. Closed loop: at the instant the next one would start (a slot
  // freed), so it holds exactly N and N / length estimates the rate without bias. Open loop:
  // where the offered rate's expected arrivals after warm-up reach N (N / rate at a constant
  // rate), the schedule conditioned on exactly N arrivals there. Either way duration_s caps it
  // (then fewer than N).
  std::int64_t window_requests = 0;
  DrainPolicy drain = DrainPolicy::kWait;
  double drain_timeout_s = 60;
  std::uint64_t seed = 1;
  // Seeds the prompts' words only (0: seed). Steps that share their draws (arrivals, lengths,
  // classes: the same seed at every rate of a capacity search, for common random numbers) still
  // send text no server has seen, so prefix caches cannot make a later step fast.
  std::uint64_t content_seed = 0;
  bool record_token_times = false;
  std::int64_t progress_interval_ms = 1000;
  std::int64_t in_flight_sample_ms = 100;
};

// Length (s) of the measurement window `spec` plans: duration_s, or for an open-loop
// request-count window the time its N arrivals take at the offered rate, at most duration_s.
// A closed-loop request-count window ends when it ends: duration_s (its cap) is returned.
double planned_window_s(const StepSpec& spec);

// A trace replay (LoadKind::kTrace) of `trace` (already windowed) at `speed`: the length (s) of
// the measurement window that holds every arrival after warmup_s — up to 1 ms past the last one
// — and how many arrivals it holds. At least 1 ms long.
struct TraceWindowPlan {
  double window_s = 0.001;
  std::uint64_t arrivals = 0;
};
TraceWindowPlan plan_trace_window(const Trace& trace, double speed, double warmup_s);

// Every problem found, each naming its field ("load.concurrency: must be ≥ 1"). Empty = valid.
std::vector<std::string> validate(const StepSpec& spec);

}  // namespace llmcap::agent
