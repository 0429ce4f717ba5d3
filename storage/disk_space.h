// The filesystem under the database: free space and whether it is read-only, so a job is
// refused (507) before the disk is so full that it could be stored but never moved to running
// or failed, and /readyz can say "not ready for writes" (issue 24).
// Thread-safe; one statvfs(2) call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace llmcap::storage {

struct DiskState {
  std::uint64_t free_bytes = 0;  // what an unprivileged writer may still use
  // Read-only: mounted or remounted so (statvfs), or a real write next to the database fails
  // with EROFS/EIO (an ext4 error puts the filesystem in "emergency_ro", which statvfs and
  // access(2) do not show). write_error names the errno then.
  bool read_only = false;
  std::string write_error;
};

// The filesystem of `db_path` (its directory when the file does not exist yet). nullopt for
// ":memory:" / URI databases or when statvfs fails. Creates, writes one byte to and removes a
// probe file in the database's directory (SQLite needs that directory writable for its WAL).
std::optional<DiskState> disk_state_for(const std::string& db_path);

}  // namespace llmcap::storage
