#include "storage/migrator.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "storage/system_clock.h"
#include "storage/transaction.h"

namespace llmcap::storage {
namespace {

constexpr std::string_view kCreateSchemaMigrations =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL,"
    " applied_at_ms INTEGER NOT NULL)";

std::string file_name(const Migration& m) {
  std::string number = std::to_string(m.version);
  if (number.size() < 4) number.insert(0, 4 - number.size(), '0');
  return number + "_" + m.name + ".sql";
}

}  // namespace

Migrator::Migrator(std::vector<Migration> migrations, std::function<std::int64_t()> now_ms)
    : migrations_(std::move(migrations)), now_ms_(std::move(now_ms)) {
  std::stable_sort(migrations_.begin(), migrations_.end(),
                   [](const Migration& a, const Migration& b) { return a.version < b.version; });
  if (!now_ms_) now_ms_ = system_now_ms;
}

Status Migrator::validate() const {
  if (migrations_.empty()) return Status(ErrorCode::kInvalid, "no migrations given");
  for (std::size_t i = 0; i < migrations_.size(); ++i) {
    const int expected = static_cast<int>(i) + 1;
    const Migration& m = migrations_[i];
    if (i > 0 && m.version == migrations_[i - 1].version) {
      return Status(ErrorCode::kInvalid,
                    "duplicate migration version " + std::to_string(m.version) + " (" +
                        file_name(migrations_[i - 1]) + ", " + file_name(m) + ")");
    }
    if (m.version != expected) {
      return Status(ErrorCode::kInvalid, "migration versions have a gap: expected " +
                                             std::to_string(expected) + ", found " + file_name(m));
    }
  }
  return Status();
}

int Migrator::latest_version() const {
  if (!validate().ok()) return 0;
  return migrations_.back().version;
}

Result<int> Migrator::current_version(Database& db) const {
  Result<Statement> exists =
      db.prepare("SELECT 1 FROM sqlite_schema WHERE type='table' AND name='schema_migrations'");
  if (!exists.ok()) return exists.status();
  Result<bool> row = exists->step();
  if (!row.ok()) return row.status();
  if (!row.value()) return 0;
  Result<Statement> max = db.prepare("SELECT coalesce(max(version), 0) FROM schema_migrations");
  if (!max.ok()) return max.status();
  row = max->step();
  if (!row.ok()) return row.status();
  return static_cast<int>(max->column_int64(0));
}

Result<MigrationReport> Migrator::migrate(Database& db) const {
  if (Status s = validate(); !s.ok()) return s;
  if (Status s = db.exec(kCreateSchemaMigrations); !s.ok()) return s;

  std::map<int, std::string> recorded;
  {
    Result<Statement> st = db.prepare("SELECT version, name FROM schema_migrations");
    if (!st.ok()) return st.status();
    for (;;) {
      Result<bool> row = st->step();
      if (!row.ok()) return row.status();
      if (!row.value()) break;
      recorded[static_cast<int>(st->column_int64(0))] = st->column_text(1);
    }
  }
  MigrationReport report;
  report.from_version = recorded.empty() ? 0 : recorded.rbegin()->first;
  const int latest = migrations_.back().version;
  if (report.from_version > latest) {
    return Status(ErrorCode::kSchemaTooNew,
                  "database schema version " + std::to_string(report.from_version) +
                      " is newer than the newest this llmcapd knows (" + std::to_string(latest) +
                      "); run a newer llmcapd or restore a matching backup");
  }
  for (const auto& [version, name] : recorded) {
    const std::string known =
        version >= 1 ? migrations_[static_cast<std::size_t>(version) - 1].name : "<none>";
    if (known != name) {
      return Status(ErrorCode::kInvalid, "database records migration " + std::to_string(version) +
                                             " as '" + name + "' but this llmcapd has '" + known +
                                             "'");
    }
  }

  for (const Migration& m : migrations_) {
    if (recorded.contains(m.version)) continue;
    Result<Transaction> tx = Transaction::begin(db);
    if (!tx.ok()) return tx.status();
    if (Status s = db.exec(m.sql); !s.ok()) {
      return Status(s.code(), file_name(m) + ": " + s.message());
    }
    Result<Statement> ins =
        db.prepare("INSERT INTO schema_migrations(version, name, applied_at_ms) VALUES (?, ?, ?)");
    if (!ins.ok()) return ins.status();
    if (Status s = ins->bind(1, m.version).bind(2, m.name).bind(3, now_ms_()).run(); !s.ok()) {
      return s;
    }
    if (Status s = tx->commit(); !s.ok())
      return Status(s.code(), file_name(m) + ": " + s.message());
    report.applied.push_back(m.version);
  }
  report.to_version = latest;
  return report;
}

}  // namespace llmcap::storage
