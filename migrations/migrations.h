// The embedded schema migrations, in order. The daemon turns each into a storage::Migration with
// storage::parse_migration(file.name, file.content) and hands them to storage::Migrator.
// Immutable static data: safe from any thread.
#pragma once

#include <vector>

#include "migrations/embedded.h"

namespace llmcap::migrations {

// All embedded files, sorted by their NNNN number (then name); views into static storage.
std::vector<EmbeddedFile> all();

}  // namespace llmcap::migrations
