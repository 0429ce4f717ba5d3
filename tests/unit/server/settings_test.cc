#include "server/settings.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace llmcap::server {
namespace {

struct Example {
  std::string name = "a";
  int count = 3;
  bool verbose = false;
  double ratio = 0.5;
  std::uint16_t port = 80;
  std::vector<std::string> hosts = {"x"};
};

Settings bind(Example& e) {
  Settings s("LLMCAPTEST_");
  s.add("name", "a name", &e.name);
  s.add("count", "a count", &e.count);
  s.add("verbose", "talk more", &e.verbose);
  s.add("ratio", "a ratio", &e.ratio);
  s.add("port", "a port", &e.port);
  s.add("hosts", "hosts", &e.hosts);
  return s;
}

TEST(Settings, JsonFileValuesApply) {
  Example e;
  auto s = bind(e);
  EXPECT_EQ(s.apply_json_text(R"({"name":"b","count":7,"verbose":true,"hosts":["p","q"]})", "f"),
            "");
  EXPECT_EQ(e.name, "b");
  EXPECT_EQ(e.count, 7);
  EXPECT_TRUE(e.verbose);
  EXPECT_EQ(e.hosts, (std::vector<std::string>{"p", "q"}));
}

TEST(Settings, UnknownKeyInFileIsNamed) {
  Example e;
  auto s = bind(e);
  const auto err = s.apply_json_text(R"({"name":"b","colour":"red"})", "cfg.json");
  EXPECT_NE(err.find("unknown key 'colour'"), std::string::npos) << err;
  EXPECT_NE(err.find("cfg.json"), std::string::npos) << err;
}

TEST(Settings, WrongTypeInFileIsNamed) {
  Example e;
  auto s = bind(e);
  const auto err = s.apply_json_text(R"({"count":"seven"})", "cfg.json");
  EXPECT_NE(err.find("count"), std::string::npos) << err;
  EXPECT_NE(err.find("integer"), std::string::npos) << err;
}

TEST(Settings, FlagsParseAllForms) {
  Example e;
  auto s = bind(e);
  std::vector<std::string> positional;
  const auto err = parse_flags(
      s,
      {"plan.json", "--name", "z", "--count=9", "--verbose", "--ratio", "1.5", "--hosts", "a, b"},
      positional);
  EXPECT_EQ(err, "");
  EXPECT_EQ(positional, std::vector<std::string>{"plan.json"});
  EXPECT_EQ(e.name, "z");
  EXPECT_EQ(e.count, 9);
  EXPECT_TRUE(e.verbose);
  EXPECT_DOUBLE_EQ(e.ratio, 1.5);
  EXPECT_EQ(e.hosts, (std::vector<std::string>{"a", "b"}));
}

TEST(Settings, RepeatedFlagAppendsEachValueWithItsCommas) {
  std::vector<std::string> sets;
  Settings s("");
  s.add_repeated("set", "set a key", &sets);
  std::vector<std::string> positional;
  EXPECT_EQ(parse_flags(s, {"--set", "a=1,2", "--set=b=x", "--set", "c=-1"}, positional), "");
  EXPECT_EQ(sets, (std::vector<std::string>{"a=1,2", "b=x", "c=-1"}));
  EXPECT_EQ(s.apply_json_text(R"({"set":["d=4"]})", "f"), "");
  EXPECT_EQ(sets.back(), "d=4");
  EXPECT_NE(s.help_text().find("--set VALUE"), std::string::npos) << s.help_text();
  EXPECT_NE(s.help_text().find("(repeatable)"), std::string::npos) << s.help_text();
}

TEST(Settings, UnknownFlagIsNamed) {
  Example e;
  auto s = bind(e);
  std::vector<std::string> positional;
  EXPECT_EQ(parse_flags(s, {"--bogus-flag", "1"}, positional), "unknown flag '--bogus-flag'");
  EXPECT_EQ(parse_flags(s, {"-x"}, positional), "unknown flag '-x'");
}

TEST(Settings, BadValuesAreRejected) {
  Example e;
  auto s = bind(e);
  std::vector<std::string> positional;
  EXPECT_NE(parse_flags(s, {"--port", "70000"}, positional).find("out of range"),
            std::string::npos);
  EXPECT_NE(parse_flags(s, {"--count", "3x"}, positional).find("integer"), std::string::npos);
  EXPECT_NE(parse_flags(s, {"--ratio", "nan"}, positional).find("number"), std::string::npos);
  EXPECT_NE(parse_flags(s, {"--verbose=maybe"}, positional).find("true or false"),
            std::string::npos);
  EXPECT_NE(parse_flags(s, {"--name"}, positional).find("needs a value"), std::string::npos);
}

TEST(Settings, EnvironmentOverridesAndRejectsUnknown) {
  Example e;
  auto s = bind(e);
  ::setenv("LLMCAPTEST_COUNT", "11", 1);
  EXPECT_EQ(s.apply_environment(), "");
  EXPECT_EQ(e.count, 11);
  ::setenv("LLMCAPTEST_NOPE", "1", 1);
  const auto err = s.apply_environment();
  EXPECT_NE(err.find("LLMCAPTEST_NOPE"), std::string::npos) << err;
  EXPECT_EQ(s.apply_environment({"LLMCAPTEST_NOPE"}), "");
  ::unsetenv("LLMCAPTEST_COUNT");
  ::unsetenv("LLMCAPTEST_NOPE");
}

TEST(Settings, HelpListsEveryKeyWithDefault) {
  Example e;
  auto s = bind(e);
  const auto help = s.help_text();
  EXPECT_NE(help.find("--name VALUE"), std::string::npos) << help;
  EXPECT_NE(help.find("(default: 3)"), std::string::npos) << help;
  EXPECT_NE(help.find("--verbose "), std::string::npos) << help;
}

}  // namespace
}  // namespace llmcap::server
