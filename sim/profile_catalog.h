// ProfileCatalog: the GPUs (HardwareSpec) and models (ModelSpec) the simulator knows, by name.
// Built from the profiles embedded at build time (sim/profiles/*.json) plus any user JSON file
// of the same shape: {"hardware": [{...}], "models": [{...}]}; a user entry with the name of a
// built-in one replaces it. Parsing is strict: unknown keys (other than "_comment"-style keys
// starting with '_') and missing required fields are errors naming the entry and the field.
// Thread safety: const methods are safe concurrently; add_*() needs exclusive access.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model_spec.h"

namespace llmcap::sim {

class ProfileCatalog {
 public:
  // An empty catalog (for tests); most callers want builtin().
  ProfileCatalog() = default;
  // The embedded profiles. Throws std::logic_error if an embedded file is malformed (a build
  // defect, caught by the unit tests).
  static ProfileCatalog builtin();

  // Adds the profiles in JSON text. Returns an error message (naming `source`, the entry and
  // the field) on failure, in which case nothing is added.
  std::optional<std::string> add_json(std::string_view text, std::string_view source);
  // Reads and adds a JSON file. Returns an error message when unreadable or invalid.
  std::optional<std::string> add_file(const std::string& path);

  std::optional<analysis::HardwareSpec> hardware(std::string_view name) const;
  std::optional<analysis::ModelSpec> model(std::string_view name) const;
  std::vector<std::string> hardware_names() const;
  std::vector<std::string> model_names() const;

  // Human-readable table of every GPU and model, for `llmcapd sim --list`.
  std::string listing() const;

 private:
  std::map<std::string, analysis::HardwareSpec, std::less<>> hardware_;
  std::map<std::string, analysis::ModelSpec, std::less<>> models_;
};

}  // namespace llmcap::sim
