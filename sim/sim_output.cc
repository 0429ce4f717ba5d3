#include "sim/sim_output.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "analysis/fnv1a.h"

namespace llmcap::sim {

namespace {

std::uint64_t output_mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// vLLM's check_stop_strings: the first stop string (in the order given) found in the text the
// newest token could have completed. Returns where the text ends, or npos.
std::size_t find_stop(const std::string& text, std::size_t new_chars,
                      const std::vector<std::string>& stops, bool include_stop,
                      const std::string** matched) {
  for (const std::string& stop : stops) {
    const std::size_t from =
        text.size() > new_chars + stop.size() - 1 ? text.size() - new_chars - (stop.size() - 1) : 0;
    const std::size_t at = text.find(stop, from);
    if (at == std::string::npos) continue;
    *matched = &stop;
    return include_stop ? at + stop.size() : at;
  }
  return std::string::npos;
}

}  // namespace

ChoicePlan plan_choice(const GenerationRequest& g, WordGenerator& words,
                       const SimTokenizer& tokenizer) {
  ChoicePlan plan;
  std::string raw;                     // every generated token's text
  std::vector<std::size_t> raw_chars;  // raw.size() after each token
  std::size_t longest_stop = 0;
  for (const auto& s : g.stop) longest_stop = std::max(longest_stop, s.size());
  const std::size_t hold_back =
      g.include_stop_str_in_output || longest_stop == 0 ? 0 : longest_stop - 1;
  std::size_t text_end = std::string::npos;
  for (std::int64_t k = 0; k < g.max_tokens; ++k) {
    std::string token = words.next_token_text();
    const std::vector<std::int64_t> ids = tokenizer.tokenize(token);
    const std::int64_t id = ids.empty() ? 0 : ids.front();
    raw += token;
    raw_chars.push_back(raw.size());
    plan.tokens.push_back(std::move(token));
    plan.token_ids.push_back(id);
    const auto generated = static_cast<std::int64_t>(plan.tokens.size());
    if (generated >= g.min_tokens &&
        std::find(g.stop_token_ids.begin(), g.stop_token_ids.end(), id) != g.stop_token_ids.end()) {
      plan.stopped = true;
      plan.stop_token_id = id;
      text_end = g.include_stop_str_in_output ? raw.size() : raw.size() - plan.tokens.back().size();
      break;
    }
    if (generated > g.min_tokens && !g.stop.empty()) {
      const std::string* matched = nullptr;
      const std::size_t end =
          find_stop(raw, plan.tokens.back().size(), g.stop, g.include_stop_str_in_output, &matched);
      if (end != std::string::npos) {
        plan.stopped = true;
        plan.stop_string = *matched;
        text_end = end;
        break;
      }
    }
  }
  plan.text = text_end == std::string::npos ? raw : raw.substr(0, text_end);
  for (std::size_t k = 0; k < raw_chars.size(); ++k) {
    const bool last = k + 1 == raw_chars.size();
    const std::size_t held = raw_chars[k] > hold_back ? raw_chars[k] - hold_back : 0;
    plan.visible_chars.push_back(last ? plan.text.size() : std::min(held, plan.text.size()));
  }
  return plan;
}

TokenLogprob synthetic_logprob(const std::string& token, std::uint64_t salt, std::int64_t top) {
  const std::uint64_t h = output_mix(analysis::fnv1a_64(token) ^ output_mix(salt));
  // −log p of the sampled token in [0.01, 1.0): p > 1/e > 1/3, so it stays the most likely.
  const double surprise = 0.01 + 0.99 * static_cast<double>(h % 100000) / 100000.0;
  TokenLogprob out;
  out.token = token;
  out.logprob = -surprise;
  if (top <= 0) return out;
  out.top.push_back({token, out.logprob});
  const double rest = 1.0 - std::exp(out.logprob);
  std::unordered_set<std::string> seen{token};
  WordGenerator alternatives(h, salt);
  for (std::int64_t j = 1; j < top; ++j) {
    std::string alt = alternatives.next_token_text();
    while (!seen.insert(alt).second) alt = alternatives.next_token_text();
    out.top.push_back({std::move(alt), std::log(rest * std::ldexp(1.0, -static_cast<int>(j)))});
  }
  return out;
}

}  // namespace llmcap::sim
