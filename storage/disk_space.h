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
  // The database file itself cannot be written (access(2) W_OK fails: its mode for a non-root
  // daemon, or the immutable attribute for any): why, "" when it can (issue 35 #6).
  std::string file_not_writable;
};

// Which file a path names now (device and inode): a database file deleted or replaced under a
// running daemon is detected by comparing it with the identity taken at start (issue 23).
struct FileIdentity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};
// nullopt when the path does not exist (or for ":memory:" / URI databases: see below).
std::optional<FileIdentity> file_identity(const std::string& db_path);
// "" when `db_path` still names the file identified at start (`at_start`); else why not.
std::string database_file_problem(const std::string& db_path,
                                  const std::optional<FileIdentity>& at_start);

// The filesystem of `db_path` (its directory when the file does not exist yet). nullopt for
// ":memory:" / URI databases or when statvfs fails. Creates, writes one byte to and removes a
// probe file in the database's directory (SQLite needs that directory writable for its WAL).
std::optional<DiskState> disk_state_for(const std::string& db_path);

}  // namespace llmcap::storage
