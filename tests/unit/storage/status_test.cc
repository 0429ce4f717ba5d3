#include "storage/status.h"

#include <gtest/gtest.h>

namespace llmcap::storage {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kOk);
  EXPECT_EQ(s.to_string(), "ok");
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s(ErrorCode::kDiskFull, "database or disk is full");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.to_string(), "disk_full: database or disk is full");
}

TEST(StatusTest, EveryCodeHasAName) {
  for (ErrorCode c : {ErrorCode::kNotFound, ErrorCode::kConflict, ErrorCode::kBusy,
                      ErrorCode::kIoError, ErrorCode::kReadOnly, ErrorCode::kDiskFull,
                      ErrorCode::kCorrupt, ErrorCode::kSchemaTooNew, ErrorCode::kInvalid}) {
    EXPECT_NE(to_string(c), "unknown");
    EXPECT_NE(to_string(c), "ok");
  }
  EXPECT_EQ(to_string(ErrorCode::kSchemaTooNew), "schema_too_new");
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<int> good = 42;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 42);
  Result<int> bad = Status(ErrorCode::kNotFound, "job x not found");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), ErrorCode::kNotFound);
  EXPECT_EQ(bad.status().message(), "job x not found");
}

TEST(ResultTest, MovesValueOut) {
  Result<std::string> r = std::string("abc");
  std::string s = std::move(r).value();
  EXPECT_EQ(s, "abc");
}

}  // namespace
}  // namespace llmcap::storage
