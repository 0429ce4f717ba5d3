-- 0002_job_verdict: the job's verdict beside its state (analysis/target_verdict.h), so an
-- acceptance workflow can gate on GET /v1/jobs/{id} without downloading the results.
-- verdict: NULL until the job's results are stored; verdict_json: the results' "verdict" object
-- (overall outcome, statement, one entry per target).
ALTER TABLE jobs ADD COLUMN verdict TEXT
  CHECK (verdict IS NULL OR verdict IN ('pass', 'fail', 'inconclusive'));
ALTER TABLE jobs ADD COLUMN verdict_json TEXT;
CREATE INDEX jobs_verdict ON jobs(verdict, id);
