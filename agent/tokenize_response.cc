#include "agent/tokenize_response.h"

#include <limits>
#include <nlohmann/json.hpp>

namespace llmcap::agent {

std::int32_t TokenizeResponse::count(std::string_view body, std::size_t text_bytes) {
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object()) return -1;
  std::int64_t n = -1;
  if (auto it = doc.find("count"); it != doc.end() && it->is_number_integer()) {
    n = it->get<std::int64_t>();
  } else if (auto t = doc.find("tokens"); t != doc.end() && t->is_array()) {
    n = static_cast<std::int64_t>(t->size());
  }
  if (n < 0 || n > std::numeric_limits<std::int32_t>::max()) return -1;
  if (n == 0 && text_bytes > 0) return -1;  // the request shape was not understood (header)
  return static_cast<std::int32_t>(n);
}

}  // namespace llmcap::agent
