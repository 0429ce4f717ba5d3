// The OpenAPI document of the REST API (docs/openapi.json), compiled into llmcapd and served at
// /v1/openapi.json.
#pragma once

#include <cstddef>
#include <string_view>

namespace llmcap::server::rest_embedded {
struct EmbeddedFile {
  std::string_view name;
  std::string_view content;
};
extern const EmbeddedFile kFiles[];
extern const std::size_t kFileCount;
}  // namespace llmcap::server::rest_embedded

namespace llmcap::server {
inline std::string_view openapi_document() {
  for (std::size_t i = 0; i < rest_embedded::kFileCount; ++i) {
    if (rest_embedded::kFiles[i].name == "openapi.json") return rest_embedded::kFiles[i].content;
  }
  return "{}";
}
}  // namespace llmcap::server
