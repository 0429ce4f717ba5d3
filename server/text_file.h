// read_text_file: a whole file as a string (config files, /proc entries, plans). One helper for
// the daemon and its subcommands instead of an ifstream + rdbuf copy in each. Thread-safe.
#pragma once

#include <optional>
#include <string>

namespace llmcap::server {

// The file's bytes; nullopt when it cannot be opened or read.
std::optional<std::string> read_text_file(const std::string& path);

}  // namespace llmcap::server
