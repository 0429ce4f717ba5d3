#include "agent/client_resource_error.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace llmcap::agent {
namespace {

TEST(ClientResourceError, NamesTheClientsOwnShortagesAndWhatToChange) {
  const auto fds = client_resource_error(EMFILE);
  ASSERT_TRUE(fds);
  EXPECT_EQ(fds->errno_name, "EMFILE");
  EXPECT_EQ(fds->resource, "file descriptors");
  EXPECT_EQ(describe_client_resource_error(*fds, EMFILE, "connect to 127.0.0.1:8000"),
            "client resources exhausted: connect to 127.0.0.1:8000 failed with EMFILE (Too many "
            "open files); raise the agent's descriptor limit (ulimit -n; LimitNOFILE= under "
            "systemd) or lower the concurrency");
  EXPECT_EQ(client_resource_error(ENFILE)->resource, "file descriptors");
  EXPECT_EQ(client_resource_error(EADDRNOTAVAIL)->resource, "local ports");
  EXPECT_NE(client_resource_error(EADDRNOTAVAIL)->remedy.find("ip_local_port_range"),
            std::string_view::npos);
  EXPECT_EQ(client_resource_error(ENOBUFS)->resource, "socket memory");
  EXPECT_EQ(client_resource_error(ENOMEM)->resource, "socket memory");
}

TEST(ClientResourceError, TheTargetsFailuresAreNotTheClients) {
  for (const int e :
       {ECONNREFUSED, ECONNRESET, EHOSTUNREACH, ENETUNREACH, ETIMEDOUT, EPIPE, EACCES, 0}) {
    EXPECT_FALSE(client_resource_error(e)) << e;
  }
}

}  // namespace
}  // namespace llmcap::agent
