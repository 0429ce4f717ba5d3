#include "storage/migrator.h"

#include <gtest/gtest.h>

#include "tests/unit/storage/test_db.h"

namespace llmcap::storage {
namespace {

std::vector<Migration> three() {
  return {
      {1, "first", "CREATE TABLE a (x INTEGER);"},
      {2, "second", "CREATE TABLE b (y INTEGER); INSERT INTO a VALUES (1);"},
      {3, "third", "ALTER TABLE b ADD COLUMN z TEXT;"},
  };
}

Database memory() {
  Result<Database> db = Database::open(":memory:");
  EXPECT_TRUE(db.ok());
  return std::move(db).value();
}

TEST(MigratorTest, AppliesAllInOrderAndRecordsThem) {
  Database db = memory();
  Migrator migrator(three(), [] { return 1234; });
  Result<MigrationReport> report = migrator.migrate(db);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->from_version, 0);
  EXPECT_EQ(report->to_version, 3);
  EXPECT_EQ(report->applied, (std::vector<int>{1, 2, 3}));
  Result<int> version = migrator.current_version(db);
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(*version, 3);
  Result<Statement> st =
      db.prepare("SELECT version, name, applied_at_ms FROM schema_migrations ORDER BY version");
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(*st->step());
  EXPECT_EQ(st->column_int64(0), 1);
  EXPECT_EQ(st->column_text(1), "first");
  EXPECT_EQ(st->column_int64(2), 1234);
}

TEST(MigratorTest, SecondRunIsANoOp) {
  Database db = memory();
  Migrator migrator(three());
  ASSERT_TRUE(migrator.migrate(db).ok());
  Result<MigrationReport> again = migrator.migrate(db);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->from_version, 3);
  EXPECT_TRUE(again->applied.empty());
  EXPECT_EQ(testing::count_rows(db, "a"), 1);  // migration 2's insert ran once
}

TEST(MigratorTest, AppliesOnlyTheNewOnes) {
  Database db = memory();
  std::vector<Migration> first_two = three();
  first_two.pop_back();
  ASSERT_TRUE(Migrator(first_two).migrate(db).ok());
  Result<MigrationReport> report = Migrator(three()).migrate(db);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->from_version, 2);
  EXPECT_EQ(report->applied, std::vector<int>{3});
}

TEST(MigratorTest, InputOrderDoesNotMatter) {
  Database db = memory();
  std::vector<Migration> shuffled = three();
  std::swap(shuffled[0], shuffled[2]);
  Result<MigrationReport> report = Migrator(shuffled).migrate(db);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->applied, (std::vector<int>{1, 2, 3}));
}

TEST(MigratorTest, RefusesDatabaseNewerThanKnownNamingBothVersions) {
  Database db = memory();
  ASSERT_TRUE(Migrator(three()).migrate(db).ok());
  std::vector<Migration> older = three();
  older.pop_back();
  Result<MigrationReport> report = Migrator(older).migrate(db);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.code(), ErrorCode::kSchemaTooNew);
  EXPECT_NE(report.status().message().find("version 3"), std::string::npos)
      << report.status().message();
  EXPECT_NE(report.status().message().find("(2)"), std::string::npos);
}

TEST(MigratorTest, GapIsInvalid) {
  std::vector<Migration> gap = three();
  gap.erase(gap.begin() + 1);
  Migrator migrator(gap);
  Status s = migrator.validate();
  EXPECT_EQ(s.code(), ErrorCode::kInvalid);
  EXPECT_NE(s.message().find("gap"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("0003_third.sql"), std::string::npos) << s.message();
  Database db = memory();
  EXPECT_EQ(migrator.migrate(db).code(), ErrorCode::kInvalid);
  EXPECT_EQ(*migrator.current_version(db), 0);  // nothing applied
}

TEST(MigratorTest, DuplicateIsInvalid) {
  std::vector<Migration> dup = three();
  dup.push_back({2, "other", "SELECT 1;"});
  Status s = Migrator(dup).validate();
  EXPECT_EQ(s.code(), ErrorCode::kInvalid);
  EXPECT_NE(s.message().find("duplicate"), std::string::npos) << s.message();
}

TEST(MigratorTest, NotStartingAtOneIsInvalid) {
  EXPECT_EQ(Migrator({{2, "x", ""}}).validate().code(), ErrorCode::kInvalid);
  EXPECT_EQ(Migrator({}).validate().code(), ErrorCode::kInvalid);
}

TEST(MigratorTest, RenamedMigrationIsInvalid) {
  Database db = memory();
  ASSERT_TRUE(Migrator(three()).migrate(db).ok());
  std::vector<Migration> renamed = three();
  renamed[0].name = "renamed";
  Result<MigrationReport> report = Migrator(renamed).migrate(db);
  EXPECT_EQ(report.code(), ErrorCode::kInvalid);
  EXPECT_NE(report.status().message().find("renamed"), std::string::npos);
}

TEST(MigratorTest, FailingMigrationIsRolledBackAndNamed) {
  Database db = memory();
  std::vector<Migration> broken = three();
  broken[2].sql = "CREATE TABLE c (x INTEGER); THIS IS NOT SQL;";
  Result<MigrationReport> report = Migrator(broken).migrate(db);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("0003_third.sql"), std::string::npos)
      << report.status().message();
  Migrator migrator(three());
  EXPECT_EQ(*migrator.current_version(db), 2);
  // Table c from the failed migration was rolled back with it.
  Result<Statement> st = db.prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'c'");
  ASSERT_TRUE(st.ok() && *st->step());
  EXPECT_EQ(st->column_int64(0), 0);
  // A fixed list then finishes the job.
  Result<MigrationReport> fixed = migrator.migrate(db);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->applied, std::vector<int>{3});
}

}  // namespace
}  // namespace llmcap::storage
