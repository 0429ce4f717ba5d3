#include "server/daemon_metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

namespace llmcap::server {
namespace {

using namespace std::chrono_literals;

// The value of the sample `series` (name and labels exactly as exported, labels sorted), or
// nullopt when the exposition has no such line.
std::optional<double> sample(const std::string& text, const std::string& series) {
  const std::string prefix = "\n" + series + " ";
  const auto at = text.find(prefix);
  if (at == std::string::npos) return std::nullopt;
  return std::stod(text.substr(at + prefix.size()));
}

bool has_series_of(const std::string& text, const std::string& name) {
  return text.find("\n" + name + "{") != std::string::npos ||
         text.find("\n" + name + " ") != std::string::npos;
}

TEST(DaemonMetrics, CurrentStepIsAnIndexGaugeAndANewPhaseReplacesTheLast) {
  DaemonMetrics m;
  m.set_current_step("j1", "a100", "sweep", 3);
  std::string text = m.serialize();
  EXPECT_EQ(text.find("llmcap_current_step_info"), std::string::npos);
  EXPECT_EQ(sample(text, R"(llmcap_current_step_index{job_id="j1",phase="sweep",target="a100"})"),
            3);
  m.set_current_step("j1", "a100", "search", 0);
  text = m.serialize();
  EXPECT_FALSE(
      sample(text, R"(llmcap_current_step_index{job_id="j1",phase="sweep",target="a100"})"));
  EXPECT_EQ(sample(text, R"(llmcap_current_step_index{job_id="j1",phase="search",target="a100"})"),
            0);
}

TEST(DaemonMetrics, RatesSpellRequestsPerSecond) {
  DaemonMetrics m;
  m.set_offered_rate("j1", "a100", 4);
  m.set_achieved_rate("j1", "a100", 3.5);
  const std::string text = m.serialize();
  EXPECT_EQ(text.find("_rps"), std::string::npos) << text;
  EXPECT_EQ(sample(text, R"(llmcap_offered_requests_per_second{job_id="j1",target="a100"})"), 4);
  EXPECT_EQ(sample(text, R"(llmcap_achieved_requests_per_second{job_id="j1",target="a100"})"), 3.5);
}

TEST(DaemonMetrics, TwoJobsWithTheSameTargetNameKeepTheirOwnGauges) {
  DaemonMetrics m;
  m.set_achieved_rate("j1", "gpu", 2);
  m.set_achieved_rate("j2", "gpu", 5);
  m.set_in_flight("j1", "gpu", 7);
  m.set_in_flight("j2", "gpu", 9);
  m.set_last_verdict("j1", "gpu", "soak", 0);
  m.set_last_verdict("j2", "gpu", "soak", 1);
  const std::string text = m.serialize();
  EXPECT_EQ(sample(text, R"(llmcap_achieved_requests_per_second{job_id="j1",target="gpu"})"), 2);
  EXPECT_EQ(sample(text, R"(llmcap_achieved_requests_per_second{job_id="j2",target="gpu"})"), 5);
  EXPECT_EQ(sample(text, R"(llmcap_in_flight_requests{job_id="j1",target="gpu"})"), 7);
  EXPECT_EQ(sample(text, R"(llmcap_in_flight_requests{job_id="j2",target="gpu"})"), 9);
  EXPECT_EQ(sample(text, R"(llmcap_last_verdict{job_id="j1",phase="soak",target="gpu"})"), 0);
  EXPECT_EQ(sample(text, R"(llmcap_last_verdict{job_id="j2",phase="soak",target="gpu"})"), 1);
}

void feed(DaemonMetrics& m, const std::string& job) {
  m.set_current_step(job, "gpu", "soak", 1);
  m.set_offered_rate(job, "gpu", 2);
  m.set_achieved_rate(job, "gpu", 2);
  m.set_in_flight(job, "gpu", 3);
  m.set_client_cpu(job, "gpu", 0.2);
  m.set_last_verdict(job, "gpu", "soak", 1);
}

TEST(DaemonMetrics, AFinishedJobsSeriesGoAfterTheGracePeriod) {
  DaemonMetrics m(0s);  // no grace: gone at the next scrape
  feed(m, "done");
  feed(m, "running");
  m.job_finished("done");
  const std::string text = m.serialize();
  EXPECT_EQ(text.find(R"(job_id="done")"), std::string::npos) << text;
  for (const char* name : {"llmcap_current_step_index", "llmcap_offered_requests_per_second",
                           "llmcap_achieved_requests_per_second", "llmcap_in_flight_requests",
                           "llmcap_client_cpu_utilisation_ratio"}) {
    EXPECT_TRUE(sample(text, std::string(name) + R"({job_id="running",target="gpu"})") ||
                sample(text, std::string(name) + R"({job_id="running",phase="soak",target="gpu"})"))
        << name;
  }
  EXPECT_TRUE(sample(text, R"(llmcap_last_verdict{job_id="running",phase="soak",target="gpu"})"));
  // The cumulative per-target counters stay.
  EXPECT_TRUE(sample(text, R"(llmcap_dropped_arrivals_total{target="gpu"})"));
}

TEST(DaemonMetrics, AFinishedJobsSeriesStayDuringTheGracePeriod) {
  DaemonMetrics m(1h);
  feed(m, "done");
  m.job_finished("done");
  const std::string text = m.serialize();
  EXPECT_EQ(sample(text, R"(llmcap_last_verdict{job_id="done",phase="soak",target="gpu"})"), 1);
}

TEST(DaemonMetrics, AJobResumedWithinTheGracePeriodKeepsItsSeries) {
  DaemonMetrics m(20ms);
  feed(m, "j1");
  m.job_finished("j1");
  m.set_current_step("j1", "gpu", "soak", 2);  // resumed within the grace period
  std::this_thread::sleep_for(60ms);           // the grace period of the first end is over
  const std::string text = m.serialize();
  EXPECT_EQ(sample(text, R"(llmcap_current_step_index{job_id="j1",phase="soak",target="gpu"})"), 2);
  EXPECT_EQ(sample(text, R"(llmcap_last_verdict{job_id="j1",phase="soak",target="gpu"})"), 1);
}

TEST(DaemonMetrics, TheTargetVerdictIsOneSeriesPerTargetThatOutlivesItsJob) {
  DaemonMetrics m(0s);  // live series go at once; the target's verdict does not
  feed(m, "j1");
  m.set_target_verdict("j1", "gpu", 0);
  m.set_target_verdict("j1", "cpu", -1);
  m.job_finished("j1");
  std::string text = m.serialize();
  EXPECT_EQ(sample(text, R"(llmcap_target_verdict{job_id="j1",target="gpu"})"), 0);
  EXPECT_EQ(sample(text, R"(llmcap_target_verdict{job_id="j1",target="cpu"})"), -1);
  EXPECT_FALSE(sample(text, R"(llmcap_last_verdict{job_id="j1",phase="soak",target="gpu"})"));
  // The next job of the target replaces its series (the SLA alert resolves); the other stays.
  m.set_target_verdict("j2", "gpu", 1);
  text = m.serialize();
  EXPECT_FALSE(sample(text, R"(llmcap_target_verdict{job_id="j1",target="gpu"})")) << text;
  EXPECT_EQ(sample(text, R"(llmcap_target_verdict{job_id="j2",target="gpu"})"), 1);
  EXPECT_EQ(sample(text, R"(llmcap_target_verdict{job_id="j1",target="cpu"})"), -1);
}

TEST(DaemonMetrics, DroppedArrivalsStartAtZeroWithTheFirstStep) {
  DaemonMetrics m;
  EXPECT_FALSE(sample(m.serialize(), R"(llmcap_dropped_arrivals_total{target="gpu"})"));
  m.set_current_step("j1", "gpu", "sweep", 0);
  EXPECT_EQ(sample(m.serialize(), R"(llmcap_dropped_arrivals_total{target="gpu"})"), 0);
  m.add_dropped_arrivals("gpu", 5);
  EXPECT_EQ(sample(m.serialize(), R"(llmcap_dropped_arrivals_total{target="gpu"})"), 5);
}

TEST(DaemonMetrics, NoQualifiedRateExportsNoRateSeries) {
  DaemonMetrics m;
  DaemonMetrics::Capacity open;
  open.requests_per_second = 6.19;
  open.output_tokens_per_second = 1567.1;
  open.cost_per_million_output_tokens = 0.2659;
  open.currency = "EUR";
  m.set_capacity("a100", open);
  std::string text = m.serialize();
  EXPECT_EQ(sample(text, R"(llmcap_qualified_capacity_requests_per_second{target="a100"})"), 6.19);
  EXPECT_EQ(sample(text, R"(llmcap_qualified_output_tokens_per_second{target="a100"})"), 1567.1);
  EXPECT_EQ(sample(text, R"(llmcap_cost_per_million_output_tokens{currency="EUR",target="a100"})"),
            0.2659);

  // A later job qualifies closed loop only: no rate (never a 0), tokens/s and cost in USD.
  DaemonMetrics::Capacity closed;
  closed.output_tokens_per_second = 900;
  closed.cost_per_million_output_tokens = 0.5;
  m.set_capacity("a100", closed);
  text = m.serialize();
  EXPECT_FALSE(has_series_of(text, "llmcap_qualified_capacity_requests_per_second")) << text;
  EXPECT_EQ(sample(text, R"(llmcap_qualified_output_tokens_per_second{target="a100"})"), 900);
  EXPECT_FALSE(
      sample(text, R"(llmcap_cost_per_million_output_tokens{currency="EUR",target="a100"})"));
  EXPECT_EQ(sample(text, R"(llmcap_cost_per_million_output_tokens{currency="USD",target="a100"})"),
            0.5);

  // No qualified capacity at all: nothing for the target.
  m.set_capacity("a100", DaemonMetrics::Capacity{});
  text = m.serialize();
  for (const char* name :
       {"llmcap_qualified_capacity_requests_per_second",
        "llmcap_qualified_output_tokens_per_second", "llmcap_cost_per_million_output_tokens"})
    EXPECT_FALSE(has_series_of(text, name)) << name;
}

TEST(DaemonMetrics, APredictionHasItsOwnCapacityFamilies) {
  DaemonMetrics m;
  DaemonMetrics::Capacity measured;
  measured.requests_per_second = 6.19;
  measured.output_tokens_per_second = 1567.1;
  measured.cost_per_million_output_tokens = 0.27;
  m.set_capacity("a100", measured);
  DaemonMetrics::Capacity predicted;
  predicted.requests_per_second = 6.4;
  predicted.output_tokens_per_second = 1600;
  predicted.cost_per_million_output_tokens = 0.26;
  m.set_capacity("a100", predicted, true);
  const std::string text = m.serialize();
  // The prediction overwrites nothing the measurement exported.
  EXPECT_EQ(sample(text, R"(llmcap_qualified_capacity_requests_per_second{target="a100"})"), 6.19);
  EXPECT_EQ(sample(text, R"(llmcap_cost_per_million_output_tokens{currency="USD",target="a100"})"),
            0.27);
  EXPECT_EQ(sample(text, R"(llmcap_predicted_capacity_requests_per_second{target="a100"})"), 6.4);
  EXPECT_EQ(sample(text, R"(llmcap_predicted_output_tokens_per_second{target="a100"})"), 1600);
  EXPECT_EQ(
      sample(text,
             R"(llmcap_predicted_cost_per_million_output_tokens{currency="USD",target="a100"})"),
      0.26);
  // A later prediction without a qualified rate removes only the predicted series.
  m.set_capacity("a100", DaemonMetrics::Capacity{}, true);
  const std::string after = m.serialize();
  EXPECT_FALSE(has_series_of(after, "llmcap_predicted_capacity_requests_per_second"));
  EXPECT_FALSE(has_series_of(after, "llmcap_predicted_cost_per_million_output_tokens"));
  EXPECT_EQ(sample(after, R"(llmcap_qualified_capacity_requests_per_second{target="a100"})"), 6.19);
}

TEST(DaemonMetrics, ExportsTheStandardProcessMetrics) {
  DaemonMetrics m;
  const std::string text = m.serialize();
  for (const char* line :
       {"# TYPE process_cpu_seconds_total counter", "# TYPE process_resident_memory_bytes gauge",
        "# TYPE process_virtual_memory_bytes gauge", "# TYPE process_open_fds gauge",
        "# TYPE process_max_fds gauge", "# TYPE process_start_time_seconds gauge"})
    EXPECT_NE(text.find(line), std::string::npos) << line;
  EXPECT_GT(*sample(text, "process_resident_memory_bytes"), 1e6);
  EXPECT_GT(*sample(text, "process_virtual_memory_bytes"),
            *sample(text, "process_resident_memory_bytes"));
  EXPECT_GE(*sample(text, "process_cpu_seconds_total"), 0);
  EXPECT_GT(*sample(text, "process_open_fds"), 2);  // stdin, stdout, stderr at least
  EXPECT_GE(*sample(text, "process_max_fds"), *sample(text, "process_open_fds"));
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(*sample(text, "process_start_time_seconds"), now + 1);
  EXPECT_GT(*sample(text, "process_start_time_seconds"), now - 3600);
}

}  // namespace
}  // namespace llmcap::server
