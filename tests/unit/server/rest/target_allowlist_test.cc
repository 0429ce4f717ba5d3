#include "server/rest/target_allowlist.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

namespace llmcap::server {
namespace {

using namespace std::chrono_literals;

ResolvedAddress v4(const char* text) {
  ResolvedAddress a;
  a.family = AF_INET;
  inet_pton(AF_INET, text, a.bytes.data());
  return a;
}

TargetAllowlist::Options fixed(std::vector<ResolvedAddress> addresses) {
  TargetAllowlist::Options o;
  o.resolver = [addresses](const std::string&) {
    return std::optional<std::vector<ResolvedAddress>>(addresses);
  };
  return o;
}

// The refusal names the setting that widens it (issue 22).
std::string widen(const std::string& host) {
  return " (to allow it, add '" + host +
         "' or its network to the daemon's target_allowlist setting: --target-allowlist, "
         "LLMCAP_TARGET_ALLOWLIST or the config file)";
}

TEST(TargetAllowlist, SimAndListedNamesNeedNoResolution) {
  TargetAllowlist::Options o;
  o.resolver = [](const std::string&) -> std::optional<std::vector<ResolvedAddress>> {
    ADD_FAILURE() << "resolved a name the list allows by itself";
    return std::nullopt;
  };
  TargetAllowlist list({"gpu-box.internal"}, o);
  EXPECT_EQ(list.check("sim://rtx4090/llama-3.1-8b"), "");
  EXPECT_EQ(list.check("http://gpu-box.internal:8000"), "");
}

TEST(TargetAllowlist, EveryAddressMustLieInAListedNetwork) {
  TargetAllowlist inside({"10.0.0.0/8"}, fixed({v4("10.1.2.3"), v4("10.9.9.9")}));
  EXPECT_EQ(inside.check("http://target:8000/v1"), "");
  TargetAllowlist mixed({"10.0.0.0/8"}, fixed({v4("10.1.2.3"), v4("169.254.169.254")}));
  EXPECT_EQ(
      mixed.check("http://target:8000/v1"),
      "host 'target' resolves to 169.254.169.254, outside target_allowlist" + widen("target"));
  TargetAllowlist none({"10.0.0.0/8"}, fixed({}));
  EXPECT_NE(none.check("http://target:8000/v1").find("no IPv4/IPv6 address"), std::string::npos);
}

TEST(TargetAllowlist, RealLiteralsUseTheSystemResolver) {
  TargetAllowlist list({"127.0.0.0/8", "::1/128"});
  EXPECT_EQ(list.check("http://127.0.0.1:8000"), "");
  EXPECT_EQ(list.check("http://[::1]:8000"), "");
  EXPECT_EQ(list.check("http://10.0.0.1:8000"),
            "host '10.0.0.1' resolves to 10.0.0.1, outside target_allowlist" + widen("10.0.0.1"));
}

// Issue 23 #6: a resolver that never answers bounds the check at its timeout, and lookups past
// max_pending are refused at once instead of piling up on the API's threads.
TEST(TargetAllowlist, AResolverThatNeverAnswersCostsTheTimeoutOnly) {
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  TargetAllowlist::Options o;
  o.resolve_timeout = 200ms;
  o.max_pending = 2;
  o.resolver = [released](const std::string&) -> std::optional<std::vector<ResolvedAddress>> {
    released.wait();  // hangs until the test ends
    return std::nullopt;
  };
  TargetAllowlist list({"127.0.0.0/8"}, o);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(list.check("http://hangs.example:80"),
            "host 'hangs.example' did not resolve within 200 ms");
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5s);  // generous: only "bounded" is asserted (no timing test)
  EXPECT_NE(list.check("http://hangs-too.example:80").find("did not resolve"), std::string::npos);
  // Two lookups hang now: a third is refused (before any wait, by construction).
  EXPECT_NE(list.check("http://third.example:80").find("too many host names"), std::string::npos);
  release->set_value();
}

TEST(TargetAllowlist, AddressLiteralsNeedNoLookup) {
  TargetAllowlist::Options o;
  o.resolver = [](const std::string& host) -> std::optional<std::vector<ResolvedAddress>> {
    ADD_FAILURE() << "looked up an address literal: " << host;
    return std::nullopt;
  };
  TargetAllowlist list({"10.0.0.0/8", "fd00::/8"}, o);
  EXPECT_EQ(list.check("http://10.1.2.3:8000"), "");
  EXPECT_EQ(list.check("http://[fd00::1]:8000"), "");
  EXPECT_EQ(list.check("http://192.168.1.1:8000"),
            "host '192.168.1.1' resolves to 192.168.1.1, outside target_allowlist" +
                widen("192.168.1.1"));
}

// A plan naming several hosts whose resolver hangs costs one timeout, not one per host, and a
// full resolver marks the verdict busy (the API answers 503 + Retry-After, not 422).
TEST(TargetAllowlist, AllHostsOfAPlanShareOneDeadline) {
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  TargetAllowlist::Options o;
  o.resolve_timeout = 1000ms;
  o.max_pending = 3;
  o.resolver = [released](const std::string&) -> std::optional<std::vector<ResolvedAddress>> {
    released.wait();
    return std::nullopt;
  };
  TargetAllowlist list({"127.0.0.0/8"}, o);
  const auto t0 = std::chrono::steady_clock::now();
  const auto v = list.check_all({"http://a.example", "http://b.example", "http://c.example",
                                 "http://a.example/metrics", "sim://rtx4090/llama"});
  const auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(v.reasons.size(), 5u);
  for (int i = 0; i < 4; ++i) EXPECT_NE(v.reasons[i].find("did not resolve"), std::string::npos);
  EXPECT_EQ(v.reasons[4], "");
  EXPECT_FALSE(v.busy);
  EXPECT_LT(waited, 2500ms);  // one shared 1 s deadline, not 3 s (generous bound)
  const auto busy = list.check_all({"http://d.example"});  // three lookups still hang
  EXPECT_TRUE(busy.busy);
  release->set_value();
}

}  // namespace
}  // namespace llmcap::server
