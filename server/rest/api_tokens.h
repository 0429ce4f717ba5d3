// ApiToken: one bearer token of the REST API and what it may do (docs/security.md, "Tenants").
// A token belongs to a tenant and has a role: admin (submit, cancel, resume, delete, upload
// shards, and read) or read. A tenant's tokens see and act on that tenant's jobs only; the
// tenant "*" is global: its tokens see every tenant's jobs. admin_tokens and read_tokens are the
// tokens of the tenant "default", so a daemon configured before tenants existed keeps working.
// Plain values and pure functions: thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace llmcap::server {

inline constexpr const char* kDefaultTenant = "default";
inline constexpr const char* kGlobalTenant = "*";

struct ApiToken {
  std::string token;   // the secret; compared in constant time, never logged
  std::string tenant;  // kDefaultTenant, a configured tenant, or kGlobalTenant
  bool admin = false;  // else read-only
  std::string id;      // token_id(token): what logs and the audit trail name
};

// A short, stable, non-secret name of a token: the first 8 hex digits of its SHA-256. Enough to
// tell a deployment's tokens apart in logs; it reveals nothing usable of the token.
std::string token_id(std::string_view token);

// A tenant name: 1-64 of [A-Za-z0-9._-], or "*" (global).
bool valid_tenant_name(std::string_view name);

// Parses one `tenant_tokens` entry, "TENANT:ROLE:TOKEN" (ROLE admin or read; the token is what
// follows the second colon). Returns "" and fills `out`, or the reason, which never contains
// the token.
std::string parse_tenant_token(std::string_view entry, ApiToken& out);

// Every token of the API: admin_tokens and read_tokens as the default tenant's, then the
// parsed tenant_tokens entries (entries that do not parse are left out: validate first).
std::vector<ApiToken> api_tokens(const std::vector<std::string>& admin_tokens,
                                 const std::vector<std::string>& read_tokens,
                                 const std::vector<std::string>& tenant_tokens);

}  // namespace llmcap::server
