// Documents compiled into llmcapd (docs/openapi.json), served by the REST API.
#pragma once

#include <cstddef>
#include <string_view>

namespace llmcap::server::embedded {
struct EmbeddedFile {
  std::string_view name;
  std::string_view content;
};
extern const EmbeddedFile kFiles[];
extern const std::size_t kFileCount;
}  // namespace llmcap::server::embedded

namespace llmcap::server {
// The OpenAPI 3 document of the REST API.
inline std::string_view openapi_document() {
  for (std::size_t i = 0; i < embedded::kFileCount; ++i) {
    if (embedded::kFiles[i].name == "openapi.json") return embedded::kFiles[i].content;
  }
  return "{}";
}
}  // namespace llmcap::server
