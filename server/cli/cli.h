// The llmcapd command line: global flags, subcommand dispatch, help and version.
// Each subcommand lives in its own cmd_<name>.cc and returns an ExitCode (server/cli/exit_codes.h).
#pragma once

#include <string>
#include <vector>

namespace llmcap::server {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);  // args after the subcommand name
};

// The table of subcommands, in the order --help lists them.
const std::vector<Command>& commands();

// Entry point used by main(): parses argv, runs the subcommand, returns the exit code.
int run_cli(int argc, char** argv);

// Text of `llmcapd --help`.
std::string usage_text();

}  // namespace llmcap::server
