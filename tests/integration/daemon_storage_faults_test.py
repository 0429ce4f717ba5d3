#!/usr/bin/env python3
"""Storage faults under the real `llmcapd serve` binary while a job runs (issue 9).

Usage: daemon_storage_faults_test.py PATH/TO/llmcapd [unittest args]

Real faults, not mocks (the tests run as root and mount their own small filesystems):
- Disk full: the database lives on a tmpfs of a few MiB; after the job's first step is stored,
  a filler file takes every free byte, so the next write of the job fails with ENOSPC
  (SQLITE_FULL), exactly as when a real disk fills up.
- Read-only: the database lives on an ext4 filesystem in a loop device mounted with
  errors=remount-ro; after the first step the test raises an ext4 error through
  /sys/fs/ext4/<dev>/trigger_fs_error and the kernel remounts the filesystem read-only under the
  running daemon (what a disk error does in production). `mount -o remount,ro` and read-only
  bind remounts are refused (EBUSY) while the daemon holds the database open for writing, so they
  cannot inject this fault.
In both cases: the job ends `failed` with a reason that names the storage error, the log says so,
the daemon keeps answering reads (job, results, stored samples, health), the samples of the step
stored before the fault are intact, and PRAGMA integrity_check is ok afterwards. After disk
space is freed, a new job runs to `succeeded` (the writer recovers).

Without mount rights (not root, no tmpfs/loop/ext4) the tests print "SKIPPED: ..." and the run
exits 77, which CTest reports as skipped (SKIP_RETURN_CODE); a failure still exits 1.
Each test needs ~15 s.
"""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llmcapd_harness import Daemon, plan  # noqa: E402

BINARY = None
SKIPPED = []


def done_at_least(job, step):
    """True once step `step` (0-based) of the job is stored (last_completed_step may be 0)."""
    return job["last_completed_step"] is not None and job["last_completed_step"] >= step


def result_steps(res):
    """The step documents of a results answer: top level while running, else per phase."""
    if "steps" in res:
        return res["steps"]
    return [s for t in res.get("targets", []) for p in t.get("phases", []) for s in p["steps"]]


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def skip(test, why):
    SKIPPED.append(why)
    sys.stderr.write("SKIPPED: %s\n" % why)
    test.skipTest(why)


def fill(directory):
    """Writes a filler file until the filesystem is full; returns its path and size in bytes."""
    path = os.path.join(directory, "filler")
    written = 0
    with open(path, "wb", buffering=0) as f:
        for chunk in (1 << 20, 64 << 10, 4 << 10, 512, 1):
            block = b"\0" * chunk
            while True:
                try:
                    f.write(block)
                    written += chunk
                except OSError:
                    break
    return path, written


def sample_rows(db, step_seq, job_id):
    return db.execute(
        "SELECT COUNT(*) FROM request_samples r JOIN steps s ON r.step_id = s.id "
        "WHERE s.job_id = ? AND s.seq = ?", (job_id, step_seq)).fetchone()[0]


def fault_plan(name):
    # Many short requests so each step writes a few hundred sample rows; ten 1.5 s steps, so
    # the job is still running well after the fault is injected after its first step.
    doc = plan(name, levels=(8,) * 10, duration_s=1.5, warmup_s=0.2, min_requests=1)
    doc["workload"] = {"input_tokens": {"fixed": 16}, "output_tokens": {"fixed": 4}}
    return doc


class StorageFaultTest(unittest.TestCase):
    def mount_point(self):
        if os.geteuid() != 0:
            skip(self, "storage fault tests need root (they mount a tmpfs / loop filesystem)")
        mnt = tempfile.mkdtemp(prefix="llmcap-fault-")
        self.addCleanup(shutil.rmtree, mnt, True)
        return mnt

    def start_daemon(self, db_path):
        # The tmpfs is a few MiB: refuse new jobs (507) only below 1 MiB free.
        d = Daemon(BINARY, db_path=db_path,
                   args=["--shutdown-grace-s", "2", "--min-free-disk-mib", "1"], log_level="info")
        self.addCleanup(d.cleanup)
        return d.start()

    def run_until_first_step(self, d, name):
        job_id = d.submit(fault_plan(name))
        d.wait_job(job_id, lambda j: done_at_least(j, 0), 60, "first step")
        rows = d.request("GET", "/v1/jobs/%s/requests?step=1" % job_id)  # the first step
        self.assertEqual(rows.status, 200)
        before = rows.text.splitlines()
        self.assertGreater(len(before), 0)
        return job_id, before

    def assert_failed_and_readable(self, d, job_id, before, words):
        """The job ends failed naming the storage error; reads still work."""
        job = d.wait_job(job_id, lambda j: j["state"] in ("failed", "succeeded", "cancelled"),
                         30, "a terminal state after the storage fault")
        self.assertEqual(job["state"], "failed", job)
        error = job["error"] or ""
        self.assertTrue(any(w in error for w in words), "error %r names none of %s" %
                        (error, words))
        self.assertIn("storage", error)
        self.assertTrue(d.running(), "daemon died after the storage fault")
        # Reads keep working: health, the job, the list, results, stored samples, metrics.
        self.assertEqual(d.request("GET", "/healthz").status, 200)
        self.assertEqual(d.job(job_id)["state"], "failed")
        listed = d.get_json("/v1/jobs")
        self.assertIn(job_id, [j["id"] for j in listed["jobs"]])
        self.assertEqual([j["state"] for j in listed["jobs"] if j["id"] == job_id], ["failed"])
        res = d.request("GET", "/v1/jobs/%s/results" % job_id)
        self.assertEqual(res.status, 200, res)
        self.assertIn(0, [s["global_step"] for s in result_steps(res.json())])
        rows = d.request("GET", "/v1/jobs/%s/requests?step=1" % job_id)
        self.assertEqual(rows.status, 200)
        self.assertEqual(rows.text.splitlines(), before, "stored samples changed")
        self.assertEqual(d.request("GET", "/metrics").status, 200)
        log = d.log_text()
        self.assertIn("job %s failed" % job_id, log)
        self.assertTrue(any(w in log for w in words), "log names none of %s" % (words,))
        return error

    def assert_intact(self, db_path, job_id, before):
        db = sqlite3.connect(db_path)
        try:
            self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            self.assertEqual(sample_rows(db, 0, job_id), len(before))
            finished = db.execute(
                "SELECT COUNT(*) FROM steps WHERE job_id = ? AND finished_at_ms IS NOT NULL",
                (job_id,)).fetchone()[0]
            self.assertGreaterEqual(finished, 1)
        finally:
            db.close()

    def test_disk_full_while_job_runs(self):
        mnt = self.mount_point()
        r = run(["mount", "-t", "tmpfs", "-o", "size=6m", "llmcap-fault", mnt])
        if r.returncode != 0:
            skip(self, "cannot mount a tmpfs: " + r.stdout.strip())
        self.addCleanup(run, ["umount", "-l", mnt])
        db_path = os.path.join(mnt, "llmcap.db")
        d = self.start_daemon(db_path)
        job_id, before = self.run_until_first_step(d, "diskfull")
        filler, size = fill(mnt)
        sys.stderr.write("disk full: tmpfs 6 MiB, filler %d bytes\n" % size)
        error = self.assert_failed_and_readable(d, job_id, before, ("disk_full", "full"))
        sys.stderr.write("job error: %s\n" % error)
        os.unlink(filler)
        self.assert_intact(db_path, job_id, before)
        # Space is back: the daemon stores new work again without a restart.
        small = plan("after-full", levels=(1,), duration_s=1, warmup_s=0, min_requests=1)
        again = d.submit(small)
        d.wait_state(again, "succeeded", 60)
        self.assertEqual(d.job(job_id)["state"], "failed")
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(20), 0)
        self.assert_intact(db_path, job_id, before)

    def test_read_only_filesystem_while_job_runs(self):
        mnt = self.mount_point()
        loop = self.mount_ext4(mnt, "errors=remount-ro")
        trigger = "/sys/fs/ext4/%s/trigger_fs_error" % os.path.basename(loop)
        if not os.path.exists(trigger):
            skip(self, "kernel has no " + trigger)
        db_path = os.path.join(mnt, "llmcap.db")
        d = self.start_daemon(db_path)
        job_id, before = self.run_until_first_step(d, "readonly")
        with open(trigger, "w") as f:
            f.write("llmcap storage fault test")
        with open("/proc/mounts") as f:
            opts = [line.split()[3] for line in f if line.split()[1] == mnt]
        # Linux 6.x shows an ext4 error remount as "emergency_ro" (older kernels: "ro").
        self.assertTrue(opts and (opts[0].startswith("ro") or "emergency_ro" in opts[0]), opts)
        error = self.assert_failed_and_readable(d, job_id, before,
                                                ("read_only", "Read-only file system"))
        sys.stderr.write("job error: %s\n" % error)
        # Issue 24 #4: not ready for writes (reads still work), and new jobs are refused.
        r = d.request("GET", "/readyz")
        self.assertEqual(r.status, 503, r.body)
        self.assertFalse(r.json()["writes"])
        self.assertIn("read-only", r.json()["reason"])
        self.assertEqual(d.request("POST", "/v1/jobs", fault_plan("after-ro")).status, 503)
        d.signal(signal.SIGTERM)
        rc = d.wait(20)
        self.assertIsNotNone(rc, "llmcapd did not exit on SIGTERM with a read-only database")
        # What the kernel holds for the database now (the filesystem stays read-only): copy the
        # file and its WAL, then check the copy.
        copy = tempfile.mkdtemp(prefix="llmcap-ro-copy-")
        self.addCleanup(shutil.rmtree, copy, True)
        for suffix in ("", "-wal"):
            if os.path.exists(db_path + suffix):
                shutil.copyfile(db_path + suffix, os.path.join(copy, "llmcap.db" + suffix))
        self.assert_intact(os.path.join(copy, "llmcap.db"), job_id, before)


    def mount_ext4(self, mnt, options="defaults"):
        """A 32 MiB ext4 image on a loop device mounted at mnt; returns the loop device."""
        image = os.path.join(tempfile.mkdtemp(prefix="llmcap-img-"), "fs.img")
        self.addCleanup(shutil.rmtree, os.path.dirname(image), True)
        with open(image, "wb") as f:
            f.truncate(32 << 20)
        r = run(["mkfs.ext4", "-q", "-F", image])
        if r.returncode != 0:
            skip(self, "mkfs.ext4 failed: " + r.stdout.strip())
        r = run(["losetup", "-f", "--show", image])
        if r.returncode != 0:
            skip(self, "no loop device: " + r.stdout.strip())
        loop = r.stdout.strip()
        self.addCleanup(run, ["losetup", "-d", loop])
        r = run(["mount", "-o", options, loop, mnt])
        if r.returncode != 0:
            skip(self, "cannot mount ext4 on %s: %s" % (loop, r.stdout.strip()))
        self.addCleanup(run, ["umount", mnt])
        return loop

    def test_frozen_filesystem_never_stalls_healthz(self):
        # Issue 35 #1: a /readyz during a filesystem freeze hung /healthz until the thaw (both
        # on the I/O thread). Now readiness runs on the blocking pool with a 2 s deadline: it
        # answers 503 while the freeze lasts, /healthz keeps answering, and after the thaw the
        # daemon is ready again.
        mnt = self.mount_point()
        self.mount_ext4(mnt)
        d = self.start_daemon(os.path.join(mnt, "llmcap.db"))
        self.assertEqual(d.request("GET", "/readyz").status, 200)
        r = run(["fsfreeze", "-f", mnt])
        if r.returncode != 0:
            skip(self, "fsfreeze failed: " + r.stdout.strip())
        self.addCleanup(run, ["fsfreeze", "-u", mnt])
        ready = {}

        def probe_readiness():
            started = time.monotonic()
            r = d.request("GET", "/readyz", timeout_s=60)
            ready["status"], ready["s"] = r.status, time.monotonic() - started
            ready["body"] = r.json()

        t = threading.Thread(target=probe_readiness)
        t.start()
        health_ms = []
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:  # the readiness check is stuck on the freeze
            started = time.monotonic()
            self.assertEqual(d.request("GET", "/healthz", timeout_s=10).status, 200)
            health_ms.append((time.monotonic() - started) * 1000)
            time.sleep(0.02)
        t.join(60)
        self.assertFalse(t.is_alive(), "/readyz hung on the frozen filesystem")
        self.assertEqual(ready["status"], 503, ready)
        self.assertIn("did not finish", ready["body"]["detail"])
        # While the first check is still stuck, the next probe is answered at once.
        again = d.request("GET", "/readyz", timeout_s=10)
        self.assertEqual(again.status, 503)
        health_ms.sort()
        p99 = health_ms[int(0.99 * (len(health_ms) - 1))]
        sys.stderr.write("frozen: /readyz 503 after %.2f s; %d /healthz, P99 %.1f ms, max %.1f "
                         "ms\n" % (ready["s"], len(health_ms), p99, health_ms[-1]))
        # A hang detector, not a speed check: before, /healthz waited for the thaw.
        self.assertLess(health_ms[-1], 5000)
        run(["fsfreeze", "-u", mnt])
        deadline = time.monotonic() + 30
        while d.request("GET", "/readyz", timeout_s=10).status != 200:
            self.assertLess(time.monotonic(), deadline, "not ready again after the thaw")
            time.sleep(0.2)

    def test_submit_on_a_full_disk_never_accepts_a_job_that_cannot_move(self):
        # Issue 24 #2: on a full disk a submit once answered 201 and the job stayed queued
        # forever. Now either 507 (nothing stored) or the job reaches a final state.
        mnt = self.mount_point()
        r = run(["mount", "-t", "tmpfs", "-o", "size=4m", "llmcap-full", mnt])
        if r.returncode != 0:
            skip(self, "cannot mount a tmpfs: " + r.stdout.strip())
        self.addCleanup(run, ["umount", "-l", mnt])
        d = self.start_daemon(os.path.join(mnt, "llmcap.db"))
        filler, size = fill(mnt)
        answers = []
        for i in range(5):
            r = d.request("POST", "/v1/jobs", plan("full-%d" % i, levels=(1,), duration_s=1,
                                                   warmup_s=0, min_requests=1))
            answers.append(r.status)
            self.assertIn(r.status, (201, 503, 507), r.body)
            if r.status == 201:
                job = d.wait_job(r.json()["id"],
                                 lambda j: j["state"] in ("failed", "succeeded", "cancelled"),
                                 30, "a final state on a full disk")
                self.assertIn(job["state"], ("failed", "succeeded"))
            else:
                self.assertEqual(r.json()["type"].rsplit("#", 1)[-1],
                                 "insufficient-storage" if r.status == 507 else
                                 "storage-unavailable")
        sys.stderr.write("full disk: filler %d bytes, answers %s\n" % (size, answers))
        self.assertIn(507, answers)
        ready = d.request("GET", "/readyz")
        self.assertEqual(ready.status, 503)
        self.assertFalse(ready.json()["writes"])
        self.assertEqual(d.request("GET", "/healthz").status, 200)
        os.unlink(filler)
        again = d.submit(plan("after-free", levels=(1,), duration_s=1, warmup_s=0,
                              min_requests=1))
        d.wait_state(again, "succeeded", 60)
        self.assertEqual(d.request("GET", "/readyz").status, 200)


class DeletedDatabaseTest(unittest.TestCase):
    def test_deleting_the_database_mid_job_fails_it_loudly(self):
        # Issue 23 #12: the job and later jobs once "succeeded" into an unlinked file, /readyz
        # stayed ready, and after a restart nothing existed.
        tmp = tempfile.mkdtemp(prefix="llmcap-unlink-")
        self.addCleanup(shutil.rmtree, tmp, True)
        db_path = os.path.join(tmp, "llmcap.db")
        d = Daemon(BINARY, db_path=db_path, args=["--shutdown-grace-s", "2"], log_level="info")
        self.addCleanup(d.cleanup)
        d.start()
        job_id = d.submit(fault_plan("unlinked"))
        d.wait_job(job_id, lambda j: done_at_least(j, 0), 60, "first step")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db_path + suffix):
                os.unlink(db_path + suffix)
        job = d.wait_job(job_id, lambda j: j["state"] in ("failed", "succeeded", "cancelled"),
                         30, "a final state after the database file was deleted")
        self.assertEqual(job["state"], "failed", job)
        self.assertIn("deleted", job["error"])
        r = d.request("GET", "/readyz")
        self.assertEqual(r.status, 503, r.body)
        self.assertIn("deleted", r.json()["reason"])
        self.assertEqual(d.request("POST", "/v1/jobs", fault_plan("after")).status, 503)
        self.assertIn("was deleted", d.log_text())


class UnwritableDatabaseTest(unittest.TestCase):
    def test_readyz_is_not_ready_on_a_database_file_it_cannot_write(self):
        # Issue 35 #6: /readyz said 200 on a database it could not write. The immutable
        # attribute refuses writes to root too (a mode change would not: the tests run as root).
        tmp = tempfile.mkdtemp(prefix="llmcap-immutable-")
        self.addCleanup(shutil.rmtree, tmp, True)
        db_path = os.path.join(tmp, "llmcap.db")
        d = Daemon(BINARY, db_path=db_path, log_level="warn")
        self.addCleanup(d.cleanup)
        d.start()
        self.assertEqual(d.request("GET", "/readyz").status, 200)
        r = run(["chattr", "+i", db_path])
        if r.returncode != 0:
            skip(self, "chattr +i is not supported here: " + r.stdout.strip())
        self.addCleanup(run, ["chattr", "-i", db_path])
        r = d.request("GET", "/readyz")
        self.assertEqual(r.status, 503, r.body)
        self.assertEqual(r.json()["writes"], False)
        self.assertIn("database file cannot be written", r.json()["reason"])
        self.assertEqual(d.request("POST", "/v1/jobs", fault_plan("refused")).status, 503)
        self.assertEqual(d.request("GET", "/healthz").status, 200)  # alive, only not ready
        run(["chattr", "-i", db_path])
        self.assertEqual(d.request("GET", "/readyz").status, 200)


class CorruptPageTest(unittest.TestCase):
    def test_a_corrupted_page_is_reported_by_readyz_at_start(self):
        # Issue 24 #4: PRAGMA quick_check runs at start; a corrupted page makes /readyz 503
        # with what it found, while the daemon still serves reads.
        tmp = tempfile.mkdtemp(prefix="llmcap-corrupt-")
        self.addCleanup(shutil.rmtree, tmp, True)
        db_path = os.path.join(tmp, "llmcap.db")
        d = Daemon(BINARY, db_path=db_path, log_level="info")
        self.addCleanup(d.cleanup)
        d.start()
        job_id = d.submit(plan("corrupt", levels=(4,), duration_s=1, warmup_s=0,
                               min_requests=1))
        d.wait_state(job_id, "succeeded", 60)
        self.assertEqual(d.get_json("/readyz")["database"]["quick_check"], "ok")
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(20), 0)
        db = sqlite3.connect(db_path)
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        # The last page of the samples table's b-tree: overwrite its header with garbage.
        root = db.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'request_samples'"
                          ).fetchone()[0]
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        with open(db_path, "r+b") as f:
            f.seek((root - 1) * page_size)
            f.write(b"\xee" * 64)
        d2 = Daemon(BINARY, db_path=db_path, log_level="info")
        self.addCleanup(d2.cleanup)
        d2.start()
        r = d2.request("GET", "/readyz")
        self.assertEqual(r.status, 503, r.body)
        check = r.json()["database"]["quick_check"]
        self.assertNotEqual(check, "ok")
        self.assertIn("quick_check", r.json()["reason"])
        self.assertEqual(d2.request("GET", "/healthz").status, 200)
        self.assertIn("quick_check", d2.log_text())


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        sys.exit("usage: daemon_storage_faults_test.py PATH/TO/llmcapd [unittest args]")
    BINARY = os.path.abspath(sys.argv[1])
    result = unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    # Skipped cases make the whole test "skipped" to CTest, not "passed": a run that could not
    # mount anything proved nothing about storage faults.
    sys.exit(77 if result.skipped else 0)
