#include "storage/status.h"

namespace llmcap::storage {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kConflict: return "conflict";
    case ErrorCode::kBusy: return "busy";
    case ErrorCode::kIoError: return "io_error";
    case ErrorCode::kReadOnly: return "read_only";
    case ErrorCode::kDiskFull: return "disk_full";
    case ErrorCode::kCorrupt: return "corrupt";
    case ErrorCode::kSchemaTooNew: return "schema_too_new";
    case ErrorCode::kInvalid: return "invalid";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  std::string out(storage::to_string(code_));
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

}  // namespace llmcap::storage
