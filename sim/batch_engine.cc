#include "sim/batch_engine.h"

#include <algorithm>

namespace llmcap::sim {

BatchEngine::BatchEngine(Roofline roofline, EngineConfig config)
    : roofline_(std::move(roofline)), config_(config), pool_(config.kv_pool_blocks) {
  if (config_.block_tokens < 1) config_.block_tokens = 16;
  if (config_.max_num_seqs < 1) config_.max_num_seqs = 1;
  if (config_.max_num_batched_tokens < 1) config_.max_num_batched_tokens = 1;
}

std::int64_t BatchEngine::blocks_for(std::int64_t tokens) const {
  return (tokens + config_.block_tokens - 1) / config_.block_tokens;
}

double BatchEngine::kv_usage() const {
  if (config_.kv_pool_blocks <= 0) return 0;
  return static_cast<double>(config_.kv_pool_blocks - pool_.available()) /
         static_cast<double>(config_.kv_pool_blocks);
}

bool BatchEngine::add(const EngineRequest& request) {
  if (request.prompt_tokens < 1 || request.max_output_tokens < 1) return false;
  if (seqs_.count(request.id)) return false;
  // The last token generated is never written to KV, so the peak is prompt + output − 1.
  if (blocks_for(request.prompt_tokens + request.max_output_tokens - 1) > config_.kv_pool_blocks)
    return false;
  auto seq = std::make_unique<Seq>();
  seq->id = request.id;
  seq->prompt_tokens = request.prompt_tokens;
  seq->max_output_tokens = request.max_output_tokens;
  if (config_.enable_prefix_caching) seq->block_hashes = request.block_hashes;
  waiting_.push_back(seq.get());
  seqs_.emplace(request.id, std::move(seq));
  return true;
}

void BatchEngine::release(Seq* seq) {
  pool_.release(seq->held, seq->blocks - static_cast<std::int64_t>(seq->held.size()));
  seq->held.clear();
  seq->published = 0;
  seq->blocks = 0;
}

bool BatchEngine::admit(Seq* seq, std::int64_t budget, std::int64_t* chunk) {
  std::int64_t hit_blocks = 0;
  std::int64_t evictable = 0;
  if (seq->computed_tokens == 0 && seq->blocks == 0 && !seq->block_hashes.empty()) {
    hit_blocks = pool_.match(seq->block_hashes, (seq->known_tokens() - 1) / config_.block_tokens);
    evictable = pool_.evictable_among(seq->block_hashes, hit_blocks);
  }
  const std::int64_t computed = seq->computed_tokens + hit_blocks * config_.block_tokens;
  const std::int64_t n = std::min(seq->known_tokens() - computed, budget);
  const std::int64_t need = blocks_for(computed + n) - seq->blocks - hit_blocks;
  if (need + evictable > pool_.available()) return false;
  if (seq->computed_tokens == 0 && seq->blocks == 0 && config_.enable_prefix_caching) {
    prefix_queries_total_ += seq->known_tokens();  // vLLM: request.num_tokens
    prefix_hits_total_ += hit_blocks * config_.block_tokens;
  }
  pool_.acquire(seq->block_hashes, hit_blocks);
  seq->held.assign(seq->block_hashes.begin(), seq->block_hashes.begin() + hit_blocks);
  seq->published = static_cast<std::size_t>(hit_blocks);
  seq->computed_tokens = computed;
  seq->blocks += hit_blocks;
  pool_.allocate(need);
  seq->blocks += need;
  *chunk = n;
  return true;
}

void BatchEngine::publish_computed(Seq* seq) {
  const std::size_t full =
      std::min(seq->block_hashes.size(),
               static_cast<std::size_t>(seq->computed_tokens / config_.block_tokens));
  for (; seq->published < full; ++seq->published) {
    const std::uint64_t hash = seq->block_hashes[seq->published];
    if (pool_.publish(hash)) seq->held.push_back(hash);
  }
}

void BatchEngine::preempt(Seq* seq) {
  release(seq);
  seq->computed_tokens = 0;  // recompute: prompt + generated tokens become the new prefill
  running_.erase(std::find(running_.begin(), running_.end(), seq));
  waiting_.push_front(seq);
  ++preemptions_total_;
}

void BatchEngine::cancel(std::uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  Seq* seq = it->second.get();
  release(seq);
  if (auto r = std::find(running_.begin(), running_.end(), seq); r != running_.end())
    running_.erase(r);
  if (auto w = std::find(waiting_.begin(), waiting_.end(), seq); w != waiting_.end())
    waiting_.erase(w);
  seqs_.erase(it);
}

StepOutcome BatchEngine::step() {
  StepOutcome out;
  std::int64_t budget = config_.max_num_batched_tokens;
  std::vector<std::pair<Seq*, std::int64_t>> scheduled;  // (sequence, new tokens)

  // 1. Running requests, oldest first.
  for (std::size_t i = 0; i < running_.size() && budget > 0;) {
    Seq* seq = running_[i];
    const std::int64_t n = std::min(seq->known_tokens() - seq->computed_tokens, budget);
    const std::int64_t need = blocks_for(seq->computed_tokens + n) - seq->blocks;
    bool self_preempted = false;
    while (need > pool_.available()) {
      Seq* victim = running_.back();  // the newest
      out.preempted.push_back(victim->id);
      preempt(victim);
      if (victim == seq) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;  // it was the newest; nothing after it remains
    pool_.allocate(need);
    seq->blocks += need;
    scheduled.emplace_back(seq, n);
    budget -= n;
    ++i;
  }

  // 2. Admit waiting requests, only when nothing was preempted this step (vLLM V1).
  while (out.preempted.empty() && !waiting_.empty() && budget > 0 &&
         static_cast<std::int64_t>(running_.size()) < config_.max_num_seqs) {
    Seq* seq = waiting_.front();
    std::int64_t n = 0;
    if (!admit(seq, budget, &n)) break;
    waiting_.pop_front();
    running_.push_back(seq);
    scheduled.emplace_back(seq, n);
    budget -= n;
  }

  if (scheduled.empty()) return out;
  std::vector<SeqWork> work;
  work.reserve(scheduled.size());
  for (const auto& [seq, n] : scheduled) work.push_back(SeqWork{n, seq->computed_tokens});
  out.cost = roofline_.step(work);
  out.scheduled_seqs = static_cast<std::int64_t>(scheduled.size());
  out.scheduled_tokens = config_.max_num_batched_tokens - budget;

  // 3. Apply: sequences whose KV caught up with their known tokens sample one token.
  for (const auto& [seq, n] : scheduled) {
    seq->computed_tokens += n;
    publish_computed(seq);
    if (seq->computed_tokens < seq->known_tokens()) continue;  // prefill chunk, more to come
    ++seq->generated_tokens;
    out.emitted.push_back(seq->id);
    if (seq->generated_tokens >= seq->max_output_tokens) {
      out.finished.push_back(seq->id);
      release(seq);
      running_.erase(std::find(running_.begin(), running_.end(), seq));
      const std::uint64_t id = seq->id;
      seqs_.erase(id);  // destroys *seq
    }
  }
  return out;
}

SingleRequestPrediction BatchEngine::predict_single(const Roofline& roofline,
                                                    const EngineConfig& config,
                                                    std::int64_t prompt_tokens,
                                                    std::int64_t output_tokens) {
  SingleRequestPrediction p;
  BatchEngine engine(roofline, config);
  if (!engine.add(EngineRequest{1, prompt_tokens, output_tokens})) return p;
  double now_s = 0;
  std::int64_t tokens = 0;
  while (!engine.idle()) {
    const StepOutcome o = engine.step();
    now_s += o.cost.total_s;
    if (!o.emitted.empty()) {
      if (++tokens == 1) p.ttft_s = now_s;
    }
    if (o.scheduled_seqs == 0) break;  // cannot progress (does not fit)
  }
  p.e2e_s = now_s;
  if (tokens >= 2) p.tpot_s = (p.e2e_s - p.ttft_s) / static_cast<double>(tokens - 1);
  return p;
}

}  // namespace llmcap::sim
