#include "storage/transaction.h"

#include <utility>

namespace llmcap::storage {

Result<Transaction> Transaction::begin(Database& db, Mode mode) {
  if (db.in_transaction()) {
    return Status(ErrorCode::kInvalid, "begin transaction: a transaction is already open");
  }
  Status s = db.exec(mode == Mode::kImmediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
  if (!s.ok()) return s;
  return Transaction(&db);
}

Transaction::Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

Transaction::~Transaction() { rollback(); }

Status Transaction::commit() {
  if (db_ == nullptr) return Status(ErrorCode::kInvalid, "commit: transaction is not open");
  if (!db_->in_transaction()) {
    // SQLite rolled it back on its own (disk full, I/O error): report that rather than "ok".
    db_ = nullptr;
    return Status(ErrorCode::kIoError, "commit: the transaction was already rolled back");
  }
  Status s = db_->exec("COMMIT");
  if (!s.ok()) {
    rollback();
    return s;
  }
  db_ = nullptr;
  return s;
}

void Transaction::rollback() {
  if (db_ == nullptr) return;
  if (db_->in_transaction()) {
    // A failed ROLLBACK leaves nothing better to do; the connection reports it on next use.
    (void)db_->exec("ROLLBACK");
  }
  db_ = nullptr;
}

}  // namespace llmcap::storage
