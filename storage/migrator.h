// Migrator: brings a database's schema up to the newest known migration at start-up.
//
// The migrations (forward-only, numbered 1..N with no gaps or duplicates) are given by the caller
// — storage includes nothing of ours; the daemon passes the ones embedded by migrations/. Each
// migration runs in its own transaction together with its row in
// schema_migrations(version, name, applied_at_ms), so a crash leaves the schema at a whole
// version. A database whose schema is newer than the newest migration known here is refused
// (kSchemaTooNew, naming both versions): an older llmcapd must not write to it.
//
// Ownership: holds its own copy of the migrations; borrows the Database per call.
// Thread safety: const methods are safe from several threads on different Databases.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "storage/database.h"
#include "storage/migration.h"
#include "storage/status.h"

namespace llmcap::storage {

struct MigrationReport {
  int from_version = 0;      // schema version found (0 = empty database)
  int to_version = 0;        // schema version now
  std::vector<int> applied;  // versions applied by this call, ascending
};

class Migrator {
 public:
  // `now_ms` stamps applied_at_ms (unix milliseconds); defaults to the system clock.
  explicit Migrator(std::vector<Migration> migrations,
                    std::function<std::int64_t()> now_ms = nullptr);

  // kInvalid when the list is empty, has duplicate versions, or has gaps (must be 1..N).
  Status validate() const;
  int latest_version() const;  // N, or 0 when the list is invalid/empty

  // Highest version recorded in the database (0 when schema_migrations does not exist yet).
  Result<int> current_version(Database& db) const;

  // Validates, refuses newer databases (kSchemaTooNew), checks that recorded versions carry the
  // names known here (kInvalid otherwise), then applies the missing ones in order. Idempotent:
  // a second call applies nothing. A failing migration is rolled back and its error returned
  // (prefixed with its file name); earlier ones stay applied.
  Result<MigrationReport> migrate(Database& db) const;

 private:
  std::vector<Migration> migrations_;  // sorted by version
  std::function<std::int64_t()> now_ms_;
};

}  // namespace llmcap::storage
