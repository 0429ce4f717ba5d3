// The SQL migration files compiled into the binary by llmcap_embed (cmake/LlmcapEmbed.cmake).
// The generated embedded_migrations.cc defines kFiles; use migrations::all() (migrations.h).
// Immutable static data: safe from any thread.
#pragma once

#include <cstddef>
#include <string_view>

namespace llmcap::migrations {

struct EmbeddedFile {
  std::string_view name;     // file name, e.g. "0001_initial.sql"
  std::string_view content;  // the file's text
};

extern const EmbeddedFile kFiles[];
extern const std::size_t kFileCount;

}  // namespace llmcap::migrations
