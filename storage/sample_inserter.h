// SampleInserter: prepared INSERT statements for request_samples and telemetry_samples on one
// connection, reused row after row (the hot path of SampleWriter and SqliteJobStore).
// Callers wrap many inserts in one Transaction; the inserter itself opens none.
//
// Ownership: borrows the Database (must outlive it). Thread safety: as its Database.
#pragma once

#include "storage/database.h"
#include "storage/records.h"
#include "storage/statement.h"
#include "storage/status.h"

namespace llmcap::storage {

class SampleInserter {
 public:
  // Fails with kInvalid when the schema lacks the tables (database not migrated).
  static Result<SampleInserter> create(Database& db);

  // Fails with the mapped SQLite error: kDiskFull, kConflict (unknown step_id: foreign key),
  // kReadOnly, kIoError.
  Status insert(const SampleRow& row);
  Status insert(const TelemetryRow& row);

 private:
  SampleInserter(Statement samples, Statement telemetry)
      : samples_(std::move(samples)), telemetry_(std::move(telemetry)) {}

  Statement samples_;
  Statement telemetry_;
};

// Reads the sample columns in the order of kSampleColumns (shared with SqliteJobStore reads).
SampleRow read_sample_row(const Statement& st);
// "id, step_id, idx, ..." — the column list read_sample_row expects.
extern const char* const kSampleColumns;

}  // namespace llmcap::storage
