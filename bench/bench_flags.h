// BenchFlags: the `--name=value` command line of the macro benchmarks (bench_client_firehose,
// bench_concurrency, bench_open_loop, bench_sim_streams). A bad value or an unknown flag exits
// with a message naming it (benchmarks are run by hand or by run_all.sh; an error should stop
// them at once). Not thread-safe; use from main().
#pragma once

#include <map>
#include <string>
#include <vector>

namespace llmcap::bench {

// `--name=value` arguments; unknown names are an error (listed with the known ones).
class BenchFlags {
 public:
  BenchFlags(int argc, char** argv);
  double number(const std::string& name, double fallback);
  std::string text(const std::string& name, const std::string& fallback);
  // Exits with a message when a flag was given that no number()/text() call asked for.
  void check_all_used() const;

 private:
  std::map<std::string, std::string> given_;
  std::map<std::string, bool> used_;
  std::vector<std::string> known_;
  std::string program_;
};

}  // namespace llmcap::bench
