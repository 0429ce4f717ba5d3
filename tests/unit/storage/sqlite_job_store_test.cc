#include "storage/sqlite_job_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "storage/sample_inserter.h"
#include "storage/transaction.h"
#include "tests/unit/storage/test_db.h"

namespace llmcap::storage {
namespace {

class SqliteJobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SqliteJobStoreOptions options;
    options.now_ms = [this] { return now_ms_; };
    options.id_seed = 1;
    Result<std::unique_ptr<SqliteJobStore>> store =
        SqliteJobStore::from_connection(testing::migrated_memory_db(), options);
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    store_ = std::move(store).value();
  }

  static NewJob job_with_targets(std::vector<std::string> names) {
    NewJob job;
    job.plan_json = R"({"name":"p"})";
    job.workload_fingerprint = "wf1";
    job.submitted_by = "alice";
    for (const std::string& n : names) {
      job.targets.push_back({n, "http://" + n + ":8000", R"({"gpu":"H100"})", 2.5});
    }
    return job;
  }

  JobRecord create(std::vector<std::string> targets = {"a"}) {
    Result<CreateJobResult> r = store_->create_job(job_with_targets(std::move(targets)));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    now_ms_ += 10;
    return r->job;
  }

  std::int64_t now_ms_ = 1'700'000'000'000;
  std::unique_ptr<SqliteJobStore> store_;
};

TEST_F(SqliteJobStoreTest, CreateAndGet) {
  NewJob in = job_with_targets({"a", "b"});
  in.priority = 3;
  in.secrets = {{"a", "api_key", "sk-123"}};
  Result<CreateJobResult> r = store_->create_job(in);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->created);
  const JobRecord& job = r->job;
  EXPECT_TRUE(IdGenerator::well_formed(job.id, "job")) << job.id;
  EXPECT_EQ(job.state, JobState::kQueued);
  EXPECT_EQ(job.priority, 3);
  EXPECT_EQ(job.created_at_ms, now_ms_);
  EXPECT_EQ(job.submitted_by, "alice");
  EXPECT_EQ(job.progress_json, "{}");
  EXPECT_FALSE(job.started_at_ms.has_value());
  EXPECT_FALSE(job.last_completed_step.has_value());
  ASSERT_EQ(job.targets.size(), 2u);
  EXPECT_EQ(job.targets[0].name, "a");
  EXPECT_EQ(job.targets[1].base_url, "http://b:8000");
  EXPECT_EQ(job.targets[1].price_per_hour, 2.5);

  Result<JobRecord> got = store_->get_job(job.id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->plan_id, job.plan_id);
  Result<PlanRecord> plan = store_->get_plan(job.plan_id);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->plan_json, R"({"name":"p"})");
  EXPECT_EQ(plan->workload_fingerprint, "wf1");

  Result<std::vector<SecretRecord>> secrets = store_->get_secrets(job.id);
  ASSERT_TRUE(secrets.ok());
  ASSERT_EQ(secrets->size(), 1u);
  EXPECT_EQ((*secrets)[0].value, "sk-123");
}

TEST_F(SqliteJobStoreTest, GetUnknownIsNotFound) {
  EXPECT_EQ(store_->get_job("job_nope").code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->get_plan("plan_nope").code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->get_secrets("job_nope").code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->list_steps("job_nope").code(), ErrorCode::kNotFound);
}

TEST_F(SqliteJobStoreTest, CreateValidatesTargetsAndSecrets) {
  NewJob none = job_with_targets({});
  EXPECT_EQ(store_->create_job(none).code(), ErrorCode::kInvalid);
  NewJob dup = job_with_targets({"a", "a"});
  Result<CreateJobResult> r = store_->create_job(dup);
  EXPECT_EQ(r.code(), ErrorCode::kInvalid);
  EXPECT_NE(r.status().message().find("targets[1].name"), std::string::npos);
  NewJob bad_secret = job_with_targets({"a"});
  bad_secret.secrets = {{"zzz", "k", "v"}};
  r = store_->create_job(bad_secret);
  EXPECT_EQ(r.code(), ErrorCode::kInvalid);
  EXPECT_NE(r.status().message().find("secrets[0].target"), std::string::npos);
  // Nothing half-created.
  Result<JobPage> page = store_->list_jobs({});
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->jobs.empty());
}

TEST_F(SqliteJobStoreTest, IdempotencyKey) {
  NewJob in = job_with_targets({"a"});
  in.idempotency_key = "key-1";
  in.request_hash = "hash-A";
  Result<CreateJobResult> first = store_->create_job(in);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->created);
  now_ms_ += 5;
  Result<CreateJobResult> again = store_->create_job(in);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->job.id, first->job.id);
  in.request_hash = "hash-B";
  Result<CreateJobResult> other = store_->create_job(in);
  EXPECT_EQ(other.code(), ErrorCode::kConflict);
  EXPECT_NE(other.status().message().find("key-1"), std::string::npos);
  Result<JobPage> page = store_->list_jobs({});
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->jobs.size(), 1u);
}

// Tenants (issue 35 #4): one tenant's idempotency key is never another's, and listings filter
// by the owner.
TEST_F(SqliteJobStoreTest, IdempotencyKeysAndListingsArePerTenant) {
  NewJob a = job_with_targets({"a"});
  a.tenant = "team-a";
  a.idempotency_key = "shared-key";
  a.request_hash = "hash-A";
  Result<CreateJobResult> a_job = store_->create_job(a);
  ASSERT_TRUE(a_job.ok()) << a_job.status().to_string();
  EXPECT_EQ(a_job->job.tenant, "team-a");
  now_ms_ += 5;
  NewJob b = a;
  b.tenant = "team-b";
  Result<CreateJobResult> b_job = store_->create_job(b);
  ASSERT_TRUE(b_job.ok()) << b_job.status().to_string();
  EXPECT_TRUE(b_job->created);
  EXPECT_NE(b_job->job.id, a_job->job.id);
  EXPECT_EQ(b_job->job.tenant, "team-b");
  // Another body under B's key conflicts with B's own use only.
  b.request_hash = "hash-B";
  EXPECT_EQ(store_->create_job(b).code(), ErrorCode::kConflict);
  b.request_hash = "hash-A";
  Result<CreateJobResult> b_again = store_->create_job(b);
  ASSERT_TRUE(b_again.ok());
  EXPECT_FALSE(b_again->created);
  EXPECT_EQ(b_again->job.id, b_job->job.id);

  JobFilter only_a;
  only_a.tenant = "team-a";
  Result<JobPage> page = store_->list_jobs(only_a);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->jobs.size(), 1u);
  EXPECT_EQ(page->jobs[0].id, a_job->job.id);
  Result<JobPage> all = store_->list_jobs({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->jobs.size(), 2u);
  EXPECT_EQ(store_->get_job(b_job->job.id)->tenant, "team-b");

  NewJob nameless = job_with_targets({"a"});
  nameless.tenant = "";
  EXPECT_EQ(store_->create_job(nameless).code(), ErrorCode::kInvalid);
}

TEST_F(SqliteJobStoreTest, DefaultTenantAndAuditNamesTenantAndTokenId) {
  JobRecord job = create();
  EXPECT_EQ(job.tenant, "default");
  AuditRecord r{0, 0, "token:0123abcd", "job.cancel", job.id, "", "team-a", "0123abcd"};
  ASSERT_TRUE(store_->append_audit(r).ok());
  Result<AuditPage> page = store_->list_audit(job.id, 0, 10);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->records.size(), 1u);
  EXPECT_EQ(page->records[0].tenant, "team-a");
  EXPECT_EQ(page->records[0].token_id, "0123abcd");
}

TEST_F(SqliteJobStoreTest, LifecycleSetsTimesAndChecksTransitions) {
  JobRecord job = create();
  Result<JobRecord> running = store_->update_state(job.id, JobState::kRunning);
  ASSERT_TRUE(running.ok()) << running.status().to_string();
  EXPECT_EQ(running->state, JobState::kRunning);
  EXPECT_EQ(running->started_at_ms, now_ms_);
  EXPECT_FALSE(running->finished_at_ms.has_value());

  now_ms_ += 1000;
  Result<JobRecord> bad = store_->update_state(job.id, JobState::kQueued);
  EXPECT_EQ(bad.code(), ErrorCode::kConflict);
  EXPECT_NE(bad.status().message().find("running to queued"), std::string::npos)
      << bad.status().message();

  Result<JobRecord> failed = store_->update_state(job.id, JobState::kFailed, "target unreachable");
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->finished_at_ms, now_ms_);
  EXPECT_EQ(failed->started_at_ms, now_ms_ - 1000);
  EXPECT_EQ(failed->error_message, "target unreachable");
  EXPECT_EQ(store_->update_state(job.id, JobState::kRunning).code(), ErrorCode::kConflict);
  EXPECT_EQ(store_->update_state("job_missing", JobState::kRunning).code(), ErrorCode::kNotFound);
}

TEST_F(SqliteJobStoreTest, ProgressAndCancel) {
  JobRecord queued = create();
  ASSERT_TRUE(store_->set_progress(queued.id, R"({"step":1})").ok());
  EXPECT_EQ(store_->get_job(queued.id)->progress_json, R"({"step":1})");
  EXPECT_EQ(store_->set_progress("job_missing", "{}").code(), ErrorCode::kNotFound);

  // A queued job is cancelled at once.
  Result<JobRecord> cancelled = store_->request_cancel(queued.id);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state, JobState::kCancelled);
  EXPECT_TRUE(cancelled->cancel_requested);
  EXPECT_TRUE(cancelled->finished_at_ms.has_value());
  EXPECT_EQ(store_->request_cancel(queued.id).code(), ErrorCode::kConflict);

  // A running one only gets the flag; the runner finishes it.
  JobRecord running = create();
  ASSERT_TRUE(store_->update_state(running.id, JobState::kRunning).ok());
  Result<JobRecord> flagged = store_->request_cancel(running.id);
  ASSERT_TRUE(flagged.ok());
  EXPECT_EQ(flagged->state, JobState::kRunning);
  EXPECT_TRUE(flagged->cancel_requested);
  EXPECT_TRUE(store_->update_state(running.id, JobState::kCancelled).ok());
}

TEST_F(SqliteJobStoreTest, ListNewestFirstWithCursorPagination) {
  std::vector<std::string> ids;
  for (int i = 0; i < 7; ++i) ids.push_back(create().id);
  std::vector<std::string> seen;
  JobFilter filter;
  filter.limit = 3;
  int pages = 0;
  for (;;) {
    Result<JobPage> page = store_->list_jobs(filter);
    ASSERT_TRUE(page.ok()) << page.status().to_string();
    ++pages;
    for (const JobRecord& j : page->jobs) {
      seen.push_back(j.id);
      EXPECT_EQ(j.targets.size(), 1u);
    }
    if (page->next_cursor.empty()) break;
    filter.cursor = page->next_cursor;
  }
  EXPECT_EQ(pages, 3);
  std::vector<std::string> expected(ids.rbegin(), ids.rend());
  EXPECT_EQ(seen, expected);
}

TEST_F(SqliteJobStoreTest, ExactPageHasNoNextCursor) {
  for (int i = 0; i < 3; ++i) create();
  JobFilter filter;
  filter.limit = 3;
  Result<JobPage> page = store_->list_jobs(filter);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->jobs.size(), 3u);
  EXPECT_TRUE(page->next_cursor.empty());
}

TEST_F(SqliteJobStoreTest, ListFilters) {
  JobRecord a1 = create({"a"});
  JobRecord b1 = create({"b"});
  JobRecord ab = create({"a", "b"});
  ASSERT_TRUE(store_->update_state(b1.id, JobState::kRunning).ok());

  JobFilter by_target;
  by_target.target = "a";
  Result<JobPage> page = store_->list_jobs(by_target);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->jobs.size(), 2u);
  EXPECT_EQ(page->jobs[0].id, ab.id);
  EXPECT_EQ(page->jobs[1].id, a1.id);

  JobFilter by_state;
  by_state.state = JobState::kRunning;
  page = store_->list_jobs(by_state);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->jobs.size(), 1u);
  EXPECT_EQ(page->jobs[0].id, b1.id);

  JobFilter by_time;
  by_time.created_from_ms = b1.created_at_ms;
  by_time.created_to_ms = ab.created_at_ms;  // exclusive
  page = store_->list_jobs(by_time);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->jobs.size(), 1u);
  EXPECT_EQ(page->jobs[0].id, b1.id);

  JobFilter none;
  none.state = JobState::kRunning;
  none.target = "a";
  page = store_->list_jobs(none);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->jobs.empty());
}

TEST_F(SqliteJobStoreTest, KindIsStoredAndFiltersWithFingerprint) {
  JobRecord measured = create({"a"});
  EXPECT_EQ(measured.kind, "measured");
  NewJob p = job_with_targets({"a"});
  p.kind = "predicted";
  Result<CreateJobResult> r = store_->create_job(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->job.kind, "predicted");
  Result<JobRecord> got = store_->get_job(r->job.id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->kind, "predicted");
  NewJob other = job_with_targets({"a"});
  other.plan_json = R"({"name":"q"})";
  other.workload_fingerprint = "wf2";
  ASSERT_TRUE(store_->create_job(other).ok());

  JobFilter by_kind;
  by_kind.kind = "predicted";
  Result<JobPage> page = store_->list_jobs(by_kind);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->jobs.size(), 1u);
  EXPECT_EQ(page->jobs[0].id, r->job.id);

  JobFilter by_fp;
  by_fp.workload_fingerprint = "wf1";
  by_fp.kind = "measured";
  page = store_->list_jobs(by_fp);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->jobs.size(), 1u);
  EXPECT_EQ(page->jobs[0].id, measured.id);

  by_fp.kind.reset();
  page = store_->list_jobs(by_fp);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->jobs.size(), 2u);

  // The column's CHECK refuses any other kind.
  NewJob bad = job_with_targets({"a"});
  bad.kind = "guessed";
  EXPECT_FALSE(store_->create_job(bad).ok());
}

TEST_F(SqliteJobStoreTest, BadCursorAndLimitAreInvalid) {
  JobFilter filter;
  filter.cursor = "garbage";
  Result<JobPage> page = store_->list_jobs(filter);
  EXPECT_EQ(page.code(), ErrorCode::kInvalid);
  EXPECT_NE(page.status().message().find("cursor"), std::string::npos);
  filter.cursor = "c1.6a6f625f";  // hex of "job_": well-formed hex, not an id
  EXPECT_EQ(store_->list_jobs(filter).code(), ErrorCode::kInvalid);
  JobFilter limit;
  limit.limit = 0;
  EXPECT_EQ(store_->list_jobs(limit).code(), ErrorCode::kInvalid);
  limit.limit = 5000;
  EXPECT_EQ(store_->list_jobs(limit).code(), ErrorCode::kInvalid);
}

NewStep step_for(const std::string& job_id, std::int64_t seq) {
  NewStep s;
  s.job_id = job_id;
  s.seq = seq;
  s.target = "a";
  s.phase_index = 0;
  s.phase_name = "sweep";
  s.phase_kind = "concurrency_sweep";
  s.step_index = static_cast<int>(seq);
  s.params_json = R"({"concurrency":8})";
  return s;
}

TEST_F(SqliteJobStoreTest, StepsRecordAndCompleteAdvancesLastCompletedStep) {
  JobRecord job = create();
  ASSERT_TRUE(store_->update_state(job.id, JobState::kRunning).ok());
  Result<std::int64_t> s0 = store_->begin_step(step_for(job.id, 0));
  ASSERT_TRUE(s0.ok()) << s0.status().to_string();
  EXPECT_EQ(store_->begin_step(step_for(job.id, 0)).code(), ErrorCode::kConflict);
  EXPECT_EQ(store_->begin_step(step_for("job_missing", 0)).code(), ErrorCode::kNotFound);

  StepCompletion done{*s0, R"({"p50":1})", "pass", R"({"ok":true})", false, 0, R"({"step":1})"};
  ASSERT_TRUE(store_->complete_step(done).ok());
  EXPECT_EQ(store_->complete_step(done).code(), ErrorCode::kConflict);
  done.step_id = 9999;
  EXPECT_EQ(store_->complete_step(done).code(), ErrorCode::kNotFound);

  Result<JobRecord> after = store_->get_job(job.id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->last_completed_step, 0);
  EXPECT_EQ(after->progress_json, R"({"step":1})");

  ASSERT_TRUE(store_->begin_step(step_for(job.id, 1)).ok());
  Result<std::vector<StepRecord>> steps = store_->list_steps(job.id);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ((*steps)[0].verdict, "pass");
  EXPECT_EQ((*steps)[0].summary_json, R"({"p50":1})");
  EXPECT_EQ((*steps)[0].finished_at_ms, now_ms_);
  EXPECT_EQ((*steps)[0].params_json, R"({"concurrency":8})");
  EXPECT_EQ((*steps)[1].verdict, std::nullopt);
  EXPECT_EQ((*steps)[1].finished_at_ms, std::nullopt);
}

TEST_F(SqliteJobStoreTest, MarkInterruptedAtStartup) {
  JobRecord running = create();
  JobRecord queued = create();
  JobRecord done = create();
  ASSERT_TRUE(store_->update_state(running.id, JobState::kRunning).ok());
  ASSERT_TRUE(store_->update_state(done.id, JobState::kRunning).ok());
  ASSERT_TRUE(store_->update_state(done.id, JobState::kSucceeded).ok());
  Result<std::int64_t> s0 = store_->begin_step(step_for(running.id, 0));
  ASSERT_TRUE(s0.ok());
  ASSERT_TRUE(store_->complete_step({*s0, "{}", "pass", "{}", false, 0, std::nullopt}).ok());
  ASSERT_TRUE(store_->begin_step(step_for(running.id, 1)).ok());  // unfinished at "crash"

  Result<std::vector<JobRecord>> marked = store_->mark_interrupted_at_startup();
  ASSERT_TRUE(marked.ok()) << marked.status().to_string();
  ASSERT_EQ(marked->size(), 1u);
  EXPECT_EQ((*marked)[0].id, running.id);
  EXPECT_EQ((*marked)[0].state, JobState::kInterrupted);
  EXPECT_EQ((*marked)[0].last_completed_step, 0);
  EXPECT_EQ(store_->get_job(queued.id)->state, JobState::kQueued);
  EXPECT_EQ(store_->get_job(done.id)->state, JobState::kSucceeded);
  // The unfinished step is gone, so resuming re-runs seq 1 cleanly.
  Result<std::vector<StepRecord>> steps = store_->list_steps(running.id);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ((*steps)[0].seq, 0);
  // Resume.
  EXPECT_TRUE(store_->update_state(running.id, JobState::kQueued).ok());
  EXPECT_TRUE(store_->begin_step(step_for(running.id, 1)).ok());
  // A second start-up finds nothing running... except the job we left running: none here.
  Result<std::vector<JobRecord>> again = store_->mark_interrupted_at_startup();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

TEST_F(SqliteJobStoreTest, DeleteOnlyAtRestAndCascades) {
  JobRecord job = create({"a", "b"});
  JobRecord other = create();
  NewJob with_key = job_with_targets({"a"});
  EXPECT_EQ(store_->delete_job(job.id).code(), ErrorCode::kConflict);  // queued
  ASSERT_TRUE(store_->update_state(job.id, JobState::kRunning).ok());
  EXPECT_EQ(store_->delete_job(job.id).code(), ErrorCode::kConflict);  // running

  Result<std::int64_t> step = store_->begin_step(step_for(job.id, 0));
  ASSERT_TRUE(step.ok());
  ASSERT_TRUE(store_->save_telemetry({{0, *step, 5, "kv_cache_usage", "", 0.5}}).ok());
  ASSERT_TRUE(store_->save_capacity({job.id, "a", R"({"rps":10})", 0}).ok());
  ASSERT_TRUE(store_->append_audit({0, 0, "alice", "job.create", job.id, "", "", ""}).ok());
  ASSERT_TRUE(store_->update_state(job.id, JobState::kSucceeded).ok());

  ASSERT_TRUE(store_->delete_job(job.id).ok());
  EXPECT_EQ(store_->get_job(job.id).code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->get_plan(job.plan_id).code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->delete_job(job.id).code(), ErrorCode::kNotFound);
  EXPECT_TRUE(store_->get_job(other.id).ok());
  Result<TelemetryPage> telemetry = store_->read_telemetry(*step, 0, 10);
  ASSERT_TRUE(telemetry.ok());
  EXPECT_TRUE(telemetry->rows.empty());
  // The audit trail outlives the job.
  Result<AuditPage> audit = store_->list_audit(job.id, 0, 10);
  ASSERT_TRUE(audit.ok());
  EXPECT_EQ(audit->records.size(), 1u);
}

// A resumed job re-runs the phase it was cut in: its earlier steps (and the one cut mid-way)
// go, with their telemetry, and last_completed_step falls back to the newest step left.
TEST_F(SqliteJobStoreTest, DeleteStepsFromRemovesSupersededStepsOnly) {
  JobRecord job = create();
  JobRecord other = create();
  ASSERT_TRUE(store_->update_state(job.id, JobState::kRunning).ok());
  std::vector<std::int64_t> ids;
  for (std::int64_t seq = 0; seq < 4; ++seq) {
    ids.push_back(*store_->begin_step(step_for(job.id, seq)));
    if (seq < 3) {
      ASSERT_TRUE(store_->complete_step({ids.back(), "{}", "pass", "{}", false, 0, {}}).ok());
    }
  }
  const std::int64_t other_step = *store_->begin_step(step_for(other.id, 2));
  ASSERT_TRUE(store_->save_telemetry({{0, ids[2], 5, "kv_cache_usage", "", 0.5}}).ok());
  EXPECT_EQ(store_->get_job(job.id)->last_completed_step, 2);

  Result<std::int64_t> removed = store_->delete_steps_from(job.id, 2);
  ASSERT_TRUE(removed.ok()) << removed.status().to_string();
  EXPECT_EQ(*removed, 2);  // seq 2 (finished) and 3 (cut mid-way)
  Result<std::vector<StepRecord>> steps = store_->list_steps(job.id);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ((*steps)[1].seq, 1);
  EXPECT_EQ(store_->get_job(job.id)->last_completed_step, 1);
  EXPECT_TRUE(store_->read_telemetry(ids[2], 0, 10)->rows.empty());
  // The seq is free again for the re-run, and other jobs keep theirs.
  EXPECT_TRUE(store_->begin_step(step_for(job.id, 2)).ok());
  EXPECT_EQ(store_->list_steps(other.id)->front().id, other_step);

  EXPECT_EQ(*store_->delete_steps_from(job.id, 0), 3);
  EXPECT_FALSE(store_->get_job(job.id)->last_completed_step.has_value());
  EXPECT_EQ(store_->delete_steps_from("job_missing", 0).code(), ErrorCode::kNotFound);
}

TEST_F(SqliteJobStoreTest, CapacityUpsert) {
  JobRecord job = create({"a", "b"});
  ASSERT_TRUE(store_->save_capacity({job.id, "b", R"({"rps":1})", 0}).ok());
  ASSERT_TRUE(store_->save_capacity({job.id, "a", R"({"rps":2})", 0}).ok());
  ASSERT_TRUE(store_->save_capacity({job.id, "a", R"({"rps":3})", 0}).ok());
  Result<std::vector<CapacityRecord>> all = store_->list_capacity(job.id);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].target, "a");
  EXPECT_EQ((*all)[0].result_json, R"({"rps":3})");
  EXPECT_EQ((*all)[0].created_at_ms, now_ms_);
  EXPECT_EQ(store_->save_capacity({"job_missing", "a", "{}", 0}).code(), ErrorCode::kNotFound);
}

TEST_F(SqliteJobStoreTest, AuditAppendAndPage) {
  JobRecord job = create();
  for (int i = 0; i < 5; ++i) {
    AuditRecord r{0,
                  0,
                  "bob",
                  "action" + std::to_string(i),
                  i % 2 == 0 ? std::optional(job.id) : std::nullopt,
                  "d",
                  "",
                  ""};
    ASSERT_TRUE(store_->append_audit(r).ok());
  }
  Result<AuditPage> first = store_->list_audit(std::nullopt, 0, 2);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->records.size(), 2u);
  EXPECT_EQ(first->records[0].action, "action4");
  EXPECT_EQ(first->records[0].ts_ms, now_ms_);
  ASSERT_TRUE(first->next_before_id.has_value());
  Result<AuditPage> second = store_->list_audit(std::nullopt, *first->next_before_id, 10);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->records.size(), 3u);
  EXPECT_EQ(second->records[2].action, "action0");
  EXPECT_FALSE(second->next_before_id.has_value());
  Result<AuditPage> for_job = store_->list_audit(job.id, 0, 10);
  ASSERT_TRUE(for_job.ok());
  EXPECT_EQ(for_job->records.size(), 3u);
}

SampleRow sample(std::int64_t step_id, std::int64_t index) {
  SampleRow r;
  r.step_id = step_id;
  r.index = index;
  r.t_intended_ns = index * 1000;
  r.t_send_ns = index * 1000 + 5;
  r.t_first_token_ns = index * 1000 + 500;
  r.t_last_token_ns = index * 1000 + 900;
  r.t_end_ns = index * 1000 + 950;
  r.token_events = 10;
  r.input_tokens = 100;
  r.output_tokens = 11;
  r.http_status = 200;
  r.finish_reason = 1;
  if (index % 3 == 0) {
    r.error_class = 9;
    r.error_message = "HTTP 503";
  }
  if (index % 4 == 0) r.token_times_ns = {index, index + 1, -5};
  return r;
}

// The export's in-window read: an intended-time range per step (steps without one are left
// out), and sample_cut locating where a capped read ends, as read_samples pages it.
TEST_F(SqliteJobStoreTest, ReadSamplesFilteredByIntendedRangeAndCut) {
  testing::TempDir dir;
  const std::string path = testing::migrated_file_db(dir);
  Result<std::unique_ptr<SqliteJobStore>> file_store = SqliteJobStore::open(path, {});
  ASSERT_TRUE(file_store.ok()) << file_store.status().to_string();
  SqliteJobStore& store = **file_store;
  JobRecord job = store.create_job(job_with_targets({"a"}))->job;
  const std::int64_t s0 = *store.begin_step(step_for(job.id, 0));
  const std::int64_t s1 = *store.begin_step(step_for(job.id, 1));
  std::map<std::int64_t, std::int64_t> id_of_index;
  {
    Result<Database> db = Database::open(path);
    ASSERT_TRUE(db.ok());
    Result<SampleInserter> ins = SampleInserter::create(*db);
    ASSERT_TRUE(ins.ok());
    Result<Transaction> tx = Transaction::begin(*db);
    ASSERT_TRUE(tx.ok());
    for (int i = 0; i < 20; ++i) {  // t_intended_ns = i * 1000; even i in s0, odd in s1
      ASSERT_TRUE(ins->insert(sample(i % 2 == 0 ? s0 : s1, i)).ok());
      id_of_index[i] = db->last_insert_rowid();
    }
    ASSERT_TRUE(tx->commit().ok());
  }
  SampleFilter window;
  window.intended_by_step = std::map<std::int64_t, IntendedRange>{{s0, {4'000, 12'000}}};
  auto indexes = [](const SamplePage& page) {
    std::vector<std::int64_t> out;
    for (const SampleRow& r : page.rows) out.push_back(r.index);
    return out;
  };
  Result<SamplePage> all = store.read_samples(job.id, window, 0, 100);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  EXPECT_EQ(indexes(*all), (std::vector<std::int64_t>{4, 6, 8, 10}));  // [start, end), s1 out
  EXPECT_FALSE(all->next_after_id);

  // A cap of 2: the cut is the 2nd matching row, and the next read starts right after it.
  Result<std::optional<std::int64_t>> cut = store.sample_cut(job.id, window, 0, 2);
  ASSERT_TRUE(cut.ok());
  ASSERT_TRUE(cut->has_value());
  EXPECT_EQ(**cut, id_of_index[6]);
  Result<SamplePage> first = store.read_samples(job.id, window, 0, 2);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->next_after_id, *cut);
  Result<SamplePage> rest = store.read_samples(job.id, window, **cut, 100);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(indexes(*rest), (std::vector<std::int64_t>{8, 10}));
  // Exactly as many rows as the cap left, or fewer: no cut.
  EXPECT_EQ(store.sample_cut(job.id, window, **cut, 2).value(), std::nullopt);
  EXPECT_EQ(store.sample_cut(job.id, window, 0, 4).value(), std::nullopt);
  EXPECT_EQ(store.sample_cut(job.id, window, 0, 3).value(), id_of_index[8]);

  // Unfiltered: ordered by step, then id (s0's ten rows, then s1's).
  EXPECT_EQ(store.sample_cut(job.id, SampleFilter{}, 0, 20).value(), std::nullopt);
  EXPECT_EQ(store.sample_cut(job.id, SampleFilter{}, 0, 10).value(), id_of_index[18]);
  EXPECT_EQ(store.sample_cut(job.id, SampleFilter{}, 0, 11).value(), id_of_index[1]);
  EXPECT_EQ(store.sample_cut(job.id, SampleFilter{s1, std::nullopt}, 0, 9).value(),
            id_of_index[17]);
  // Same failures as read_samples.
  EXPECT_EQ(store.sample_cut(job.id, window, 0, 0).code(), ErrorCode::kInvalid);
  EXPECT_EQ(store.sample_cut("job_missing", window, 0, 5).code(), ErrorCode::kNotFound);
}

TEST_F(SqliteJobStoreTest, ReadSamplesPagedByRowid) {
  // Samples need a file database (rows written on a second connection, as SampleWriter does).
  testing::TempDir dir;
  const std::string path = testing::migrated_file_db(dir);
  SqliteJobStoreOptions options;
  options.id_seed = 3;
  Result<std::unique_ptr<SqliteJobStore>> file_store = SqliteJobStore::open(path, options);
  ASSERT_TRUE(file_store.ok()) << file_store.status().to_string();
  JobRecord fj = (*file_store)->create_job(job_with_targets({"a"}))->job;
  JobRecord fo = (*file_store)->create_job(job_with_targets({"a"}))->job;
  const std::int64_t f0 = *(*file_store)->begin_step(step_for(fj.id, 0));
  const std::int64_t f1 = *(*file_store)->begin_step(step_for(fj.id, 1));
  const std::int64_t fother = *(*file_store)->begin_step(step_for(fo.id, 0));
  std::vector<SampleRow> written;
  {
    Result<Database> db = Database::open(path);
    ASSERT_TRUE(db.ok());
    Result<SampleInserter> ins = SampleInserter::create(*db);
    ASSERT_TRUE(ins.ok());
    Result<Transaction> tx = Transaction::begin(*db);
    ASSERT_TRUE(tx.ok());
    for (int i = 0; i < 25; ++i) {
      // Rows of the two steps interleave (as if written concurrently): pages group them by step.
      const std::int64_t step = i % 5 == 4 ? fother : (i % 2 == 0 ? f0 : f1);
      SampleRow r = sample(step, i);
      ASSERT_TRUE(ins->insert(r).ok());
      r.id = db->last_insert_rowid();
      if (step != fother) written.push_back(r);
    }
    ASSERT_TRUE(tx->commit().ok());
  }
  std::stable_sort(written.begin(), written.end(),
                   [](const SampleRow& a, const SampleRow& b) { return a.step_id < b.step_id; });
  std::vector<SampleRow> read;
  std::int64_t after = 0;
  int pages = 0;
  for (;;) {
    Result<SamplePage> page = (*file_store)->read_samples(fj.id, std::nullopt, after, 7);
    ASSERT_TRUE(page.ok()) << page.status().to_string();
    ++pages;
    read.insert(read.end(), page->rows.begin(), page->rows.end());
    if (!page->next_after_id) break;
    after = *page->next_after_id;
  }
  EXPECT_EQ(pages, 3);       // 20 rows of this job in pages of 7
  EXPECT_EQ(read, written);  // every field round-trips, including blobs and NULL text

  Result<SamplePage> only_f1 = (*file_store)->read_samples(fj.id, f1, 0, 1000);
  ASSERT_TRUE(only_f1.ok());
  for (const SampleRow& r : only_f1->rows) EXPECT_EQ(r.step_id, f1);
  EXPECT_EQ(only_f1->rows.size(), 10u);
  Result<SamplePage> f1_tail = (*file_store)->read_samples(fj.id, f1, only_f1->rows[4].id, 1000);
  ASSERT_TRUE(f1_tail.ok());
  EXPECT_EQ(f1_tail->rows.size(), 5u);
  // A cursor from another job is refused rather than silently restarting.
  Result<SamplePage> foreign =
      (*file_store)->read_samples(fo.id, std::nullopt, only_f1->rows[0].id, 10);
  EXPECT_EQ(foreign.code(), ErrorCode::kInvalid);
  EXPECT_EQ((*file_store)->read_samples(fj.id, fother, 0, 10).code(), ErrorCode::kNotFound);
  EXPECT_EQ((*file_store)->read_samples("job_missing", std::nullopt, 0, 10).code(),
            ErrorCode::kNotFound);
  EXPECT_EQ((*file_store)->read_samples(fj.id, std::nullopt, 0, 0).code(), ErrorCode::kInvalid);

  // Deleting the job removes its samples and leaves the other job's.
  ASSERT_TRUE((*file_store)->update_state(fj.id, JobState::kCancelled).ok());
  ASSERT_TRUE((*file_store)->delete_job(fj.id).ok());
  Result<Database> check = Database::open(path);
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(testing::count_rows(*check, "request_samples"), 5);
  EXPECT_EQ(testing::count_rows(*check, "steps"), 1);
  EXPECT_EQ(testing::count_rows(*check, "job_targets"), 1);
}

TEST_F(SqliteJobStoreTest, OpenRefusesUnmigratedDatabase) {
  testing::TempDir dir;
  Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(dir.file("empty.db"));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.code(), ErrorCode::kInvalid);
  EXPECT_NE(store.status().message().find("migrations"), std::string::npos);
}

TEST_F(SqliteJobStoreTest, ReadOnlyDatabaseGivesCleanErrors) {
  testing::TempDir dir;
  const std::string path = testing::migrated_file_db(dir);
  Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(path);
  ASSERT_TRUE(store.ok());
  JobRecord job = (*store)->create_job(job_with_targets({"a"}))->job;
  // Turn the store's connections read-only by reopening the file read-only underneath: the
  // simplest reliable way as root (chmod does not stop root) is a query_only connection.
  Result<Database> db = Database::open(path);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->exec("PRAGMA query_only = ON").ok());
  Result<std::unique_ptr<SqliteJobStore>> ro =
      SqliteJobStore::from_connection(std::move(db).value());
  ASSERT_TRUE(ro.ok());
  Result<CreateJobResult> created = (*ro)->create_job(job_with_targets({"a"}));
  EXPECT_EQ(created.code(), ErrorCode::kReadOnly) << created.status().to_string();
  EXPECT_EQ((*ro)->update_state(job.id, JobState::kRunning).code(), ErrorCode::kReadOnly);
  // Reads still work.
  EXPECT_TRUE((*ro)->get_job(job.id).ok());
}

// A final state the database cannot take (here: another connection holds the write lock, so
// the update fails with kBusy after the busy timeout; disk full and a read-only filesystem take
// the same path) is still what readers see, with the reason, and is stored by the next update.
TEST(SqliteJobStoreFileTest, FinalStateThatCannotBeStoredIsShownThenStoredLater) {
  testing::TempDir dir;
  const std::string path = testing::migrated_file_db(dir);
  SqliteJobStoreOptions options;
  options.busy_timeout_ms = 20;
  Result<std::unique_ptr<SqliteJobStore>> opened = SqliteJobStore::open(path, options);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  SqliteJobStore& store = **opened;
  NewJob nj;
  nj.plan_json = R"({"name":"p"})";
  nj.workload_fingerprint = "wf";
  nj.targets.push_back({"a", "http://a:8000", "{}", 1.0});
  const JobRecord job = store.create_job(nj)->job;
  const JobRecord other = store.create_job(nj)->job;
  ASSERT_TRUE(store.update_state(job.id, JobState::kRunning).ok());

  Result<Database> locker = Database::open(path);
  ASSERT_TRUE(locker.ok());
  ASSERT_TRUE(locker->exec("BEGIN IMMEDIATE").ok());
  Result<JobRecord> failed = store.update_state(job.id, JobState::kFailed, "storage: disk_full");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.code(), ErrorCode::kBusy) << failed.status().to_string();
  // Readers see the final state and why it is not stored; a non-terminal state is not kept.
  Result<JobRecord> seen = store.get_job(job.id);
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->state, JobState::kFailed);
  EXPECT_NE(seen->error_message.find("storage: disk_full"), std::string::npos);
  EXPECT_NE(seen->error_message.find("state not stored: busy"), std::string::npos)
      << seen->error_message;
  EXPECT_TRUE(seen->finished_at_ms.has_value());
  JobFilter all;
  Result<JobPage> page = store.list_jobs(all);
  ASSERT_TRUE(page.ok());
  for (const JobRecord& j : page->jobs) {
    EXPECT_EQ(j.state, j.id == job.id ? JobState::kFailed : JobState::kQueued) << j.id;
  }
  EXPECT_FALSE(store.update_state(other.id, JobState::kRunning).ok());
  EXPECT_EQ(store.get_job(other.id)->state, JobState::kQueued);

  // The database is writable again: the next update stores the kept state first.
  ASSERT_TRUE(locker->exec("COMMIT").ok());
  ASSERT_TRUE(store.update_state(other.id, JobState::kRunning).ok());
  Result<Database> reader = Database::open(path);
  ASSERT_TRUE(reader.ok());
  Result<Statement> st = reader->prepare("SELECT state, error_message FROM jobs WHERE id = ?");
  ASSERT_TRUE(st.ok());
  st->bind(1, job.id);
  ASSERT_TRUE(*st->step());
  EXPECT_EQ(st->column_text(0), "failed");
  EXPECT_EQ(st->column_text(1), "storage: disk_full");
  EXPECT_EQ(store.get_job(job.id)->error_message, "storage: disk_full");
}

}  // namespace
}  // namespace llmcap::storage
