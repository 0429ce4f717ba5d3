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

// How a user raises the limit, named in the refusal.
std::string limit_setting_text() {
  return "raise it with llmcapd run --max-dataset-mib, or the daemon's max_dataset_mib / "
         "LLMCAP_MAX_DATASET_MIB";
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

// Reads a dataset from consecutive chunks of its text with memory bounded by the largest
// request (a JSONL line or one element of a top-level JSON array), never by the file: a 640 MB
// ShareGPT file is scanned element by element, each parsed alone (nlohmann's DOM of the whole
// array took several times the file's size). Array elements are delimited by a scanner that
// follows strings (with escapes) and bracket depth; each element is then parsed, so malformed
// JSON inside one is still found.
class Dataset::Reader {
 public:
  explicit Reader(Dataset& ds) : ds_(ds) {}

  // False (error() set) at the first problem; later calls do nothing.
  bool feed(std::string_view chunk) {
    for (std::size_t i = 0; i < chunk.size() && error_.empty(); ++i) take(chunk[i]);
    return error_.empty();
  }

  bool finish() {
    if (!error_.empty()) return false;
    if (mode_ == Mode::kLines) {
      if (!line_.empty()) end_line();
    } else if (mode_ == Mode::kArray && !closed_) {
      fail("dataset: a JSON array file that is not valid JSON (it ends before its closing ']')");
    }
    return error_.empty();
  }

  const std::string& error() const { return error_; }

 private:
  enum class Mode { kUnknown, kLines, kArray };

  void fail(std::string what) {
    if (error_.empty()) error_ = std::move(what);
  }

  void take(char c) {
    if (mode_ == Mode::kUnknown) {
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        if (c == '\n')
          end_line();  // leading blank lines still count for JSONL line numbers
        else
          line_ += c;
        return;
      }
      if (c == '[') {
        mode_ = Mode::kArray;
        line_.clear();
        return;
      }
      mode_ = Mode::kLines;
    }
    if (mode_ == Mode::kLines) {
      if (c == '\n') {
        end_line();
      } else {
        line_ += c;
      }
      return;
    }
    take_array(c);
  }

  void end_line() {
    ++line_no_;
    std::string_view line = line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      const json doc = json::parse(line.begin(), line.end(), nullptr, false);
      if (doc.is_discarded()) {
        fail(line_error(line_no_, "invalid JSON"));
      } else if (auto added = add_entry(ds_, doc, line_no_); !added) {
        fail(added.error());
      }
    }
    line_.clear();
  }

  // Inside the top-level array: between elements (depth 0) only whitespace, commas and the
  // closing ']' may come; an element is a value whose depth returns to 0.
  void take_array(char c) {
    if (closed_) {
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
        fail("dataset: a JSON array file that is not valid JSON (text after its closing ']')");
      return;
    }
    if (depth_ == 0 && !in_scalar_) {
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') return;
      if (c == ',') {
        if (!after_element_) fail(array_error("a ',' where an element should be"));
        after_element_ = false;
        return;
      }
      if (c == ']') {
        if (elements_ > 0 && !after_element_) fail(array_error("a ',' before the closing ']'"));
        closed_ = true;
        return;
      }
      if (after_element_) {
        fail(array_error("elements not separated by ','"));
        return;
      }
      element_.clear();
      if (c == '{' || c == '[') {
        depth_ = 1;
      } else if (c == '"') {
        depth_ = 1;  // a string element: ends with its closing quote
        in_string_ = true;
        string_element_ = true;
      } else {
        in_scalar_ = true;  // a number, true, false or null: not a request, add_entry says so
      }
      element_ += c;
      return;
    }
    if (in_scalar_) {
      if (c == ',' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        in_scalar_ = false;
        end_element();
        take_array(c);
        return;
      }
      element_ += c;
      return;
    }
    element_ += c;
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
        if (string_element_) {
          string_element_ = false;
          depth_ = 0;
          end_element();
        }
      }
      return;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) end_element();
    }
  }

  void end_element() {
    ++elements_;
    after_element_ = true;
    const json doc = json::parse(element_, nullptr, false);
    if (doc.is_discarded()) {
      fail(array_error("element " + std::to_string(elements_) + " is not valid JSON"));
    } else if (auto added = add_entry(ds_, doc, static_cast<std::uint32_t>(elements_)); !added) {
      fail(added.error());
    }
    element_.clear();
  }

  std::string array_error(const std::string& what) const {
    return "dataset: a JSON array file that is not valid JSON (" + what + ")";
  }

  Dataset& ds_;
  Mode mode_ = Mode::kUnknown;
  std::string error_;
  // JSONL
  std::string line_;
  std::uint32_t line_no_ = 0;
  // top-level array
  std::string element_;
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false, string_element_ = false, in_scalar_ = false;
  bool after_element_ = false, closed_ = false;
  std::uint64_t elements_ = 0;
};

namespace {

Expected<Dataset> finished(Dataset&& ds) {
  if (ds.entries().empty()) {
    return Expected<Dataset>::failure(
        ds.skipped() > 0 ? "dataset has no usable requests (" + std::to_string(ds.skipped()) +
                               " conversation(s) without a human turn and a reply)"
                         : "dataset has no requests");
  }
  return std::move(ds);
}

}  // namespace

Expected<Dataset> Dataset::parse(std::string_view text) {
  Dataset ds;
  Reader reader(ds);
  if (!reader.feed(text) || !reader.finish()) return Expected<Dataset>::failure(reader.error());
  return finished(std::move(ds));
}

Expected<int> open_request_file(const std::string& path, const DatasetLimits& limits,
                                std::string_view what) {
  using Result = Expected<int>;
  const std::string name = std::string(what) + " file '" + path + "'";
  // Non-blocking open: a FIFO with no writer must not hang the step; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Result::failure("cannot open " + name + ": " + std::strerror(errno));
  struct stat st {};
  std::string problem;
  if (::fstat(fd, &st) != 0) {
    problem = "cannot stat " + name + ": " + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    problem = name + " is not a regular file";
  } else if (static_cast<std::uint64_t>(st.st_size) > limits.max_bytes) {
    problem = name + " is " + std::to_string(st.st_size) + " bytes, over the limit of " +
              std::to_string(limits.max_bytes) + " (" + limit_setting_text() + ")";
  }
  if (!problem.empty()) {
    ::close(fd);
    return Result::failure(problem);
  }
  return fd;
}

Expected<std::string> read_request_file(const std::string& path, const DatasetLimits& limits,
                                        std::string_view what) {
  using Result = Expected<std::string>;
  auto file = open_request_file(path, limits, what);
  if (!file) return Result::failure(file.error());
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{*file};
  struct stat st {};
  ::fstat(*file, &st);
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(*file, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Result::failure("cannot read " + std::string(what) + " file '" + path +
                             "': " + std::strerror(errno));
    if (n == 0) break;  // shrank while read
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return text;
}

Expected<Dataset> Dataset::load(const std::string& path, const DatasetLimits& limits) {
  using Result = Expected<Dataset>;
  auto file = open_request_file(path, limits, "dataset");
  if (!file) return Result::failure(file.error());
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{*file};
  Dataset ds;
  Reader reader(ds);
  std::string chunk(std::max<std::size_t>(1, limits.read_chunk_bytes), '\0');
  for (;;) {
    const ssize_t n = ::read(*file, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Result::failure("cannot read dataset file '" + path + "': " + std::strerror(errno));
    if (n == 0) break;
    if (!reader.feed(std::string_view(chunk.data(), static_cast<std::size_t>(n))))
      return Result::failure(path + ": " + reader.error());
  }
  if (!reader.finish()) return Result::failure(path + ": " + reader.error());
  auto done = finished(std::move(ds));
  if (!done) return Result::failure(path + ": " + done.error());
  return done;
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
