#include "agent/prompt_factory.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace llmcap::agent {

namespace {

// Common English words that are one token in the usual BPE vocabularies (with a leading space).
constexpr std::array<std::string_view, 128> kWords = {
    "time",       "year",        "people",  "way",       "day",         "man",       "thing",
    "woman",      "life",        "child",   "world",     "school",      "state",     "family",
    "student",    "group",       "country", "problem",   "hand",        "part",      "place",
    "case",       "week",        "company", "system",    "program",     "question",  "work",
    "government", "number",      "night",   "point",     "home",        "water",     "room",
    "mother",     "area",        "money",   "story",     "fact",        "month",     "lot",
    "right",      "study",       "book",    "eye",       "job",         "word",      "business",
    "issue",      "side",        "kind",    "head",      "house",       "service",   "friend",
    "father",     "power",       "hour",    "game",      "line",        "end",       "member",
    "law",        "car",         "city",    "community", "name",        "president", "team",
    "minute",     "idea",        "kid",     "body",      "information", "back",      "parent",
    "face",       "others",      "level",   "office",    "door",        "health",    "person",
    "art",        "war",         "history", "party",     "result",      "change",    "morning",
    "reason",     "research",    "girl",    "guy",       "moment",      "air",       "teacher",
    "force",      "education",   "foot",    "boy",       "age",         "policy",    "process",
    "music",      "market",      "sense",   "nation",    "plan",        "college",   "interest",
    "death",      "experience",  "effect",  "use",       "class",       "control",   "care",
    "field",      "development", "role",    "effort",    "rate",        "heart",     "drug",
    "show",       "leader"};

}  // namespace

std::size_t PromptFactory::vocabulary_size() { return kWords.size(); }

PromptFactory::PromptFactory(analysis::LengthDistribution input,
                             analysis::LengthDistribution output, std::int32_t shared_prefix_tokens,
                             std::uint64_t seed, std::uint64_t content_seed)
    : input_(std::move(input), seed ^ 0x9e3779b97f4a7c15ULL),
      output_(std::move(output), seed ^ 0xc2b2ae3d27d4eb4fULL),
      shared_prefix_tokens_(shared_prefix_tokens),
      rng_(content_seed != 0 ? content_seed : seed) {}

void PromptFactory::append_words(std::string& out, std::int32_t count) {
  std::uniform_int_distribution<std::size_t> pick(0, kWords.size() - 1);
  for (std::int32_t i = 0; i < count; ++i) {
    if (!out.empty()) out.push_back(' ');
    out.append(kWords[pick(rng_)]);
  }
}

namespace {

// Spells `index` as base-128 vocabulary words, most significant first (at least one word).
void spell_index(std::string& out, std::uint64_t index) {
  std::array<std::string_view, 10> digits{};
  int n = 0;
  do {
    digits[static_cast<std::size_t>(n++)] = kWords[index % kWords.size()];
    index /= kWords.size();
  } while (index > 0 && n < 10);
  for (int i = n - 1; i >= 0; --i) {
    if (!out.empty()) out.push_back(' ');
    out.append(digits[static_cast<std::size_t>(i)]);
  }
}

std::int32_t count_words(std::string_view text) {
  if (text.empty()) return 0;
  std::int32_t n = 1;
  for (char c : text) n += c == ' ' ? 1 : 0;
  return n;
}

}  // namespace

std::string PromptFactory::block_text(std::uint64_t id, std::int32_t words) {
  std::string text;
  if (words <= 0) return text;
  spell_index(text, id);
  std::int32_t used = count_words(text);
  if (used > words) {
    // Fewer words than the id needs: keep the last (least significant) ones.
    std::size_t cut = 0;
    for (std::int32_t extra = used - words; extra > 0; --extra) cut = text.find(' ', cut) + 1;
    text.erase(0, cut);
    return text;
  }
  // Seeded by the id alone (a splitmix of it), never by the step or the plan.
  std::mt19937_64 rng(id * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL);
  std::uniform_int_distribution<std::size_t> pick(0, kWords.size() - 1);
  for (; used < words; ++used) {
    text.push_back(' ');
    text.append(kWords[pick(rng)]);
  }
  return text;
}

PromptItem PromptFactory::from_blocks(std::uint64_t index, std::int32_t input_tokens,
                                      std::int32_t output_tokens,
                                      const std::vector<std::uint64_t>& hash_ids,
                                      std::int32_t block_tokens,
                                      const LengthCalibrator& calibrator) {
  PromptItem item;
  item.planned_input_tokens = input_tokens;
  item.planned_output_tokens = output_tokens;
  if (block_words_ < 0) block_words_ = std::max(1, calibrator.words_for_raw(block_tokens));
  const std::int32_t total_words = calibrator.words_for(input_tokens);
  const std::size_t whole_blocks =
      block_tokens > 0 ? std::min<std::size_t>(
                             hash_ids.size(), static_cast<std::size_t>(input_tokens / block_tokens))
                       : 0;
  std::string text;
  for (std::size_t b = 0; b < whole_blocks; ++b) {
    if (!text.empty()) text.push_back(' ');
    text.append(block_text(hash_ids[b], block_words_));
  }
  std::int32_t used = static_cast<std::int32_t>(whole_blocks) * block_words_;
  const std::size_t before = text.size();
  append_index(text, index);
  used += count_words(std::string_view(text).substr(before + (before > 0 ? 1 : 0)));
  if (total_words > used) append_words(text, total_words - used);
  item.words = std::max(total_words, used);
  item.prompt = std::move(text);
  return item;
}

void PromptFactory::append_index(std::string& out, std::uint64_t index) { spell_index(out, index); }

PlannedLengths PromptFactory::next_lengths() {
  PlannedLengths lengths;
  lengths.input_tokens = input_.next();
  lengths.output_tokens = output_.next();
  return lengths;
}

std::string PromptFactory::group_prefix_text(int group, std::int32_t words) {
  return block_text(static_cast<std::uint64_t>(group), words);
}

PlannedLengths PromptFactory::lengths_at(std::uint64_t key) const {
  return {input_.at(key), output_.at(key)};
}

PromptItem PromptFactory::next(std::uint64_t index, const LengthCalibrator& calibrator,
                               int prefix_group, std::int32_t group_prefix_tokens) {
  return make(index, next_lengths(), calibrator, prefix_group, group_prefix_tokens);
}

PromptItem PromptFactory::make(std::uint64_t index, PlannedLengths lengths,
                               const LengthCalibrator& calibrator, int prefix_group,
                               std::int32_t group_prefix_tokens) {
  PromptItem item;
  item.planned_input_tokens = lengths.input_tokens;
  item.planned_output_tokens = lengths.output_tokens;
  const std::int32_t total_words = calibrator.words_for(item.planned_input_tokens);
  if (prefix_group >= 0 && group_prefix_tokens > 0) {
    // Fixed at the group's first prompt from the calibration, so it stays identical.
    const auto g = static_cast<std::size_t>(prefix_group);
    if (group_prefixes_.size() <= g) group_prefixes_.resize(g + 1);
    if (group_prefixes_[g].empty())
      group_prefixes_[g] = group_prefix_text(
          prefix_group, std::max(1, calibrator.words_for_raw(group_prefix_tokens)));
    std::string text = group_prefixes_[g];
    std::int32_t used = count_words(text);
    const std::size_t before = text.size();
    append_index(text, index);
    used += count_words(std::string_view(text).substr(before + 1));
    if (total_words > used) append_words(text, total_words - used);
    item.words = std::max(total_words, used);
    item.prompt = std::move(text);
    return item;
  }
  if (shared_prefix_tokens_ > 0 && prefix_words_ < 0) {
    // Built once per step from the calibration at the first prompt, so it stays identical.
    prefix_words_ = calibrator.words_for_raw(shared_prefix_tokens_);
    std::mt19937_64 saved = rng_;
    rng_.seed(0x5eed5eedULL);
    append_words(prefix_, prefix_words_);
    rng_ = saved;
  }
  std::string text;
  std::int32_t used = 0;
  if (prefix_words_ > 0) {
    text = prefix_;
    used = prefix_words_;
  }
  const std::size_t before = text.size();
  append_index(text, index);
  std::int32_t index_words = 0;
  for (std::size_t i = before; i < text.size(); ++i) index_words += text[i] == ' ' ? 1 : 0;
  if (before == 0) index_words += 1;
  used += index_words;
  if (total_words > used) append_words(text, total_words - used);
  item.words = std::max(total_words, used);
  item.prompt = std::move(text);
  return item;
}

std::string PromptFactory::probe_text(std::int32_t words, std::uint64_t salt) {
  std::string text;
  append_index(text, salt);
  std::int32_t used = 1;
  for (char c : text) used += c == ' ' ? 1 : 0;
  if (words > used) append_words(text, words - used);
  return text;
}

}  // namespace llmcap::agent
