-- 0004_tenants: jobs belong to a tenant (issue 35 #4, docs/security.md "Tenants"). A tenant's
-- tokens see and act on its own jobs only; idempotency keys are a tenant's own, so two tenants
-- using the same key get a job each. Rows stored before tenants existed belong to 'default', the
-- tenant of the admin_tokens/read_tokens settings. The audit trail names the tenant and the
-- token id (a short hash, never the token) that acted.
ALTER TABLE jobs ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
CREATE INDEX jobs_tenant ON jobs(tenant, id);

-- The key was unique across the daemon; it is unique per tenant now. SQLite cannot change a
-- primary key in place, so the table is rebuilt (its only reference points to jobs).
CREATE TABLE idempotency_keys_by_tenant (
  tenant TEXT NOT NULL,
  key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  created_at_ms INTEGER NOT NULL,
  PRIMARY KEY (tenant, key)
) STRICT;
INSERT INTO idempotency_keys_by_tenant (tenant, key, request_hash, job_id, created_at_ms)
  SELECT 'default', key, request_hash, job_id, created_at_ms FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_by_tenant RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_job ON idempotency_keys(job_id);

ALTER TABLE audit ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE audit ADD COLUMN token_id TEXT NOT NULL DEFAULT '';
