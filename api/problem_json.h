// The ONE place that maps project error codes to HTTP. Add an ApiErrorCode →
// add its row to the table in problem_json.cc and its section to docs/problems.md in the same
// change. Errors go out as application/problem+json (RFC 9457) with a stable `type` URI, a title,
// the status, a human `detail` and, for invalid input, every offending JSON path at once in
// `errors`. The `type` is a link users can open: the type's section of docs/problems.md in the
// repository (kProblemTypeBase + slug; the heading `## slug` makes the anchor).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "net/http_message.h"

namespace llmcap::api {

enum class ApiErrorCode {
  kMalformedJson,         // 400
  kBadRequest,            // 400 (bad query parameter, header)
  kUnauthorized,          // 401
  kForbidden,             // 403
  kNotFound,              // 404
  kMethodNotAllowed,      // 405
  kNotAcceptable,         // 406
  kConflict,              // 409
  kPayloadTooLarge,       // 413
  kUnsupportedMediaType,  // 415
  kInvalidPlan,           // 422
  kInvalidRequest,        // 422 (valid JSON, invalid values, not a plan)
  kQueueFull,             // 429
  kInternal,              // 500
  kShuttingDown,          // 503
  kStorageUnavailable,    // 503
  kResolverBusy,          // 503 (too many target names being resolved; retry)
  kInsufficientStorage,   // 507 (disk below the daemon's min_free_disk_mib)
};

// Every problem `type` is this followed by the code's slug, e.g. kProblemTypeBase +
// "invalid-plan" (an anchor of docs/problems.md on GitHub, which renders it).
inline constexpr std::string_view kProblemTypeBase =
    "https://github.com/llmcap/llmcap/blob/main/docs/problems.md#";

struct FieldError {
  std::string path;     // RFC 6901 JSON pointer, "" for the whole document
  std::string message;  // human text
  bool operator==(const FieldError&) const = default;
};

int http_status(ApiErrorCode code);
// kProblemTypeBase + slug, e.g. ".../docs/problems.md#invalid-plan".
std::string_view problem_type(ApiErrorCode code);
std::string_view problem_title(ApiErrorCode code);

// A complete problem+json response.
net::HttpResponse problem_response(ApiErrorCode code, std::string_view detail,
                                   const std::vector<FieldError>& errors = {});

}  // namespace llmcap::api
