// The profile JSON files of sim/profiles/, compiled into the library by llmcap_embed()
// (cmake/LlmcapEmbed.cmake). Read-only static data; safe from any thread.
#pragma once

#include <cstddef>
#include <string_view>

namespace llmcap::sim::embedded {

struct EmbeddedFile {
  std::string_view name;
  std::string_view content;
};
extern const EmbeddedFile kFiles[];
extern const std::size_t kFileCount;

}  // namespace llmcap::sim::embedded
