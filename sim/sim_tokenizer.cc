#include "sim/sim_tokenizer.h"

#include "analysis/fnv1a.h"

#include <array>

namespace llmcap::sim {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr std::array<std::string_view, 16> kOnsets = {"b", "d", "f", "g", "k", "l", "m",  "n",
                                                      "p", "r", "s", "t", "v", "z", "th", "st"};
constexpr std::array<std::string_view, 8> kVowels = {"a", "e", "i", "o", "u", "ai", "ou", "ea"};

}  // namespace

std::vector<std::int64_t> SimTokenizer::tokenize(std::string_view text) const {
  std::vector<std::int64_t> ids;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > start) {
      ids.push_back(static_cast<std::int64_t>(analysis::fnv1a_64(text.substr(start, i - start)) %
                                              static_cast<std::uint64_t>(vocab_)));
    }
  }
  return ids;
}

std::int64_t SimTokenizer::count(std::string_view text) const {
  std::int64_t n = 0;
  bool in_word = false;
  for (char c : text) {
    if (is_space(c)) {
      in_word = false;
    } else if (!in_word) {
      in_word = true;
      ++n;
    }
  }
  return n;
}

std::string SimTokenizer::render_chat(
    const std::vector<std::pair<std::string, std::string>>& messages) {
  std::string out;
  for (const auto& [role, content] : messages) {
    out.append("<|").append(role).append("|> ").append(content).append("\n");
  }
  out.append("<|assistant|>");
  return out;
}

WordGenerator::WordGenerator(std::uint64_t seed, std::uint64_t request_index, std::uint64_t choice)
    : rng_(splitmix64(seed ^ splitmix64(request_index)) ^
           (choice == 0 ? 0 : splitmix64(choice * 0x9e3779b97f4a7c15ULL))) {}

std::string WordGenerator::next_token_text() {
  const std::uint64_t r = rng_();
  // A new paragraph for one sentence in four (bits 56-57, unused by the word itself).
  std::string word = after_sentence_ && ((r >> 56) & 3) == 0 ? "\n" : " ";
  const int syllables = 1 + static_cast<int>(r % 3);
  for (int s = 0; s < syllables; ++s) {
    word.append(kOnsets[(r >> (8 + s * 8)) % kOnsets.size()]);
    word.append(kVowels[(r >> (12 + s * 8)) % kVowels.size()]);
  }
  after_sentence_ = (r >> 60) == 0;
  if (after_sentence_) word.append(".");
  if ((r >> 60) == 1) word.append(",");
  return word;
}

}  // namespace llmcap::sim
