-- 0001_initial: llmcapd's first schema. Forward-only: never edit a released migration; add
-- NNNN_next.sql instead. Times are unix milliseconds (_ms) unless named _ns (step-relative
-- monotonic nanoseconds, see analysis/request_sample.h). JSON columns hold text.
-- Everything a job owns hangs off jobs(id) with ON DELETE CASCADE, so deleting a job row removes
-- its targets, secrets, steps, samples, telemetry, capacity results and idempotency keys.
-- (Plans are parents of jobs; SqliteJobStore deletes a plan when its last job goes.)

CREATE TABLE plans (
  id TEXT PRIMARY KEY,                -- "plan_<ulid>"
  plan_json TEXT NOT NULL,            -- normalised plan JSON
  workload_fingerprint TEXT NOT NULL, -- hash of the workload part (compare runs of one workload)
  created_at_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX plans_fingerprint ON plans(workload_fingerprint);

CREATE TABLE jobs (
  id TEXT PRIMARY KEY,                -- "job_<ulid>": sorts by creation time
  plan_id TEXT NOT NULL REFERENCES plans(id),
  state TEXT NOT NULL CHECK (state IN
      ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'interrupted')),
  priority INTEGER NOT NULL DEFAULT 0,
  created_at_ms INTEGER NOT NULL,
  started_at_ms INTEGER,
  finished_at_ms INTEGER,
  submitted_by TEXT NOT NULL DEFAULT '',
  error_message TEXT,
  progress_json TEXT NOT NULL DEFAULT '{}',
  last_completed_step INTEGER,        -- steps.seq of the last committed step; NULL = none
  cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1))
) STRICT;
CREATE INDEX jobs_state ON jobs(state, id);
CREATE INDEX jobs_created ON jobs(created_at_ms, id);
CREATE INDEX jobs_plan ON jobs(plan_id);

CREATE TABLE job_targets (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,          -- order in the plan
  name TEXT NOT NULL,
  base_url TEXT NOT NULL,
  hardware_json TEXT NOT NULL DEFAULT '{}',
  price_per_hour REAL,                -- NULL when not given
  PRIMARY KEY (job_id, name)
) STRICT;
CREATE INDEX job_targets_name ON job_targets(name, job_id);

-- Credentials for targets: a table of its own, read only by the runner (SqliteJobStore::
-- get_secrets) and never joined into job reads, so no API path can leak them.
CREATE TABLE job_secrets (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  target TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (job_id, target, key)
) STRICT;

CREATE TABLE steps (
  id INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,               -- order of the step within the job (runner's counter)
  target TEXT NOT NULL,
  phase_index INTEGER NOT NULL,
  phase_name TEXT NOT NULL,
  phase_kind TEXT NOT NULL,
  step_index INTEGER NOT NULL,
  params_json TEXT NOT NULL DEFAULT '{}',
  summary_json TEXT,                  -- NULL until the step is completed
  verdict TEXT,
  verdict_json TEXT,
  partial INTEGER NOT NULL DEFAULT 0 CHECK (partial IN (0, 1)),
  started_at_ms INTEGER NOT NULL,
  finished_at_ms INTEGER,             -- NULL while running
  UNIQUE (job_id, seq)
) STRICT;

-- One row per request (mirrors analysis::RequestSample). -1 = "did not happen", as there.
CREATE TABLE request_samples (
  id INTEGER PRIMARY KEY,
  step_id INTEGER NOT NULL REFERENCES steps(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  t_intended_ns INTEGER NOT NULL,
  t_send_ns INTEGER NOT NULL,
  connect_ns INTEGER NOT NULL,
  tls_ns INTEGER NOT NULL,
  t_headers_ns INTEGER NOT NULL,
  t_first_token_ns INTEGER NOT NULL,
  t_last_token_ns INTEGER NOT NULL,
  t_end_ns INTEGER NOT NULL,
  token_events INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  output_tokens_estimated INTEGER NOT NULL,
  planned_input_tokens INTEGER NOT NULL,
  planned_output_tokens INTEGER NOT NULL,
  max_itl_ns INTEGER NOT NULL,
  http_status INTEGER NOT NULL,
  error_class INTEGER NOT NULL,       -- analysis::ErrorClass value
  finish_reason INTEGER NOT NULL,     -- analysis::FinishReason value
  error_message TEXT,                 -- NULL when empty
  token_times BLOB                    -- NULL, or little-endian int64 arrival times (ns)
) STRICT;
CREATE INDEX request_samples_step ON request_samples(step_id);

CREATE TABLE telemetry_samples (
  id INTEGER PRIMARY KEY,
  step_id INTEGER NOT NULL REFERENCES steps(id) ON DELETE CASCADE,
  t_ns INTEGER NOT NULL,
  series TEXT NOT NULL,               -- e.g. "vllm:num_requests_running"
  labels TEXT NOT NULL DEFAULT '',    -- canonical 'k="v",...' text
  value REAL NOT NULL
) STRICT;
CREATE INDEX telemetry_samples_step ON telemetry_samples(step_id, series);

CREATE TABLE capacity_results (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  target TEXT NOT NULL,
  result_json TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  PRIMARY KEY (job_id, target)
) STRICT;

CREATE TABLE idempotency_keys (
  key TEXT PRIMARY KEY,
  request_hash TEXT NOT NULL,
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  created_at_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX idempotency_keys_job ON idempotency_keys(job_id);

-- Audit trail. job_id deliberately has no foreign key: the record of a deletion outlives the job.
CREATE TABLE audit (
  id INTEGER PRIMARY KEY,
  ts_ms INTEGER NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  job_id TEXT,
  detail TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX audit_job ON audit(job_id, id);
