#!/usr/bin/env python3
"""Restart safety of the real `llmcapd serve` binary (issue 6, "Done when").

Usage: daemon_restart_test.py PATH/TO/llmcapd [unittest args]

SIGKILLs the daemon while a multi-step job runs, checks the SQLite file (PRAGMA
integrity_check, committed steps and their samples), restarts on the same database, finds the
job `interrupted` with its completed steps intact, resumes it to `succeeded` with every phase in
the results, and checks that SIGTERM exits 0 within the grace period (finishing the running
step, starting no new one). A loop variant kills at seeded random points 20 times in a row
(issue 9), within 90 s; another kills at every step boundary of a 6-step phase and checks
that each resume keeps every stored step and runs each step once (issue 35 #3).
Only embedded sim:// targets run.
"""

import json
import os
import random
import signal
import sqlite3
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llmcapd_harness import Daemon, plan  # noqa: E402

BINARY = None
SECRET = "sk-llmcap-restart-SECRET-77aa01"
GRACE_S = 3


def db_snapshot(path):
    """integrity_check result and {seq: (summary_json, sample count)} of finished steps."""
    db = sqlite3.connect(path)
    try:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        rows = db.execute(
            "SELECT s.seq, s.summary_json, (SELECT COUNT(*) FROM request_samples r "
            "WHERE r.step_id = s.id) FROM steps s WHERE s.finished_at_ms IS NOT NULL "
            "ORDER BY s.seq").fetchall()
        unfinished = db.execute(
            "SELECT COUNT(*) FROM steps WHERE finished_at_ms IS NULL").fetchone()[0]
        jobs = dict(db.execute("SELECT id, state FROM jobs").fetchall())
    finally:
        db.close()
    return integrity, {seq: (summary, n) for seq, summary, n in rows}, unfinished, jobs


def db_snapshot_all(path):
    """As db_snapshot, with the finished steps of every job keyed by (job id, seq)."""
    db = sqlite3.connect(path)
    try:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        rows = db.execute(
            "SELECT s.job_id, s.seq, s.summary_json, (SELECT COUNT(*) FROM request_samples r "
            "WHERE r.step_id = s.id) FROM steps s WHERE s.finished_at_ms IS NOT NULL").fetchall()
        unfinished = db.execute(
            "SELECT COUNT(*) FROM steps WHERE finished_at_ms IS NULL").fetchone()[0]
        jobs = dict(db.execute("SELECT id, state FROM jobs").fetchall())
    finally:
        db.close()
    return integrity, {(j, seq): (summary, n) for j, seq, summary, n in rows}, unfinished, jobs


class RestartTest(unittest.TestCase):
    def new_daemon(self, db_path=None):
        d = Daemon(BINARY, db_path=db_path,
                   args=["--shutdown-grace-s", str(GRACE_S)], log_level="info")
        d.forbidden = [SECRET]
        self.addCleanup(d.cleanup)
        return d

    def assertSteps(self, steps_now, steps_before):
        """Every step finished before is still there, unchanged, with its samples."""
        for seq, (summary, samples) in steps_before.items():
            self.assertIn(seq, steps_now, "finished step %s lost" % (seq,))
            self.assertEqual(steps_now[seq][0], summary, "step %s changed" % (seq,))
            self.assertEqual(steps_now[seq][1], samples, "samples of step %s changed" % (seq,))
            self.assertGreater(samples, 0, "step %s has no samples" % (seq,))

    def test_sigkill_restart_resume_then_sigterm(self):
        # 1.5 s steps (rates high enough that min_requests does not lengthen them much): what is
        # checked is which steps were stored, not what they measured.
        sweep_then_rate = plan(
            "restart", levels=(1, 2, 4, 8), duration_s=1.5, warmup_s=0.25, secret=SECRET,
            extra_phases=[{"kind": "rate_sweep", "rates_rps": [4, 8], "duration_s": 1.5,
                           "warmup_s": 0.25}])
        d = self.new_daemon().start()
        job_id = d.submit(sweep_then_rate)
        d.wait_job(job_id, lambda j: (j["last_completed_step"] or -1) >= 1, 60,
                   "two completed steps")
        before = d.get_json("/v1/jobs/%s/results" % job_id)
        self.assertFalse(before["complete"])
        self.assertGreaterEqual(len(before["steps"]), 2)

        d.signal(signal.SIGKILL)
        self.assertEqual(d.wait(10), -signal.SIGKILL)
        integrity, steps, unfinished, jobs = db_snapshot(d.db_path)
        self.assertEqual(integrity, "ok")
        self.assertGreaterEqual(len(steps), 2)
        self.assertEqual(sorted(steps)[:2], [0, 1])
        self.assertEqual(jobs[job_id], "running")  # as the killed process left it
        self.assertLessEqual(unfinished, 1)  # at most the step that was running

        # Restart on the same database: interrupted, completed steps intact.
        d.start()
        job = d.job(job_id)
        self.assertEqual(job["state"], "interrupted")
        self.assertGreaterEqual(job["last_completed_step"], 1)
        res = d.get_json("/v1/jobs/%s/results" % job_id)
        self.assertFalse(res["complete"])
        self.assertGreaterEqual(len(res["steps"]), 2)
        self.assertEqual([s["global_step"] for s in res["steps"]], sorted(steps))
        for s in res["steps"]:
            self.assertEqual(s, json.loads(steps[s["global_step"]][0]))
        integrity, steps_now, unfinished, _ = db_snapshot(d.db_path)
        self.assertEqual(unfinished, 0, "half-done step not dropped at start-up")
        self.assertSteps(steps_now, steps)
        r = d.request("GET", "/v1/jobs/%s/requests?step=1" % job_id)  # stored seq 0, [1/N]
        self.assertEqual(r.status, 200)
        self.assertEqual(len(r.text.splitlines()), steps[0][1])
        self.assertIn("interrupted", d.log_text())

        # Resume to the end.
        r = d.request("POST", "/v1/jobs/%s:resume" % job_id)
        self.assertEqual(r.status, 202, r)
        self.assertEqual(d.request("POST", "/v1/jobs/%s:resume" % job_id).status, 409)
        job = d.wait_state(job_id, "succeeded", 120)
        res = d.get_json("/v1/jobs/%s/results" % job_id)
        self.assertTrue(res["complete"])
        phases = res["targets"][0]["phases"]
        self.assertEqual([p["kind"] for p in phases], ["concurrency_sweep", "rate_sweep"])
        self.assertEqual([s["params"]["concurrency"] for s in phases[0]["steps"]], [1, 2, 4, 8])
        # A level whose 1.5 s window held fewer than 5 request lifetimes is judged again over a
        # longer one at once (docs/metrics.md §4.1): the deciding steps are one per rate.
        deciding = [s for s in phases[1]["steps"] if s.get("rejudge_window_s") is None]
        self.assertEqual([s["params"]["rate_rps"] for s in deciding], [4, 8])
        for i, s in enumerate(phases[1]["steps"]):
            if s.get("rejudge_window_s") is not None:
                again = phases[1]["steps"][i + 1]
                self.assertEqual(again["params"]["rate_rps"], s["params"]["rate_rps"])
                self.assertTrue(again["params"]["judged_again_for_trend"])
        for p in phases:
            for s in p["steps"]:
                self.assertFalse(s["partial"], s["label"])
        # The resumed phases' steps count in the capacity: the closed-loop levels qualify.
        # The rate sweep has no confirming run, so the open-loop basis cannot pass (issue 17).
        cap = res["targets"][0]["capacity"]
        self.assertIsInstance(cap["closed_loop"]["point"], dict)
        self.assertEqual(cap["open_loop"]["steps_considered"], len(phases[1]["steps"]))
        self.assertIsNone(res["targets"][0]["qualified"])
        self.assertEqual(res["targets"][0]["verdict"]["basis"], "open_loop")
        self.assertEqual(job["verdict"]["outcome"], res["verdict"]["outcome"])
        integrity, steps_end, unfinished, _ = db_snapshot(d.db_path)
        self.assertEqual(integrity, "ok")
        self.assertEqual(unfinished, 0)
        final_seqs = [s["global_step"] for p in phases for s in p["steps"]]
        sys.stderr.write("steps before the kill %s, in the final results %s\n" %
                         (sorted(steps), final_seqs))
        self.assertEqual(job["last_completed_step"], max(final_seqs))
        # Issue 23 #10 and issue 35 #3: the cut phase continued after its stored steps, which
        # are kept unchanged, so the job stores each step of its results once, numbered
        # without gaps, and the samples export holds exactly those steps' samples.
        self.assertSteps(steps_end, steps)
        self.assertEqual(sorted(final_seqs), list(range(len(final_seqs))))
        self.assertEqual(sorted(steps_end), sorted(final_seqs))
        for p in phases:
            for s in p["steps"]:
                self.assertEqual(json.loads(steps_end[s["global_step"]][0]), s)
        exported = d.request("GET", "/v1/jobs/%s/requests?limit=100000" % job_id)
        self.assertEqual(exported.status, 200)
        self.assertEqual(len(exported.text.splitlines()),
                         sum(n for _, n in steps_end.values()))

        # SIGTERM while a job runs: exit 0 within the grace period; the job is resumable.
        long_id = d.submit(plan("long", levels=(1,), duration_s=60, warmup_s=0))
        d.wait_state(long_id, "running", 30)
        d.signal(signal.SIGTERM)
        started = time.monotonic()
        rc = d.wait(GRACE_S + 15)
        took = time.monotonic() - started
        self.assertEqual(rc, 0, d.log_text()[-2000:])
        self.assertLess(took, GRACE_S + 5)
        self.assertNotIn(SECRET, d.all_logs())
        integrity, _, _, jobs = db_snapshot(d.db_path)
        self.assertEqual(integrity, "ok")
        self.assertEqual(jobs[long_id], "interrupted")
        self.assertEqual(jobs[job_id], "succeeded")

    def test_sigterm_finishes_current_step_then_stops(self):
        # shutdown_grace_s is the time to finish the current step: no new step starts, the
        # daemon exits as soon as the running one is stored, the job is resumable.
        # The grace period is far longer than the rest of the step, so an exit well inside it
        # can only mean "stopped when the step was stored", even on a loaded machine.
        d = Daemon(BINARY, args=["--shutdown-grace-s", "40"], log_level="info")
        self.addCleanup(d.cleanup)
        d.start()
        job_id = d.submit(plan("term", levels=(1, 2, 4), duration_s=2, warmup_s=0))
        d.wait_state(job_id, "running", 30)
        time.sleep(1)  # inside step 0 (2 s)
        d.signal(signal.SIGTERM)
        started = time.monotonic()
        self.assertEqual(d.wait(55), 0)
        took = time.monotonic() - started
        integrity, steps, unfinished, jobs = db_snapshot(d.db_path)
        self.assertEqual(integrity, "ok")
        self.assertEqual(jobs[job_id], "interrupted")
        self.assertEqual(sorted(steps), [0], "started new steps after SIGTERM")
        self.assertFalse(json.loads(steps[0][0])["partial"])
        self.assertLess(took, 25, "waited for the grace period instead of the step's end")
        d.start()
        self.assertEqual(d.job(job_id)["state"], "interrupted")
        self.assertEqual(d.request("POST", "/v1/jobs/%s:resume" % job_id).status, 202)
        d.wait_state(job_id, "succeeded", 60)
        res = d.get_json("/v1/jobs/%s/results" % job_id)
        got = [s["params"]["concurrency"] for p in res["targets"][0]["phases"] for s in p["steps"]]
        self.assertEqual(got, [1, 2, 4])
        d.signal(signal.SIGTERM)  # idle: exits at once
        self.assertEqual(d.wait(10), 0)

    def test_sigkill_at_random_points_twenty_times(self):
        # 20 SIGKILLs in a row at seeded random points of running jobs (issue 9). After every
        # kill: the file passes integrity_check, at most the running step is unfinished, every
        # step the API had reported completed before the kill is stored, and every finished
        # step seen before is unchanged with all its samples. A job that succeeds between kills
        # is checked and followed by a fresh one, so every kill lands during a job.
        rng = random.Random(20261202)
        # Eight one-step phases: a finished step is (nearly always) a finished phase, so resumes
        # reuse stored phases as well as re-running the unfinished one.
        phases = [{"kind": "concurrency_sweep", "levels": [c], "duration_s": 1.0,
                   "warmup_s": 0.2} for c in (1, 2, 4, 8)]
        phases += [{"kind": "rate_sweep", "rates_rps": [r], "duration_s": 1.0, "warmup_s": 0.2}
                   for r in (2, 4, 6, 8)]
        doc = plan("chaos", levels=(), extra_phases=phases, min_requests=2)
        expected = ([("concurrency_sweep", {"concurrency": c}) for c in (1, 2, 4, 8)] +
                    [("rate_sweep", {"rate_rps": float(r)}) for r in (2, 4, 6, 8)])
        d = self.new_daemon()
        d.start()
        job_id = d.submit(doc)
        steps_seen = {}  # (job, seq) -> (summary, samples): every step ever seen stored
        interrupted = succeeded = 0
        started = time.monotonic()
        deadline = started + 90

        def check_done(jid):
            res = d.get_json("/v1/jobs/%s/results" % jid)
            self.assertTrue(res["complete"])
            # The steps' identity: kind and level (a window lengthened to hold min_requests
            # says so in params.lengthened_from_s, docs/metrics.md §5.2).
            got = [(p["kind"], {k: v for k, v in p["steps"][0]["params"].items()
                                if k != "lengthened_from_s"})
                   for p in res["targets"][0]["phases"]]
            self.assertEqual(got, expected)
            _, now, _, _ = db_snapshot_all(d.db_path)
            result_seqs = []
            for p in res["targets"][0]["phases"]:
                for s in p["steps"]:
                    self.assertEqual(json.loads(now[(jid, s["global_step"])][0]), s)
                    result_seqs.append(s["global_step"])
            # Issue 23 #10: after any number of kills and resumes each step is stored once and
            # the samples export holds exactly the samples of the steps in the results.
            stored = sorted(seq for j, seq in now if j == jid)
            self.assertEqual(stored, sorted(result_seqs))
            self.assertEqual(stored, list(range(len(stored))))
            exported = d.request("GET", "/v1/jobs/%s/requests?limit=100000" % jid)
            self.assertEqual(len(exported.text.splitlines()),
                             sum(now[(jid, seq)][1] for seq in stored))

        for i in range(20):
            # Kill anywhere from right after start-up to about two steps in.
            time.sleep(rng.uniform(0.05, 2.5))
            acked = d.job(job_id)["last_completed_step"]
            # Every step ever seen stored is kept unchanged, across every kill and resume
            # (issue 35 #3: a resume once replaced the steps of the phase it re-ran).
            _, now, _, _ = db_snapshot_all(d.db_path)
            self.assertSteps(now, steps_seen)
            steps_seen.update(now)
            d.signal(signal.SIGKILL)
            self.assertEqual(d.wait(10), -signal.SIGKILL)
            integrity, steps, unfinished, jobs = db_snapshot_all(d.db_path)
            self.assertEqual(integrity, "ok", "kill %d" % i)
            self.assertLessEqual(unfinished, 1, "kill %d" % i)
            for seq in range(0, (acked if acked is not None else -1) + 1):
                self.assertIn((job_id, seq), steps, "kill %d: reported step %d lost" % (i, seq))
            self.assertSteps(steps, steps_seen)
            d.start()
            job = d.job(job_id)
            if jobs[job_id] == "running":
                self.assertEqual(job["state"], "interrupted", "kill %d" % i)
            sys.stderr.write("kill %d at %.1f s: job was %s, %d finished steps, %d unfinished\n"
                             % (i, time.monotonic() - started, jobs[job_id], len(steps),
                                unfinished))
            if job["state"] == "interrupted":
                interrupted += 1
                res = d.get_json("/v1/jobs/%s/results" % job_id)
                self.assertEqual(sorted(s["global_step"] for s in res["steps"]),
                                 sorted(seq for jid, seq in steps if jid == job_id))
                r = d.request("POST", "/v1/jobs/%s:resume" % job_id)
                self.assertEqual(r.status, 202, r)
            elif job["state"] == "succeeded":
                succeeded += 1
                check_done(job_id)
                job_id = d.submit(doc)
            self.assertLess(time.monotonic(), deadline, "restart loop too slow")
        self.assertGreaterEqual(interrupted, 15, "too few kills hit a running job")
        job = d.wait_state(job_id, "succeeded", max(10, deadline + 30 - time.monotonic()))
        check_done(job_id)
        integrity, steps, unfinished, _ = db_snapshot_all(d.db_path)
        self.assertEqual(integrity, "ok")
        self.assertEqual(unfinished, 0)
        sys.stderr.write("20 kills: %d hit a running job, %d jobs completed between kills, "
                         "%.1f s\n" % (interrupted, succeeded, time.monotonic() - started))
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(GRACE_S + 15), 0)

    def test_sigkill_at_every_step_boundary_keeps_every_stored_step(self):
        # Issue 35 #3: a 6-step phase, the daemon SIGKILLed as soon as each further step is
        # stored (after step 1, restart, resume; after step 2, ...). Every acknowledged step
        # (stored before a kill) is still there, unchanged with its samples, after every restart
        # and resume and at the end; the job finishes with each step exactly once. Before the
        # fix a resume deleted the stored steps of the phase it was cut in and ran them again.
        # Pass/fail never depends on speed: a kill that comes a step late (a stalled test
        # process) covers the later boundary and says so; the properties are checked anyway.
        levels = (1, 2, 3, 4, 5, 6)
        doc = plan("boundaries", levels=levels, duration_s=1.2, warmup_s=0.2, min_requests=2)
        d = self.new_daemon().start()
        job_id = d.submit(doc)
        acknowledged = {}  # seq -> (summary, samples): every step seen stored, before any kill
        kills = []  # stored steps at each kill
        started = time.monotonic()

        def stored_steps(job):
            last = job["last_completed_step"]
            return 0 if last is None else last + 1

        def stored_now():
            integrity, steps, unfinished, jobs = db_snapshot(d.db_path)
            self.assertEqual(integrity, "ok")
            self.assertLessEqual(unfinished, 1)  # at most the running step
            self.assertSteps(steps, acknowledged)
            acknowledged.update(steps)
            return steps, jobs

        # The last boundary (all six stored) is killed at too: the job may still be storing its
        # phase and results then, or already have ended.
        stored_after_restart = 0
        resumed_at = []  # stored steps at each resume
        while stored_after_restart < len(levels):
            # Kill right after one more step is stored: the next one has started (or is about
            # to), so the kill cuts the phase between steps.
            want = stored_after_restart + 1
            d.wait_job(job_id, lambda j: stored_steps(j) >= want, 60, "step %d stored" % want,
                       interval_s=0.01)
            d.signal(signal.SIGKILL)
            self.assertEqual(d.wait(10), -signal.SIGKILL)
            steps, jobs = stored_now()
            kills.append(len(steps))
            sys.stderr.write("kill %d: %d steps stored (wanted %d), job %s\n" %
                             (len(kills), len(steps), want, jobs[job_id]))
            if jobs[job_id] != "running":
                break  # the last step and the results were stored before the kill
            d.start()
            self.assertEqual(d.job(job_id)["state"], "interrupted")
            steps, _ = stored_now()  # start-up removed only the unfinished step
            self.assertEqual(sorted(steps), list(range(kills[-1])))
            res = d.get_json("/v1/jobs/%s/results" % job_id)
            self.assertEqual([s["global_step"] for s in res["steps"]], sorted(steps))
            r = d.request("POST", "/v1/jobs/%s:resume" % job_id)
            self.assertEqual(r.status, 202, r)
            stored_after_restart = kills[-1]
            resumed_at.append(stored_after_restart)
        if d.running():
            job = d.wait_state(job_id, "succeeded", 60)
        else:  # killed after the job ended: its results are stored
            d.start()
            job = d.job(job_id)
        self.assertEqual(job["state"], "succeeded")
        steps, _ = stored_now()
        sys.stderr.write("%d kills at %s stored steps, %.1f s\n" %
                         (len(kills), kills, time.monotonic() - started))
        self.assertGreaterEqual(len(kills), 1)
        self.assertEqual(kills, sorted(set(kills)))  # each kill after a further stored step

        # Each step exactly once: stored rows, results and samples export agree.
        res = d.get_json("/v1/jobs/%s/results" % job_id)
        self.assertTrue(res["complete"])
        phases = res["targets"][0]["phases"]
        self.assertEqual(len(phases), 1)
        got = [s["params"]["concurrency"] for s in phases[0]["steps"]]
        self.assertEqual(got, list(levels))
        seqs = [s["global_step"] for s in phases[0]["steps"]]
        self.assertEqual(seqs, list(range(len(levels))))
        self.assertEqual(sorted(steps), seqs)
        self.assertEqual(job["last_completed_step"], len(levels) - 1)
        for s in phases[0]["steps"]:
            self.assertEqual(json.loads(steps[s["global_step"]][0]), s)
            self.assertFalse(s["partial"], s["label"])
        # The steps stored before the last resume that ran the phase were kept, not run again.
        # A kill after all six steps can land after the phase's document was stored too: then
        # the last resume reused that document, written by the resume before.
        ran_phase = resumed_at[:-1] if phases[0].get("resumed") else resumed_at
        if ran_phase:
            self.assertEqual(phases[0].get("resumed_steps"), ran_phase[-1])
        exported = d.request("GET", "/v1/jobs/%s/requests?limit=100000" % job_id)
        self.assertEqual(exported.status, 200)
        self.assertEqual(len(exported.text.splitlines()), sum(n for _, n in steps.values()))
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(GRACE_S + 15), 0)

if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        sys.exit("usage: daemon_restart_test.py PATH/TO/llmcapd [unittest args]")
    BINARY = os.path.abspath(sys.argv[1])
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)
