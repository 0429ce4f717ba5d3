#include "server/cli/command_line.h"

#include <iostream>

#include "server/cli/exit_codes.h"

namespace llmcap::server {

std::optional<int> parse_command_line(const CommandLine& cl, Settings& settings,
                                      const std::vector<std::string>& args, const bool& help,
                                      std::vector<std::string>& positional) {
  if (auto err = parse_flags(settings, args, positional); !err.empty()) {
    std::cerr << "llmcapd " << cl.command << ": " << err << "\n";
    return kExitUsage;
  }
  if (help) {
    std::cout << cl.usage << "\n\nFlags:\n" << settings.help_text();
    return kExitOk;
  }
  if (positional.size() > cl.max_positional) {
    std::cerr << "llmcapd " << cl.command << ": unexpected argument '"
              << positional[cl.max_positional] << "'\n";
    return kExitUsage;
  }
  return std::nullopt;
}

}  // namespace llmcap::server
