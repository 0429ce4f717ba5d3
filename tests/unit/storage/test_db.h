// Helpers for storage tests: a temporary directory removed at scope exit, and databases migrated
// with the embedded migrations (the same path llmcapd takes at start-up).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "migrations/migrations.h"
#include "storage/database.h"
#include "storage/migration.h"
#include "storage/migrator.h"

namespace llmcap::storage::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "llmcap_storage_test_XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::vector<Migration> embedded_migrations() {
  std::vector<Migration> out;
  for (const auto& f : migrations::all()) {
    Result<Migration> m = parse_migration(f.name, f.content);
    if (!m.ok()) throw std::runtime_error(m.status().to_string());
    out.push_back(std::move(m).value());
  }
  return out;
}

inline void migrate(Database& db) {
  Result<MigrationReport> report = Migrator(embedded_migrations(), [] { return 1; }).migrate(db);
  if (!report.ok()) throw std::runtime_error(report.status().to_string());
}

inline Database migrated_memory_db() {
  Result<Database> db = Database::open(":memory:");
  if (!db.ok()) throw std::runtime_error(db.status().to_string());
  migrate(*db);
  return std::move(db).value();
}

// Creates and migrates the file, then closes it (callers open their own connections).
inline std::string migrated_file_db(const TempDir& dir, const std::string& name = "llmcap.db") {
  const std::string path = dir.file(name);
  Result<Database> db = Database::open(path);
  if (!db.ok()) throw std::runtime_error(db.status().to_string());
  migrate(*db);
  return path;
}

inline std::int64_t count_rows(Database& db, const std::string& table) {
  Result<Statement> st = db.prepare("SELECT count(*) FROM " + table);
  EXPECT_TRUE(st.ok()) << st.status().to_string();
  if (!st.ok()) return -1;
  Result<bool> row = st->step();
  EXPECT_TRUE(row.ok() && *row);
  return st->column_int64(0);
}

}  // namespace llmcap::storage::testing
