#include "storage/database.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include "tests/unit/storage/test_db.h"

namespace llmcap::storage {
namespace {

using testing::TempDir;

std::string pragma_text(Database& db, const std::string& pragma) {
  Result<Statement> st = db.prepare("PRAGMA " + pragma);
  EXPECT_TRUE(st.ok()) << st.status().to_string();
  Result<bool> row = st->step();
  EXPECT_TRUE(row.ok() && *row);
  return st->column_text(0);
}

TEST(DatabaseTest, FileDatabaseGetsWalNormalSyncAndForeignKeys) {
  TempDir dir;
  Result<Database> db = Database::open(dir.file("a.db"));
  ASSERT_TRUE(db.ok()) << db.status().to_string();
  EXPECT_EQ(pragma_text(*db, "journal_mode"), "wal");
  EXPECT_EQ(pragma_text(*db, "synchronous"), "1");  // NORMAL
  EXPECT_EQ(pragma_text(*db, "foreign_keys"), "1");
  EXPECT_EQ(pragma_text(*db, "busy_timeout"), "5000");
}

TEST(DatabaseTest, MemoryDatabaseOpens) {
  Result<Database> db = Database::open(":memory:");
  ASSERT_TRUE(db.ok());
  EXPECT_TRUE(db->exec("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);").ok());
  EXPECT_EQ(testing::count_rows(*db, "t"), 2);
  EXPECT_EQ(db->changes(), 2);
}

TEST(DatabaseTest, BadSqlIsInvalidWithSqliteMessage) {
  Result<Database> db = Database::open(":memory:");
  ASSERT_TRUE(db.ok());
  Result<Statement> st = db->prepare("SELEC nonsense");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kInvalid);
  EXPECT_NE(st.status().message().find("syntax error"), std::string::npos) << st.status().message();
  Status s = db->exec("CREATE TABLE");
  EXPECT_EQ(s.code(), ErrorCode::kInvalid);
}

TEST(DatabaseTest, MissingDirectoryIsIoError) {
  Result<Database> db = Database::open("/nonexistent-dir-llmcap/x.db");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.code(), ErrorCode::kIoError);
  EXPECT_NE(db.status().message().find("/nonexistent-dir-llmcap/x.db"), std::string::npos);
}

TEST(DatabaseTest, NotADatabaseIsCorrupt) {
  TempDir dir;
  const std::string path = dir.file("junk.db");
  {
    std::ofstream out(path);
    out << std::string(8192, 'x');
  }
  Result<Database> db = Database::open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.code(), ErrorCode::kCorrupt) << db.status().to_string();
}

TEST(DatabaseTest, ReadOnlyConnectionRefusesWritesCleanly) {
  TempDir dir;
  const std::string path = dir.file("ro.db");
  {
    Result<Database> rw = Database::open(path);
    ASSERT_TRUE(rw.ok());
    ASSERT_TRUE(rw->exec("CREATE TABLE t (x INTEGER)").ok());
  }
  DatabaseOptions options;
  options.read_only = true;
  Result<Database> ro = Database::open(path, options);
  ASSERT_TRUE(ro.ok()) << ro.status().to_string();
  Status s = ro->exec("INSERT INTO t VALUES (1)");
  EXPECT_EQ(s.code(), ErrorCode::kReadOnly) << s.to_string();
  Result<Statement> st = ro->prepare("INSERT INTO t VALUES (2)");
  ASSERT_TRUE(st.ok());
  Status run = st->run();
  EXPECT_EQ(run.code(), ErrorCode::kReadOnly);
  EXPECT_NE(run.message().find("readonly"), std::string::npos) << run.message();
}

TEST(DatabaseTest, QueryOnlyPragmaGivesReadOnly) {
  Result<Database> db = Database::open(":memory:");
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->exec("CREATE TABLE t (x INTEGER); PRAGMA query_only = ON;").ok());
  Result<Statement> st = db->prepare("INSERT INTO t VALUES (1)");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->run().code(), ErrorCode::kReadOnly);
}

TEST(DatabaseTest, DiskFullIsAValueAndLeavesTheDatabaseIntact) {
  TempDir dir;
  Result<Database> db = Database::open(dir.file("full.db"));
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->exec("CREATE TABLE t (x TEXT)").ok());
  ASSERT_TRUE(db->exec("INSERT INTO t VALUES ('before')").ok());
  // Cap the file at its current size plus a few pages: the next big insert runs out of space.
  ASSERT_TRUE(db->exec("PRAGMA max_page_count = 8").ok());
  Result<Statement> st = db->prepare("INSERT INTO t VALUES (?)");
  ASSERT_TRUE(st.ok());
  Status s;
  for (int i = 0; i < 200 && s.ok(); ++i) {
    st->reset();
    s = st->bind(1, std::string(4000, 'y')).run();
  }
  EXPECT_EQ(s.code(), ErrorCode::kDiskFull) << s.to_string();
  EXPECT_NE(s.message().find("full"), std::string::npos) << s.message();
  EXPECT_EQ(pragma_text(*db, "integrity_check"), "ok");
}

TEST(StatusFromSqliteTest, MapsPrimaryAndExtendedCodes) {
  EXPECT_TRUE(status_from_sqlite(SQLITE_OK, nullptr, "x").ok());
  EXPECT_TRUE(status_from_sqlite(SQLITE_DONE, nullptr, "x").ok());
  EXPECT_EQ(status_from_sqlite(SQLITE_FULL, nullptr, "x").code(), ErrorCode::kDiskFull);
  EXPECT_EQ(status_from_sqlite(SQLITE_READONLY_DBMOVED, nullptr, "x").code(), ErrorCode::kReadOnly);
  EXPECT_EQ(status_from_sqlite(SQLITE_CORRUPT, nullptr, "x").code(), ErrorCode::kCorrupt);
  EXPECT_EQ(status_from_sqlite(SQLITE_NOTADB, nullptr, "x").code(), ErrorCode::kCorrupt);
  EXPECT_EQ(status_from_sqlite(SQLITE_BUSY_SNAPSHOT, nullptr, "x").code(), ErrorCode::kBusy);
  EXPECT_EQ(status_from_sqlite(SQLITE_LOCKED, nullptr, "x").code(), ErrorCode::kBusy);
  EXPECT_EQ(status_from_sqlite(SQLITE_IOERR_WRITE, nullptr, "x").code(), ErrorCode::kIoError);
  EXPECT_EQ(status_from_sqlite(SQLITE_CANTOPEN, nullptr, "x").code(), ErrorCode::kIoError);
  EXPECT_EQ(status_from_sqlite(SQLITE_CONSTRAINT_UNIQUE, nullptr, "x").code(),
            ErrorCode::kConflict);
  EXPECT_EQ(status_from_sqlite(SQLITE_MISUSE, nullptr, "x").code(), ErrorCode::kInvalid);
  EXPECT_EQ(status_from_sqlite(SQLITE_FULL, nullptr, "insert").message(),
            "insert: database or disk is full");
}

}  // namespace
}  // namespace llmcap::storage
