#include "agent/dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

namespace llmcap::agent {

using json = nlohmann::json;

namespace {

std::string line_error(std::uint32_t line, const std::string& what) {
  return "dataset line " + std::to_string(line) + ": " + what;
}

}  // namespace

namespace {

std::size_t word_count(std::string_view text) {
  std::size_t words = 0;
  bool in_word = false;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

}  // namespace

Expected<bool> Dataset::add_entry(Dataset& ds, const json& doc, std::uint32_t line_no) {
  using Result = Expected<bool>;
  if (!doc.is_object()) return Result::failure(line_error(line_no, "must be a JSON object"));
  // An OpenAI batch-API line: the request is its "body".
  if (const auto body = doc.find("body"); body != doc.end() && body->is_object() &&
                                          !doc.contains("prompt") && !doc.contains("messages"))
    return add_entry(ds, *body, line_no);
  DatasetEntry e;
  e.line = line_no;
  if (const auto conv = doc.find("conversations"); conv != doc.end()) {
    if (!conv->is_array())
      return Result::failure(line_error(line_no, "\"conversations\" must be an array"));
    std::string prompt, reply;
    bool have_prompt = false, have_reply = false;
    for (std::size_t i = 0; i < conv->size(); ++i) {
      const auto& turn = (*conv)[i];
      if (!turn.is_object() || !turn.contains("value") || !turn["value"].is_string())
        return Result::failure(line_error(
            line_no, "\"conversations\"[" + std::to_string(i) + "] needs a string \"value\""));
      const std::string from = turn.value("from", "");
      if (!have_prompt && (from == "human" || from == "user")) {
        prompt = turn["value"].get<std::string>();
        have_prompt = true;
      } else if (have_prompt && !have_reply && from != "human" && from != "user" &&
                 from != "system") {
        reply = turn["value"].get<std::string>();
        have_reply = true;
      }
    }
    if (!have_prompt || !have_reply || prompt.empty()) {
      ++ds.skipped_;
      return false;
    }
    e.prompt = std::move(prompt);
    e.max_tokens = static_cast<std::int32_t>(std::clamp<double>(
        std::ceil(static_cast<double>(word_count(reply)) * kShareGptTokensPerWord), 1, 1 << 24));
    ds.entries_.push_back(std::move(e));
    return true;
  }
  const auto prompt = doc.find("prompt");
  const auto messages = doc.find("messages");
  if (prompt != doc.end() && messages != doc.end()) {
    return Result::failure(line_error(line_no, "has both \"prompt\" and \"messages\"; give one"));
  }
  if (prompt != doc.end()) {
    if (!prompt->is_string()) {
      return Result::failure(line_error(line_no, "\"prompt\" must be a string"));
    }
    e.prompt = prompt->get<std::string>();
  } else if (messages != doc.end()) {
    if (!messages->is_array() || messages->empty()) {
      return Result::failure(line_error(line_no, "\"messages\" must be a non-empty array"));
    }
    for (std::size_t i = 0; i < messages->size(); ++i) {
      const auto& m = (*messages)[i];
      const std::string where = "\"messages\"[" + std::to_string(i) + "]";
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() ||
          !m.contains("content")) {
        return Result::failure(
            line_error(line_no, where + " must be an object with \"role\" and \"content\""));
      }
    }
    e.messages_json = messages->dump();
    ds.has_messages_ = true;
  } else {
    return Result::failure(line_error(
        line_no, "needs \"prompt\" (string), \"messages\" (array) or \"conversations\" (array)"));
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    const auto mt = doc.find(key);
    if (mt == doc.end()) continue;
    if (!mt->is_number_integer() || mt->get<std::int64_t>() < 1 ||
        mt->get<std::int64_t>() > (1 << 24)) {
      return Result::failure(
          line_error(line_no, "\"" + std::string(key) + "\" must be an integer in 1..16777216"));
    }
    e.max_tokens = mt->get<std::int32_t>();
  }
  if (const auto it = doc.find("input_tokens"); it != doc.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0 ||
        it->get<std::int64_t>() > (1 << 24)) {
      return Result::failure(
          line_error(line_no, "\"input_tokens\" must be a non-negative integer"));
    }
    e.input_tokens_hint = it->get<std::int32_t>();
  }
  ds.entries_.push_back(std::move(e));
  return true;
}

Expected<Dataset> Dataset::parse(std::string_view text) {
  Dataset ds;
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '[') {
    // A whole-file JSON array (the usual ShareGPT file).
    json doc = json::parse(text.begin(), text.end(), nullptr, false);
    if (doc.is_discarded())
      return Expected<Dataset>::failure("dataset: a JSON array file that is not valid JSON");
    for (std::size_t i = 0; i < doc.size(); ++i) {
      auto added = add_entry(ds, doc[i], static_cast<std::uint32_t>(i + 1));
      if (!added) return Expected<Dataset>::failure(added.error());
    }
  } else {
    std::uint32_t line_no = 0;
    std::size_t pos = 0;
    while (pos <= text.size()) {
      const std::size_t nl = text.find('\n', pos);
      std::string_view line =
          text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
      json doc = json::parse(line.begin(), line.end(), nullptr, false);
      if (doc.is_discarded())
        return Expected<Dataset>::failure(line_error(line_no, "invalid JSON"));
      auto added = add_entry(ds, doc, line_no);
      if (!added) return Expected<Dataset>::failure(added.error());
    }
  }
  if (ds.entries_.empty()) {
    return Expected<Dataset>::failure(
        ds.skipped_ > 0 ? "dataset has no usable requests (" + std::to_string(ds.skipped_) +
                              " conversation(s) without a human turn and a reply)"
                        : "dataset has no requests");
  }
  return ds;
}

Expected<std::string> read_request_file(const std::string& path, const DatasetLimits& limits,
                                        std::string_view what) {
  using Result = Expected<std::string>;
  const std::string name = std::string(what) + " file '" + path + "'";
  // Non-blocking open: a FIFO with no writer must not hang the step; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Result::failure("cannot open " + name + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return Result::failure("cannot stat " + name + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Result::failure(name + " is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > limits.max_bytes)
    return Result::failure(name + " is " + std::to_string(st.st_size) +
                           " bytes, over the limit of " + std::to_string(limits.max_bytes));
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Result::failure("cannot read " + name + ": " + std::strerror(errno));
    if (n == 0) break;  // shrank while read
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return text;
}

Expected<Dataset> Dataset::load(const std::string& path, const DatasetLimits& limits) {
  auto text = read_request_file(path, limits, "dataset");
  if (!text) return Expected<Dataset>::failure(text.error());
  auto ds = parse(*text);
  if (!ds) return Expected<Dataset>::failure(path + ": " + ds.error());
  return ds;
}

DatasetCursor::DatasetCursor(const Dataset& dataset, DatasetOrder order, std::uint64_t seed)
    : dataset_(dataset), order_(order), rng_(seed) {}

const DatasetEntry& DatasetCursor::next() {
  const auto& entries = dataset_.entries();
  if (order_ == DatasetOrder::kSample) {
    std::uniform_int_distribution<std::size_t> d(0, entries.size() - 1);
    return entries[d(rng_)];
  }
  const auto& e = entries[position_ % entries.size()];
  ++position_;
  return e;
}

}  // namespace llmcap::agent
