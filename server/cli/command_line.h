// The common front of the llmcapd subcommands: parse the flags, answer --help, refuse stray
// arguments, with one wording for every command ("llmcapd <command>: <what is wrong>").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/settings.h"

namespace llmcap::server {

struct CommandLine {
  std::string_view command;        // "sim", "k8s-manifest", ...: prefixes every message
  std::string_view usage;          // printed before the flags' help text on --help
  std::size_t max_positional = 0;  // more positional arguments are an error
};

// Parses `args` into `settings` (which binds `help` to a `help` flag). Returns the exit code to
// stop with: kExitUsage after printing a bad flag or an unexpected argument to stderr, kExitOk
// after printing the usage and the flags to stdout when --help was given; nullopt to go on, with
// the positional arguments in `positional`.
std::optional<int> parse_command_line(const CommandLine& cl, Settings& settings,
                                      const std::vector<std::string>& args, const bool& help,
                                      std::vector<std::string>& positional);

}  // namespace llmcap::server
