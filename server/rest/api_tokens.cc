#include "server/rest/api_tokens.h"

#include <openssl/evp.h>

#include <array>

namespace llmcap::server {

std::string token_id(std::string_view token) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(token.data(), token.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1 ||
      size < 4)
    return "unknown";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 4; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

bool valid_tenant_name(std::string_view name) {
  if (name == kGlobalTenant) return true;
  if (name.empty() || name.size() > 64) return false;
  for (const char ch : name) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

std::string parse_tenant_token(std::string_view entry, ApiToken& out) {
  const auto first = entry.find(':');
  const auto second = first == std::string_view::npos ? first : entry.find(':', first + 1);
  if (second == std::string_view::npos) return "must be TENANT:ROLE:TOKEN (ROLE admin or read)";
  const std::string_view tenant = entry.substr(0, first);
  const std::string_view role = entry.substr(first + 1, second - first - 1);
  const std::string_view token = entry.substr(second + 1);
  if (!valid_tenant_name(tenant))
    return "tenant '" + std::string(tenant.substr(0, 64)) +
           "' must be 1-64 of A-Z a-z 0-9 . _ - (or * for every tenant)";
  if (role != "admin" && role != "read")
    return "role '" + std::string(role.substr(0, 16)) + "' must be admin or read";
  if (token.size() < 16) return "the token must have at least 16 characters";
  out.token = std::string(token);
  out.tenant = std::string(tenant);
  out.admin = role == "admin";
  out.id = token_id(token);
  return "";
}

std::vector<ApiToken> api_tokens(const std::vector<std::string>& admin_tokens,
                                 const std::vector<std::string>& read_tokens,
                                 const std::vector<std::string>& tenant_tokens) {
  std::vector<ApiToken> out;
  for (const auto& t : admin_tokens) out.push_back({t, kDefaultTenant, true, token_id(t)});
  for (const auto& t : read_tokens) out.push_back({t, kDefaultTenant, false, token_id(t)});
  for (const auto& entry : tenant_tokens) {
    ApiToken parsed;
    if (parse_tenant_token(entry, parsed).empty()) out.push_back(std::move(parsed));
  }
  return out;
}

}  // namespace llmcap::server
