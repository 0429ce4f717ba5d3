#include "storage/statement.h"

#include <gtest/gtest.h>

#include "storage/database.h"

namespace llmcap::storage {
namespace {

class StatementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Database> opened = Database::open(":memory:");
    ASSERT_TRUE(opened.ok());
    db_.emplace(std::move(opened).value());
    ASSERT_TRUE(db_->exec("CREATE TABLE t (i INTEGER, d REAL, s TEXT, b BLOB)").ok());
  }
  std::optional<Database> db_;
};

TEST_F(StatementTest, BindsByIndexAndReadsColumns) {
  Result<Statement> ins = db_->prepare("INSERT INTO t VALUES (?, ?, ?, ?)");
  ASSERT_TRUE(ins.ok());
  const std::byte blob[] = {std::byte{1}, std::byte{2}, std::byte{3}};
  ASSERT_TRUE(ins->bind(1, std::int64_t{1} << 40)
                  .bind(2, 2.5)
                  .bind(3, "héllo")
                  .bind_blob(4, blob)
                  .run()
                  .ok());
  Result<Statement> sel = db_->prepare("SELECT i, d, s, b FROM t");
  ASSERT_TRUE(sel.ok());
  Result<bool> row = sel->step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(sel->column_count(), 4);
  EXPECT_EQ(sel->column_int64(0), std::int64_t{1} << 40);
  EXPECT_DOUBLE_EQ(sel->column_double(1), 2.5);
  EXPECT_EQ(sel->column_text(2), "héllo");
  ASSERT_EQ(sel->column_blob(3).size(), 3u);
  EXPECT_EQ(sel->column_blob(3)[2], std::byte{3});
  row = sel->step();
  ASSERT_TRUE(row.ok());
  EXPECT_FALSE(*row);
}

TEST_F(StatementTest, BindsByNameAndOptional) {
  Result<Statement> ins = db_->prepare("INSERT INTO t (i, s, d) VALUES (:i, :s, :d)");
  ASSERT_TRUE(ins.ok());
  ASSERT_TRUE(
      ins->bind(":i", 7).bind(":s", std::optional<std::string>()).bind(":d", 1.0).run().ok());
  Result<Statement> sel = db_->prepare("SELECT i, s FROM t");
  ASSERT_TRUE(sel.ok());
  ASSERT_TRUE(*sel->step());
  EXPECT_EQ(sel->column_int64(0), 7);
  EXPECT_TRUE(sel->column_is_null(1));
  EXPECT_EQ(sel->column_optional_text(1), std::nullopt);
  EXPECT_EQ(sel->column_text(1), "");
}

TEST_F(StatementTest, UnknownNameIsReportedAtStep) {
  Result<Statement> ins = db_->prepare("INSERT INTO t (i) VALUES (:i)");
  ASSERT_TRUE(ins.ok());
  Status s = ins->bind(":nope", 1).run();
  EXPECT_EQ(s.code(), ErrorCode::kInvalid);
  EXPECT_NE(s.message().find(":nope"), std::string::npos);
  // reset() clears the remembered error, so the statement can be used again.
  ins->reset();
  EXPECT_TRUE(ins->bind(":i", 1).run().ok());
}

TEST_F(StatementTest, IndexOutOfRangeIsReported) {
  Result<Statement> ins = db_->prepare("INSERT INTO t (i) VALUES (?)");
  ASSERT_TRUE(ins.ok());
  EXPECT_FALSE(ins->bind(5, 1).run().ok());
}

TEST_F(StatementTest, ResetAllowsReuse) {
  Result<Statement> ins = db_->prepare("INSERT INTO t (i) VALUES (?)");
  ASSERT_TRUE(ins.ok());
  for (int i = 0; i < 10; ++i) {
    ins->reset();
    ASSERT_TRUE(ins->bind(1, i).run().ok());
  }
  Result<Statement> sum = db_->prepare("SELECT sum(i) FROM t");
  ASSERT_TRUE(sum.ok() && *sum->step());
  EXPECT_EQ(sum->column_int64(0), 45);
}

TEST_F(StatementTest, ConstraintViolationIsConflict) {
  ASSERT_TRUE(db_->exec("CREATE TABLE u (k TEXT PRIMARY KEY)").ok());
  Result<Statement> ins = db_->prepare("INSERT INTO u VALUES ('a')");
  ASSERT_TRUE(ins.ok());
  ASSERT_TRUE(ins->run().ok());
  ins->reset();
  Status s = ins->run();
  EXPECT_EQ(s.code(), ErrorCode::kConflict);
  EXPECT_NE(s.message().find("UNIQUE"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace llmcap::storage
