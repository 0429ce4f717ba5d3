#include "storage/transaction.h"

#include <gtest/gtest.h>

#include "tests/unit/storage/test_db.h"

namespace llmcap::storage {
namespace {

Database table_db() {
  Result<Database> db = Database::open(":memory:");
  EXPECT_TRUE(db.ok());
  EXPECT_TRUE(db->exec("CREATE TABLE t (x INTEGER)").ok());
  return std::move(db).value();
}

TEST(TransactionTest, CommitKeepsWrites) {
  Database db = table_db();
  {
    Result<Transaction> tx = Transaction::begin(db);
    ASSERT_TRUE(tx.ok());
    EXPECT_TRUE(db.in_transaction());
    ASSERT_TRUE(db.exec("INSERT INTO t VALUES (1)").ok());
    ASSERT_TRUE(tx->commit().ok());
  }
  EXPECT_FALSE(db.in_transaction());
  EXPECT_EQ(testing::count_rows(db, "t"), 1);
}

TEST(TransactionTest, DestructorRollsBack) {
  Database db = table_db();
  {
    Result<Transaction> tx = Transaction::begin(db);
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(db.exec("INSERT INTO t VALUES (1)").ok());
  }
  EXPECT_FALSE(db.in_transaction());
  EXPECT_EQ(testing::count_rows(db, "t"), 0);
}

TEST(TransactionTest, ExplicitRollbackAndDoubleCommit) {
  Database db = table_db();
  Result<Transaction> tx = Transaction::begin(db, Transaction::Mode::kDeferred);
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(db.exec("INSERT INTO t VALUES (1)").ok());
  tx->rollback();
  EXPECT_EQ(testing::count_rows(db, "t"), 0);
  EXPECT_EQ(tx->commit().code(), ErrorCode::kInvalid);
}

TEST(TransactionTest, NestedBeginIsInvalid) {
  Database db = table_db();
  Result<Transaction> outer = Transaction::begin(db);
  ASSERT_TRUE(outer.ok());
  Result<Transaction> inner = Transaction::begin(db);
  EXPECT_EQ(inner.code(), ErrorCode::kInvalid);
  EXPECT_TRUE(db.in_transaction());  // the failed begin did not end the outer one
}

TEST(TransactionTest, SecondWriterIsBusyAfterTimeout) {
  testing::TempDir dir;
  DatabaseOptions fast;
  fast.busy_timeout_ms = 50;
  Result<Database> a = Database::open(dir.file("b.db"), fast);
  Result<Database> b = Database::open(dir.file("b.db"), fast);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->exec("CREATE TABLE t (x INTEGER)").ok());
  Result<Transaction> first = Transaction::begin(*a);
  ASSERT_TRUE(first.ok());
  Result<Transaction> second = Transaction::begin(*b);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.code(), ErrorCode::kBusy) << second.status().to_string();
}

}  // namespace
}  // namespace llmcap::storage
