// TlsOptions: how the agent verifies an https:// target. A plain value copied into HttpClient.
#pragma once

#include <string>

namespace llmcap::agent {

struct TlsOptions {
  // Verify the server certificate chain and host name. false = explicitly insecure (self-signed
  // test targets); the step records the choice so reports can say so.
  bool verify_peer = true;
  // PEM file of trusted CAs. Empty: the system's default CA store (OpenSSL default paths).
  std::string ca_file;
  // SNI and verification name; empty: the host of the target URL.
  std::string server_name;
};

}  // namespace llmcap::agent
