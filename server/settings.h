// Settings: binds the fields of a configuration struct to names, so one table drives the
// config file (JSON object), the environment (LLMCAP_<KEY>) and command-line flags
// (--<key-with-dashes>), plus the help text. Precedence: defaults < file < environment < flags.
// Unknown keys are errors that name the key. Not thread-safe; used at start-up.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace llmcap::server {

// The candidate nearest to `name` by edit distance (insertions, deletions, substitutions and
// swaps of neighbours), when it is close enough to be a typo: at most 1 edit for names up to 4
// characters, 2 up to 8, 3 beyond. "" when none is. Ties go to the first candidate.
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" for closest_name(), or "".
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

class Settings {
 public:
  // prefix: environment prefix, e.g. "LLMCAP_" (empty: the environment is not read).
  explicit Settings(std::string env_prefix = "LLMCAP_");

  void add(std::string key, std::string help, std::string* field);
  void add(std::string key, std::string help, bool* field);
  void add(std::string key, std::string help, int* field);
  void add(std::string key, std::string help, std::int64_t* field);
  void add(std::string key, std::string help, std::uint16_t* field);
  void add(std::string key, std::string help, double* field);
  // Lists: comma-separated in the environment and flags, a JSON array of strings in files.
  void add(std::string key, std::string help, std::vector<std::string>* field);
  // Repeatable: each occurrence of the flag (or the one environment variable) appends its value
  // as it is, commas included (`--set a=1 --set b=2`); a JSON array of strings in files.
  void add_repeated(std::string key, std::string help, std::vector<std::string>* field);

  // Each returns "" on success, else one error message naming the key and the source.
  std::string apply_file(const std::string& path);
  std::string apply_json_text(std::string_view json_text, std::string_view source);
  // Reads LLMCAP_* variables from environ; unknown LLMCAP_* variables are errors, except the
  // names in `ignored` (e.g. LLMCAP_CONFIG, which names the file).
  std::string apply_environment(const std::vector<std::string>& ignored = {});
  // Sets one key from text (a flag's value). Unknown key → error.
  std::string set(std::string_view key, std::string_view value, std::string_view source);
  bool has(std::string_view key) const;
  bool is_bool(std::string_view key) const;
  // The known key nearest to a mistyped one ("" when none is close); see closest_name().
  std::string nearest_key(std::string_view key) const;

  // One line per key: "  --key-name VALUE   help (default: x)".
  std::string help_text() const;

  // Flag name for a key: "max_jobs" → "max-jobs".
  static std::string flag_name(std::string_view key);
  static std::string env_name(std::string_view prefix, std::string_view key);

 private:
  struct Field {
    std::string help;
    std::string type;          // "string", "bool", "int", "number", "list", "repeated"
    std::string default_text;  // rendered at registration
    std::function<std::string(std::string_view)> set_text;  // returns error or ""
    std::function<std::string(const void* json)> set_json;  // nlohmann::json*
  };
  std::string env_prefix_;
  std::map<std::string, Field, std::less<>> fields_;
  std::vector<std::string> order_;
};

// Parses argv-style flags (`--key value`, `--key=value`, `--flag` for bools) into settings.
// Positional arguments are returned in `positional`. Returns "" or the error (unknown flag named).
std::string parse_flags(Settings& settings, const std::vector<std::string>& args,
                        std::vector<std::string>& positional);

}  // namespace llmcap::server
