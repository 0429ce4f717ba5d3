// JobEvents: the in-memory log of what happened to each job (progress, step results, state
// changes), read by GET /v1/jobs/{id}/events (SSE) for live watching. Bounded: the newest
// kMaxEventsPerJob events of a job are kept; a reader that fell behind skips ahead.
// Events of a finished job are kept until forget() (job deleted) or kMaxJobs is exceeded.
//
// Thread-safety: all methods may be called from any thread (guarded by mu_).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace llmcap::server {

class JobEvents {
 public:
  static constexpr std::size_t kMaxEventsPerJob = 2000;
  static constexpr std::size_t kMaxJobs = 256;

  struct Event {
    std::uint64_t seq = 0;  // 1, 2, ... per job
    std::string type;       // "progress", "step", "state"
    std::string data;       // JSON text
  };
  struct Read {
    std::vector<Event> events;
    bool finished = false;  // the job reached a state nothing will change
    bool known = false;     // any event was ever recorded for the job
  };

  void append(const std::string& job_id, std::string type, std::string data);
  void finish(const std::string& job_id);
  void reopen(const std::string& job_id);  // a resumed job runs again
  Read read(const std::string& job_id, std::uint64_t after_seq) const;
  void forget(const std::string& job_id);

 private:
  struct Log {
    std::deque<Event> events;
    std::uint64_t next_seq = 1;
    bool finished = false;
    std::uint64_t touched = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Log> logs_;  // GUARDED_BY(mu_)
  std::uint64_t clock_ = 0;          // GUARDED_BY(mu_)
};

}  // namespace llmcap::server
