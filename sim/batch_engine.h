// BatchEngine: a virtual-time model of a vLLM-style continuous-batching scheduler (V1 style,
// docs/metrics.md §7). Each step() is one iteration: it schedules running requests first (oldest
// first, one decode token each or a prefill chunk), then admits waiting requests FIFO while there
// are sequence slots (max_num_seqs), token budget (max_num_batched_tokens, chunked prefill) and
// free KV blocks; when a running request needs a block and the pool is empty it preempts the newest
// running request (frees its blocks; it is recomputed later from its prompt plus the tokens
// generated so far). A request whose computed tokens catch up with its known tokens emits one
// new token at the end of the step. The step's duration comes from the Roofline.
//
// Automatic prefix caching (vLLM V1, on unless EngineConfig::enable_prefix_caching is false): a
// request brings one chained hash per full 16-token block of its prompt; when it is admitted
// from scratch (new or preempted) it takes the longest run of cached blocks (at most
// (prompt − 1) / block tokens: the last token is always computed, as in vLLM) and only the rest
// is prefilled. Full blocks are published to the cache as they are computed — prompt blocks and,
// when the caller's hashes go on over the tokens the request will generate (the simulator's
// server knows its seeded output in advance), output blocks too, as vLLM caches every full block
// of prompt + output; released blocks stay cached until the pool needs them (KvBlockPool: LRU
// eviction). A later request whose prompt repeats an earlier prompt and its answer (the next
// turn of a conversation) finds them.
//
// Pure and synchronous: no clocks, no I/O; the caller (SimEngineRunner) maps steps onto real
// timers. Not thread-safe: use from one strand.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sim/kv_block_pool.h"
#include "sim/roofline.h"

namespace llmcap::sim {

struct EngineConfig {
  std::int64_t max_num_seqs = 256;             // running-set size cap (vLLM max_num_seqs)
  std::int64_t max_num_batched_tokens = 2048;  // tokens per step (vLLM max_num_batched_tokens)
  std::int64_t block_tokens = 16;              // paged-attention block size
  std::int64_t kv_pool_blocks = 0;             // KV blocks available (from MemoryFit)
  bool enable_prefix_caching = true;           // vLLM --enable-prefix-caching (V1 default on)
};

struct EngineRequest {
  std::uint64_t id = 0;
  std::int64_t prompt_tokens = 0;      // >= 1
  std::int64_t max_output_tokens = 0;  // >= 1; the simulated model never stops early
  // prefix_block_hashes() of the prompt's token ids, optionally continued over the output's
  // (append_block_hashes()); empty = nothing shareable.
  std::vector<std::uint64_t> block_hashes = {};
};

struct StepOutcome {
  StepCost cost;                         // duration is cost.total_s (0 when nothing ran)
  std::vector<std::uint64_t> emitted;    // requests that produced one token this step
  std::vector<std::uint64_t> finished;   // subset of emitted whose last token this was
  std::vector<std::uint64_t> preempted;  // requests evicted this step (recomputed later)
  std::int64_t scheduled_seqs = 0;
  std::int64_t scheduled_tokens = 0;
};

struct SingleRequestPrediction {
  double ttft_s = 0;  // arrival at an idle engine → first token
  double tpot_s = 0;  // mean gap between later tokens
  double e2e_s = 0;   // arrival → last token
};

class BatchEngine {
 public:
  BatchEngine(Roofline roofline, EngineConfig config);

  // Queues a request. Returns false (and ignores it) when the id is already known, lengths are
  // < 1, or it could never fit in the KV pool.
  bool add(const EngineRequest& request);
  // Drops a request (client gone); frees its blocks. Unknown ids are ignored.
  void cancel(std::uint64_t id);
  // Runs one iteration.
  StepOutcome step();

  bool idle() const { return running_.empty() && waiting_.empty(); }
  std::int64_t running() const { return static_cast<std::int64_t>(running_.size()); }
  std::int64_t waiting() const { return static_cast<std::int64_t>(waiting_.size()); }
  // Blocks an allocation may take: free plus cached blocks no request holds.
  std::int64_t free_blocks() const { return pool_.available(); }
  double kv_usage() const;  // (total − free_blocks()) / total, 0..1 (vLLM's definition)
  // Tokens looked up in the prefix cache at admission, and those found (vLLM's
  // prefix_cache_queries / prefix_cache_hits): the prompt, and for a preempted request readmitted
  // (which counts again) its prompt and the tokens it had generated, as vLLM counts
  // request.num_tokens.
  std::int64_t prefix_cache_queries_total() const { return prefix_queries_total_; }
  std::int64_t prefix_cache_hits_total() const { return prefix_hits_total_; }
  const KvBlockPool& pool() const { return pool_; }
  std::int64_t preemptions_total() const { return preemptions_total_; }
  const Roofline& roofline() const { return roofline_; }
  const EngineConfig& config() const { return config_; }

  // The model's own prediction for one request alone on an idle engine, by running a fresh
  // engine in virtual time.
  static SingleRequestPrediction predict_single(const Roofline& roofline,
                                                const EngineConfig& config,
                                                std::int64_t prompt_tokens,
                                                std::int64_t output_tokens);

 private:
  struct Seq {
    std::uint64_t id = 0;
    std::int64_t prompt_tokens = 0;
    std::int64_t max_output_tokens = 0;
    std::int64_t generated_tokens = 0;
    std::int64_t computed_tokens = 0;  // tokens whose KV is in the cache
    std::int64_t blocks = 0;           // blocks in its table: held cached ones + private ones
    std::vector<std::uint64_t> block_hashes;
    std::vector<std::uint64_t> held;  // cached blocks it holds a reference on
    std::size_t published = 0;        // prompt blocks already offered to the cache
    std::int64_t known_tokens() const { return prompt_tokens + generated_tokens; }
  };

  std::int64_t blocks_for(std::int64_t tokens) const;
  void preempt(Seq* seq);
  void release(Seq* seq);
  // Admission from scratch: takes the cached prefix. Returns false when the first chunk does not
  // fit (nothing changed).
  bool admit(Seq* seq, std::int64_t budget, std::int64_t* chunk);
  void publish_computed(Seq* seq);

  Roofline roofline_;
  EngineConfig config_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Seq>> seqs_;
  std::vector<Seq*> running_;  // admission order, oldest first
  std::deque<Seq*> waiting_;   // FIFO; preempted requests go back to the front
  KvBlockPool pool_;
  std::int64_t preemptions_total_ = 0;
  std::int64_t prefix_queries_total_ = 0;
  std::int64_t prefix_hits_total_ = 0;
};

}  // namespace llmcap::sim
