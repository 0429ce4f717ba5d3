#include "agent/dataset.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace llmcap::agent {

using json = nlohmann::json;

namespace {

std::string line_error(std::uint32_t line, const std::string& what) {
  return "dataset line " + std::to_string(line) + ": " + what;
}

}  // namespace

Expected<Dataset> Dataset::parse(std::string_view jsonl) {
  Dataset ds;
  std::uint32_t line_no = 0;
  std::size_t pos = 0;
  while (pos <= jsonl.size()) {
    const std::size_t nl = jsonl.find('\n', pos);
    std::string_view line =
        jsonl.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? jsonl.size() + 1 : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    json doc = json::parse(line.begin(), line.end(), nullptr, false);
    if (doc.is_discarded()) return Expected<Dataset>::failure(line_error(line_no, "invalid JSON"));
    if (!doc.is_object()) {
      return Expected<Dataset>::failure(line_error(line_no, "must be a JSON object"));
    }
    DatasetEntry e;
    e.line = line_no;
    const auto prompt = doc.find("prompt");
    const auto messages = doc.find("messages");
    if (prompt != doc.end() && messages != doc.end()) {
      return Expected<Dataset>::failure(
          line_error(line_no, "has both \"prompt\" and \"messages\"; give one"));
    }
    if (prompt != doc.end()) {
      if (!prompt->is_string()) {
        return Expected<Dataset>::failure(line_error(line_no, "\"prompt\" must be a string"));
      }
      e.prompt = prompt->get<std::string>();
    } else if (messages != doc.end()) {
      if (!messages->is_array() || messages->empty()) {
        return Expected<Dataset>::failure(
            line_error(line_no, "\"messages\" must be a non-empty array"));
      }
      for (std::size_t i = 0; i < messages->size(); ++i) {
        const auto& m = (*messages)[i];
        const std::string where = "\"messages\"[" + std::to_string(i) + "]";
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string() ||
            !m.contains("content")) {
          return Expected<Dataset>::failure(
              line_error(line_no, where + " must be an object with \"role\" and \"content\""));
        }
      }
      e.messages_json = messages->dump();
      ds.has_messages_ = true;
    } else {
      return Expected<Dataset>::failure(
          line_error(line_no, "needs \"prompt\" (string) or \"messages\" (array)"));
    }
    if (const auto mt = doc.find("max_tokens"); mt != doc.end()) {
      if (!mt->is_number_integer() || mt->get<std::int64_t>() < 1 ||
          mt->get<std::int64_t>() > (1 << 24)) {
        return Expected<Dataset>::failure(
            line_error(line_no, "\"max_tokens\" must be an integer in 1..16777216"));
      }
      e.max_tokens = mt->get<std::int32_t>();
    }
    if (const auto it = doc.find("input_tokens"); it != doc.end()) {
      if (!it->is_number_integer() || it->get<std::int64_t>() < 0) {
        return Expected<Dataset>::failure(
            line_error(line_no, "\"input_tokens\" must be a non-negative integer"));
      }
      e.input_tokens_hint = it->get<std::int32_t>();
    }
    ds.entries_.push_back(std::move(e));
  }
  if (ds.entries_.empty()) return Expected<Dataset>::failure("dataset has no requests");
  return ds;
}

Expected<Dataset> Dataset::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Expected<Dataset>::failure("cannot open dataset file '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  auto ds = parse(ss.str());
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
