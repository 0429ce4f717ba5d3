#include "storage/migration.h"

#include <gtest/gtest.h>

namespace llmcap::storage {
namespace {

TEST(ParseMigrationTest, ParsesVersionAndName) {
  Result<Migration> m = parse_migration("0001_initial.sql", "CREATE TABLE x (a);");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->version, 1);
  EXPECT_EQ(m->name, "initial");
  EXPECT_EQ(m->sql, "CREATE TABLE x (a);");
  Result<Migration> big = parse_migration("0042_add_index_on_jobs.sql", "");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->version, 42);
  EXPECT_EQ(big->name, "add_index_on_jobs");
}

TEST(ParseMigrationTest, RejectsMalformedNamesNamingTheFile) {
  for (const char* bad :
       {"initial.sql", "0001initial.sql", "0001_.sql", "_initial.sql", "0001_initial.txt",
        "00a1_initial.sql", "0000_zero.sql", ".sql", "99999999999_huge.sql"}) {
    Result<Migration> m = parse_migration(bad, "");
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(m.code(), ErrorCode::kInvalid);
    EXPECT_NE(m.status().message().find(bad), std::string::npos) << m.status().message();
  }
}

}  // namespace
}  // namespace llmcap::storage
