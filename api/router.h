// Router: the REST API's route table — rows of {method, path pattern, route name} — and the
// matcher that turns a request path into a route and its path parameters. 404 and 405 (with
// the Allow header's methods) fall out of the table without code.
//
// Patterns are '/'-separated segments; "{name}" matches one non-empty segment, and a segment
// like "{id}:cancel" matches "<value>:cancel" (Google AIP-136 custom methods).
// Immutable after construction: safe to share between threads.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmcap::api {

struct Route {
  std::string method;   // "GET", "POST", "DELETE"
  std::string pattern;  // "/v1/jobs/{id}"
  std::string name;     // stable name used for dispatch and metrics labels, e.g. "get_job"
};

struct RouteMatch {
  enum class Kind { kFound, kNotFound, kMethodNotAllowed };
  Kind kind = Kind::kNotFound;
  const Route* route = nullptr;               // kFound
  std::map<std::string, std::string> params;  // kFound: decoded path parameters
  std::vector<std::string> allowed_methods;   // kMethodNotAllowed: for the Allow header
};

class Router {
 public:
  explicit Router(std::vector<Route> routes);
  // HEAD is matched as GET.
  RouteMatch match(std::string_view method, std::string_view path) const;
  const std::vector<Route>& routes() const { return routes_; }

 private:
  static bool match_pattern(std::string_view pattern, std::string_view path,
                            std::map<std::string, std::string>& params);
  std::vector<Route> routes_;
};

}  // namespace llmcap::api
