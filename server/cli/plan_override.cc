#include "server/cli/plan_override.h"

#include <charconv>
#include <vector>

namespace llmcap::server {

using nlohmann::ordered_json;

namespace {

// A segment as an array index: digits only, below `size` (or equal to it where `append`).
// Returns the index, or sets `error`.
std::size_t array_index(std::string_view segment, std::string_view so_far, std::size_t size,
                        bool append, std::string& error) {
  std::size_t index = 0;
  const auto* end = segment.data() + segment.size();
  const auto [ptr, ec] = std::from_chars(segment.data(), end, index);
  if (ec != std::errc() || ptr != end) {
    error = std::string(so_far) + " is an array: '" + std::string(segment) +
            "' is not an index (use 0, 1, ...)";
    return 0;
  }
  if (index > size || (index == size && !append)) {
    error = std::string(so_far) + " has " + std::to_string(size) + " item" +
            (size == 1 ? "" : "s") + ": index " + std::to_string(index) + " is past the end" +
            (append ? " (" + std::to_string(size) + " appends one)" : "");
    return 0;
  }
  return index;
}

std::string pointer_of(const std::vector<std::string>& segments) {
  std::string pointer;
  for (const auto& s : segments) {
    pointer += '/';
    for (const char c : s) {
      if (c == '~')
        pointer += "~0";
      else if (c == '/')
        pointer += "~1";
      else
        pointer += c;
    }
  }
  return pointer;
}

}  // namespace

PlanOverride apply_plan_override(ordered_json& plan, std::string_view assignment) {
  PlanOverride out;
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    out.error = "'" + std::string(assignment) +
                "': expected KEY.PATH=VALUE, e.g. phases.0.duration_s=60 or sla.ttft_ms.p95=800";
    return out;
  }
  const std::string_view path = assignment.substr(0, eq);
  const std::string value_text(assignment.substr(eq + 1));
  if (path.empty()) {
    out.error = "'" + std::string(assignment) + "': the path before '=' is empty";
    return out;
  }
  std::vector<std::string> segments;
  for (std::size_t at = 0; at <= path.size();) {
    const auto dot = std::min(path.find('.', at), path.size());
    segments.emplace_back(path.substr(at, dot - at));
    if (segments.back().empty()) {
      out.error = std::string(path) + ": empty segment (two dots, or a dot at an end)";
      return out;
    }
    at = dot + 1;
  }
  ordered_json value = ordered_json::parse(value_text, nullptr, false);
  if (value.is_discarded()) value = value_text;

  // On a copy, so that a failure leaves the plan as it was.
  ordered_json result = plan;
  ordered_json* node = &result;
  std::string so_far = "the plan";  // the path of `node`, for messages
  std::string error;
  for (std::size_t i = 0; i < segments.size() && error.empty(); ++i) {
    const std::string& seg = segments[i];
    const bool last = i + 1 == segments.size();
    if (node->is_null()) *node = ordered_json::object();  // created on the way
    if (node->is_object()) {
      if (!last) {
        node = &(*node)[seg];
      } else if (value.is_null()) {
        node->erase(seg);
      } else {
        (*node)[seg] = value;
      }
    } else if (node->is_array()) {
      const std::size_t index = array_index(seg, so_far, node->size(), last, error);
      if (!error.empty()) break;
      if (!last) {
        node = &(*node)[index];
      } else if (!value.is_null()) {
        if (index == node->size())
          node->push_back(value);
        else
          (*node)[index] = value;
      } else if (index < node->size()) {
        node->erase(index);
      } else {
        error = so_far + " has no item " + seg + " to remove";
      }
    } else {
      error =
          so_far + " is " +
          (node->is_string() ? std::string("a string") : std::string("a ") + node->type_name()) +
          ", not an object or array: it has no '" + seg + "'";
    }
    so_far = i == 0 ? seg : so_far + "." + seg;
  }
  if (!error.empty()) {
    out.error = std::string(path) + ": " + error;
    return out;
  }
  plan = std::move(result);
  out.pointer = pointer_of(segments);
  return out;
}

}  // namespace llmcap::server
