#include "api/router.h"

#include <algorithm>

#include "net/http_message.h"

namespace llmcap::api {

namespace {

std::vector<std::string_view> split(std::string_view path) {
  std::vector<std::string_view> out;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (true) {
    const auto slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace

Router::Router(std::vector<Route> routes) : routes_(std::move(routes)) {}

bool Router::match_pattern(std::string_view pattern, std::string_view path,
                           std::map<std::string, std::string>& params) {
  const auto ps = split(pattern);
  const auto xs = split(path);
  if (ps.size() != xs.size()) return false;
  std::map<std::string, std::string> found;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const std::string_view p = ps[i];
    const std::string_view x = xs[i];
    if (p.size() >= 2 && p.front() == '{') {
      const auto close = p.find('}');
      const std::string name(p.substr(1, close - 1));
      const std::string_view suffix = p.substr(close + 1);  // e.g. ":cancel"
      if (x.size() <= suffix.size()) return false;
      if (x.substr(x.size() - suffix.size()) != suffix) return false;
      const auto value = net::percent_decode(x.substr(0, x.size() - suffix.size()));
      if (!value || value->empty() || value->find(':') != std::string::npos) return false;
      found.emplace(name, *value);
    } else if (p != x) {
      return false;
    }
  }
  params = std::move(found);
  return true;
}

RouteMatch Router::match(std::string_view method, std::string_view path) const {
  const std::string_view m = method == "HEAD" ? std::string_view("GET") : method;
  RouteMatch result;
  for (const auto& r : routes_) {
    std::map<std::string, std::string> params;
    if (!match_pattern(r.pattern, path, params)) continue;
    if (r.method == m) {
      result.kind = RouteMatch::Kind::kFound;
      result.route = &r;
      result.params = std::move(params);
      result.allowed_methods.clear();
      return result;
    }
    if (std::find(result.allowed_methods.begin(), result.allowed_methods.end(), r.method) ==
        result.allowed_methods.end()) {
      result.allowed_methods.push_back(r.method);
    }
  }
  if (!result.allowed_methods.empty()) {
    if (std::find(result.allowed_methods.begin(), result.allowed_methods.end(), "GET") !=
        result.allowed_methods.end()) {
      result.allowed_methods.push_back("HEAD");
    }
    result.kind = RouteMatch::Kind::kMethodNotAllowed;
  }
  return result;
}

}  // namespace llmcap::api
