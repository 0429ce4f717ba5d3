// Tests of the embedded migrations (migrations/): they parse, are contiguous, and build a schema
// with the tables and foreign keys the store relies on.
#include "migrations/migrations.h"

#include <gtest/gtest.h>

#include "tests/unit/storage/test_db.h"

namespace llmcap::storage {
namespace {

TEST(EmbeddedMigrationsTest, SortedAndParseable) {
  const auto files = migrations::all();
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files.front().name, "0001_initial.sql");
  int expected = 1;
  for (const auto& f : files) {
    Result<Migration> m = parse_migration(f.name, f.content);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->version, expected++);
    EXPECT_FALSE(m->sql.empty());
  }
  EXPECT_TRUE(Migrator(testing::embedded_migrations()).validate().ok());
}

TEST(EmbeddedMigrationsTest, BuildTheSchema) {
  Database db = testing::migrated_memory_db();
  for (const char* table : {"plans", "jobs", "job_targets", "job_secrets", "steps",
                            "request_samples", "telemetry_samples", "capacity_results",
                            "idempotency_keys", "audit", "schema_migrations"}) {
    Result<Statement> st = db.prepare("SELECT count(*) FROM sqlite_schema WHERE name = ?");
    ASSERT_TRUE(st.ok());
    st->bind(1, table);
    ASSERT_TRUE(*st->step());
    EXPECT_EQ(st->column_int64(0), 1) << table;
  }
  Result<Statement> fk = db.prepare("PRAGMA foreign_key_check");
  ASSERT_TRUE(fk.ok());
  EXPECT_FALSE(*fk->step());
}

TEST(EmbeddedMigrationsTest, ConstraintsHold) {
  Database db = testing::migrated_memory_db();
  // A job must reference a plan (foreign_keys=ON) and have a known state.
  EXPECT_EQ(db.exec("INSERT INTO jobs (id, plan_id, state, created_at_ms) "
                    "VALUES ('job_x', 'missing', 'queued', 1)")
                .code(),
            ErrorCode::kConflict);
  ASSERT_TRUE(db.exec("INSERT INTO plans VALUES ('p', '{}', 'h', 1)").ok());
  EXPECT_EQ(db.exec("INSERT INTO jobs (id, plan_id, state, created_at_ms) "
                    "VALUES ('job_x', 'p', 'bogus', 1)")
                .code(),
            ErrorCode::kConflict);
  // STRICT tables refuse text in integer columns.
  EXPECT_FALSE(db.exec("INSERT INTO jobs (id, plan_id, state, created_at_ms) "
                       "VALUES ('job_y', 'p', 'queued', 'yesterday')")
                   .ok());
}

}  // namespace
}  // namespace llmcap::storage
