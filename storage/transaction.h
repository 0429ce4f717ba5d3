// Transaction: RAII BEGIN ... COMMIT on a Database; rolls back in the destructor unless
// commit() succeeded.
//
// Write transactions start with BEGIN IMMEDIATE (take the write lock up front, so a transaction
// never fails half-way with SQLITE_BUSY when upgrading from a read lock). If SQLite already
// rolled the transaction back itself (e.g. after SQLITE_FULL), the destructor does nothing.
//
// Ownership: borrows the Database, which must outlive it. Move-only.
// Thread safety: same as its Database — one thread at a time. Not nestable.
#pragma once

#include "storage/database.h"
#include "storage/status.h"

namespace llmcap::storage {

class Transaction {
 public:
  enum class Mode { kDeferred, kImmediate };

  // Fails with kBusy when the write lock is not obtained within the busy timeout, kInvalid when
  // a transaction is already open on `db`.
  static Result<Transaction> begin(Database& db, Mode mode = Mode::kImmediate);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  // Commits. On failure the transaction is rolled back (nothing of it is kept).
  Status commit();
  // Explicit rollback; the destructor does the same.
  void rollback();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_;  // null once committed / rolled back / moved from
};

}  // namespace llmcap::storage
