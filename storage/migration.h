// Migration: one numbered, forward-only schema change (migrations/NNNN_name.sql), and the parser
// that turns a file name into its version. Plain value; thread-safe to copy.
#pragma once

#include <string>
#include <string_view>

#include "storage/status.h"

namespace llmcap::storage {

struct Migration {
  int version = 0;   // NNNN from the file name, ≥ 1
  std::string name;  // "initial" for 0001_initial.sql
  std::string sql;   // the file's text, run as-is inside one transaction
};

// Parses "0001_initial.sql" → {1, "initial", sql}. Fails with kInvalid (naming the file) when the
// name is not <digits>_<name>.sql, the number is 0 or too large, or the name part is empty.
Result<Migration> parse_migration(std::string_view file_name, std::string_view sql);

}  // namespace llmcap::storage
