#include "storage/id_generator.h"

#include <gtest/gtest.h>

#include <set>

namespace llmcap::storage {
namespace {

TEST(IdGeneratorTest, FormatIsPrefixAnd26Crockford) {
  IdGenerator gen([] { return std::int64_t{1700000000000}; }, 7);
  const std::string id = gen.next("job");
  EXPECT_EQ(id.size(), 4u + 26u);
  EXPECT_TRUE(id.starts_with("job_"));
  EXPECT_TRUE(IdGenerator::well_formed(id, "job"));
  EXPECT_FALSE(IdGenerator::well_formed(id, "plan"));
  EXPECT_FALSE(IdGenerator::well_formed("job_01HGW2B5Q8N3T7XK9PZC4VDR6U", "job"));  // U excluded
  EXPECT_FALSE(IdGenerator::well_formed("job_short", "job"));
}

TEST(IdGeneratorTest, TimePrefixEncodesMilliseconds) {
  // ULID spec example: time 1469918176385 encodes as "01ARYZ6S41".
  IdGenerator gen([] { return std::int64_t{1469918176385}; }, 1);
  EXPECT_EQ(gen.next("x").substr(2, 10), "01ARYZ6S41");
}

TEST(IdGeneratorTest, SortsInCreationOrderEvenWithinOneMsAndWhenClockStepsBack) {
  std::int64_t now = 1700000000000;
  IdGenerator gen([&] { return now; }, 42);
  std::vector<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    if (i % 100 == 0) now += 1;
    if (i == 500) now -= 10;  // clock steps back
    ids.push_back(gen.next("job"));
  }
  for (std::size_t i = 1; i < ids.size(); ++i) ASSERT_LT(ids[i - 1], ids[i]) << i;
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size());
}

TEST(IdGeneratorTest, SeedMakesItDeterministic) {
  IdGenerator a([] { return std::int64_t{5}; }, 99);
  IdGenerator b([] { return std::int64_t{5}; }, 99);
  EXPECT_EQ(a.next("job"), b.next("job"));
  IdGenerator c([] { return std::int64_t{5}; }, 100);
  IdGenerator d([] { return std::int64_t{5}; }, 99);
  EXPECT_NE(c.next("job"), d.next("job"));
}

}  // namespace
}  // namespace llmcap::storage
