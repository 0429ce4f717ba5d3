#include "storage/migration.h"

#include <charconv>

namespace llmcap::storage {

Result<Migration> parse_migration(std::string_view file_name, std::string_view sql) {
  auto invalid = [&](std::string_view why) {
    return Status(ErrorCode::kInvalid, "migration file '" + std::string(file_name) +
                                           "': " + std::string(why) + " (expected NNNN_name.sql)");
  };
  constexpr std::string_view kSuffix = ".sql";
  if (file_name.size() <= kSuffix.size() || !file_name.ends_with(kSuffix)) {
    return invalid("does not end in .sql");
  }
  const std::string_view stem = file_name.substr(0, file_name.size() - kSuffix.size());
  const std::size_t underscore = stem.find('_');
  if (underscore == std::string_view::npos || underscore == 0) {
    return invalid("no version number before '_'");
  }
  const std::string_view digits = stem.substr(0, underscore);
  for (char c : digits) {
    if (c < '0' || c > '9') return invalid("version is not a number");
  }
  int version = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), version);
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    return invalid("version number out of range");
  }
  if (version <= 0) return invalid("version must be ≥ 1");
  const std::string_view name = stem.substr(underscore + 1);
  if (name.empty()) return invalid("empty name after '_'");
  return Migration{version, std::string(name), std::string(sql)};
}

}  // namespace llmcap::storage
