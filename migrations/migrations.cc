#include "migrations/migrations.h"

#include <algorithm>
#include <charconv>

namespace llmcap::migrations {
namespace {

// The leading number of "0001_initial.sql"; names without one sort last (the Migrator rejects
// them with a message naming the file).
long leading_number(std::string_view name) {
  long value = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
  if (ec != std::errc() || end == name.data()) return -1;
  return value;
}

}  // namespace

std::vector<EmbeddedFile> all() {
  std::vector<EmbeddedFile> files(kFiles, kFiles + kFileCount);
  std::sort(files.begin(), files.end(), [](const EmbeddedFile& a, const EmbeddedFile& b) {
    const long na = leading_number(a.name);
    const long nb = leading_number(b.name);
    const bool a_bad = na < 0;
    const bool b_bad = nb < 0;
    if (a_bad != b_bad) return b_bad;
    if (na != nb) return na < nb;
    return a.name < b.name;
  });
  return files;
}

}  // namespace llmcap::migrations
