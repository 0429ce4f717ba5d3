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

// 0004_tenants on a database that already holds a job with an idempotency key: both belong to
// the default tenant afterwards, and the key is unique per tenant (issue 35 #4).
TEST(EmbeddedMigrationsTest, TenantsMigrationKeepsExistingRowsInTheDefaultTenant) {
  Result<Database> opened = Database::open(":memory:");
  ASSERT_TRUE(opened.ok());
  Database db = std::move(opened).value();
  std::vector<Migration> before_tenants;
  for (auto& m : testing::embedded_migrations())
    if (m.version < 4) before_tenants.push_back(m);
  ASSERT_TRUE(Migrator(before_tenants).migrate(db).ok());
  ASSERT_TRUE(db.exec("INSERT INTO plans VALUES ('p', '{}', 'h', 1)").ok());
  ASSERT_TRUE(db.exec("INSERT INTO jobs (id, plan_id, state, created_at_ms) "
                      "VALUES ('job_old', 'p', 'succeeded', 1)")
                  .ok());
  ASSERT_TRUE(db.exec("INSERT INTO idempotency_keys VALUES ('k', 'h', 'job_old', 1)").ok());
  ASSERT_TRUE(Migrator(testing::embedded_migrations()).migrate(db).ok());

  Result<Statement> job = db.prepare("SELECT tenant FROM jobs WHERE id = 'job_old'");
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(*job->step());
  EXPECT_EQ(job->column_text(0), "default");
  Result<Statement> key = db.prepare("SELECT tenant, job_id FROM idempotency_keys WHERE key = 'k'");
  ASSERT_TRUE(key.ok());
  ASSERT_TRUE(*key->step());
  EXPECT_EQ(key->column_text(0), "default");
  EXPECT_EQ(key->column_text(1), "job_old");
  // Another tenant may use the same key; the same tenant may not twice.
  EXPECT_TRUE(
      db.exec("INSERT INTO idempotency_keys VALUES ('team-b', 'k', 'h', 'job_old', 2)").ok());
  EXPECT_FALSE(
      db.exec("INSERT INTO idempotency_keys VALUES ('default', 'k', 'h', 'job_old', 2)").ok());
  // Deleting the job still removes its keys (the rebuilt table kept ON DELETE CASCADE).
  ASSERT_TRUE(db.exec("DELETE FROM jobs WHERE id = 'job_old'").ok());
  EXPECT_EQ(testing::count_rows(db, "idempotency_keys"), 0);
}

}  // namespace
}  // namespace llmcap::storage
