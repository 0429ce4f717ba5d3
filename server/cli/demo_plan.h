// The example plan `llmcapd demo` runs (deploy/plans/demo-4090-vs-a100.json), compiled into
// llmcapd so the demo needs no file.
#pragma once

#include <cstddef>
#include <string_view>

namespace llmcap::server::cli_embedded {
struct EmbeddedFile {
  std::string_view name;
  std::string_view content;
};
extern const EmbeddedFile kFiles[];
extern const std::size_t kFileCount;
}  // namespace llmcap::server::cli_embedded

namespace llmcap::server {
inline std::string_view embedded_demo_plan() {
  for (std::size_t i = 0; i < cli_embedded::kFileCount; ++i) {
    if (cli_embedded::kFiles[i].name == "demo-4090-vs-a100.json")
      return cli_embedded::kFiles[i].content;
  }
  return "";
}
}  // namespace llmcap::server
