-- 0003_job_kind: measured jobs and predictions side by side (issue 20). A prediction runs the
-- same plan on sim:// targets in virtual time (POST /v1/predictions, docs/prediction.md); it is
-- stored like a job and marked by its kind everywhere it appears.
ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'measured'
  CHECK (kind IN ('measured', 'predicted'));
CREATE INDEX jobs_kind ON jobs(kind, id);
