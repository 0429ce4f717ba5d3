#include "storage/disk_space.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace llmcap::storage {

std::optional<FileIdentity> file_identity(const std::string& db_path) {
  if (db_path.empty() || db_path == ":memory:" || db_path.rfind("file:", 0) == 0)
    return std::nullopt;
  struct stat st {};
  if (::stat(db_path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

std::string database_file_problem(const std::string& db_path,
                                  const std::optional<FileIdentity>& at_start) {
  if (!at_start) return "";  // in-memory database, or none to compare with
  const auto now = file_identity(db_path);
  if (!now) return "the database file " + db_path + " was deleted while llmcapd runs";
  if (*now != *at_start) return "the database file " + db_path + " was replaced while llmcapd runs";
  return "";
}

std::optional<DiskState> disk_state_for(const std::string& db_path) {
  if (db_path.empty() || db_path == ":memory:" || db_path.rfind("file:", 0) == 0)
    return std::nullopt;
  std::filesystem::path where(db_path);
  std::error_code ec;
  if (!std::filesystem::exists(where, ec)) {
    where = where.parent_path();
    if (where.empty()) where = ".";
  }
  struct statvfs st {};
  if (::statvfs(where.c_str(), &st) != 0) return std::nullopt;
  DiskState out;
  out.free_bytes =
      static_cast<std::uint64_t>(st.f_bavail) * static_cast<std::uint64_t>(st.f_frsize);
  out.read_only = (st.f_flag & ST_RDONLY) != 0;
  if (!out.read_only) {
    const std::filesystem::path dir =
        std::filesystem::is_directory(where, ec) ? where : where.parent_path();
    const std::string probe =
        ((dir.empty() ? std::filesystem::path(".") : dir) / ".llmcap-write-check").string();
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0) {
      if (::write(fd, "x", 1) != 1) err = errno;
      if (::close(fd) != 0 && err == 0) err = errno;
      ::unlink(probe.c_str());
    }
    if (err == EROFS || err == EIO) {
      out.read_only = true;
      out.write_error = std::strerror(err);
    }
  }
  if (!out.read_only && std::filesystem::is_regular_file(db_path, ec) &&
      ::access(db_path.c_str(), W_OK) != 0)
    out.file_not_writable = std::strerror(errno);
  return out;
}

}  // namespace llmcap::storage
