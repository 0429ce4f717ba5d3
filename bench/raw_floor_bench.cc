// bench_raw_floor: the floor under the load generator's per-request and per-event costs
// (issue 10). The same forked firehose as bench_client_firehose / bench_concurrency, driven by
// the least a streaming HTTP client can do on this kernel: one thread, level-triggered epoll,
// non-blocking sockets, one pre-built request per send, one recv per readiness into a shared
// 64 KiB buffer, and only the parsing needed to see an event or the end of a response (the
// terminal chunk). No timers, no JSON, no coroutine, no per-connection buffer, no sample.
// What it costs per request and per event is what this machine's kernel and loopback TCP take
// for the same traffic; llmcap's figures are judged against it (bench/RESULTS.md).
// Scenarios (same traffic as the agent benchmarks):
//   requests — --request-streams keep-alive connections sending 1-token requests back to back
//              (bench_client_firehose's second scenario): CPU and syscalls per request;
//   paced    — --streams connections against the paced firehose (--interval-ms per event,
//              --tokens per request, closed loop; bench_concurrency's traffic): CPU and
//              syscalls per token event, and the exact ITL quantiles this client measures
//              (stamped once per read), against the interval.
// CPU is this thread's CLOCK_THREAD_CPUTIME_ID over the run (the firehose is another process).
// Usage: bench_raw_floor [--scenario=requests|paced|both] [--seconds=3] [--repeat=3]
//                        [--request-streams=16] [--streams=1000] [--interval-ms=50]
//                        [--tokens=40] [--server=asio|raw] [--phases=aligned|spread]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_support.h"
#include "bench/paced_server.h"

namespace {

using namespace llmcap;

std::int64_t now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

[[noreturn]] void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

// A request the size and shape of the agent's for a 16-token completions prompt.
std::string build_request(std::uint16_t port, int max_tokens) {
  const std::string body =
      R"({"max_tokens":)" + std::to_string(max_tokens) +
      R"(,"model":"firehose","prompt":"llmcap calibration text one two three four five six seven eight nine ten eleven twelve thirteen","stream":true,"stream_options":{"include_usage":true}})";
  return "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nUser-Agent: llmcap-floor\r\nContent-Type: application/json\r\n"
         "Accept: text/event-stream\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

struct Conn {
  int fd = -1;
  std::array<char, 8> tail{};  // last bytes of the previous read (terminal chunk across reads)
  std::size_t tail_len = 0;
  std::int64_t last_token_ns = -1;  // arrival of this response's previous token event
};

struct Counters {
  std::uint64_t requests = 0;  // complete responses
  std::uint64_t token_events = 0;
  std::uint64_t epoll_waits = 0, recvs = 0, recv_eagain = 0, sends = 0;
  std::int64_t cpu_ns = 0, wall_ns = 0;
  std::vector<std::int64_t> gaps_ns;  // paced: gaps between a response's token events
};

constexpr std::string_view kTerminal = "\r\n0\r\n\r\n";
constexpr std::string_view kTokenMark = R"("text":" tok")";

std::size_t count_of(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string_view::npos;
       at = hay.find(needle, at + needle.size()))
    ++n;
  return n;
}

class FloorClient {
 public:
  FloorClient(std::uint16_t port, int connections, int max_tokens, bool record_gaps)
      : request_(build_request(port, max_tokens)), record_gaps_(record_gaps) {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) die("epoll_create1");
    conns_.resize(static_cast<std::size_t>(connections));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      Conn& c = conns_[i];
      c.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (c.fd < 0) die("socket");
      if (connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) die("connect");
      const int one = 1;
      setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      const int flags = fcntl(c.fd, F_GETFL);
      fcntl(c.fd, F_SETFL, flags | O_NONBLOCK);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = i;
      if (epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev) != 0) die("epoll_ctl");
    }
  }
  ~FloorClient() {
    for (const Conn& c : conns_) close(c.fd);
    close(ep_);
  }
  FloorClient(const FloorClient&) = delete;
  FloorClient& operator=(const FloorClient&) = delete;

  Counters run(double seconds) {
    Counters k;
    const std::int64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    const std::int64_t wall0 = now_ns(CLOCK_MONOTONIC);
    const std::int64_t end = wall0 + static_cast<std::int64_t>(seconds * 1e9);
    for (Conn& c : conns_) send_request(c, k);
    std::vector<epoll_event> events(1024);
    while (now_ns(CLOCK_MONOTONIC) < end) {
      ++k.epoll_waits;
      const int n = epoll_wait(ep_, events.data(), static_cast<int>(events.size()), 100);
      if (n < 0 && errno != EINTR) die("epoll_wait");
      for (int e = 0; e < n; ++e)
        on_readable(conns_[events[static_cast<std::size_t>(e)].data.u64], k);
    }
    k.cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    k.wall_ns = now_ns(CLOCK_MONOTONIC) - wall0;
    return k;
  }

 private:
  void send_request(Conn& c, Counters& k) {
    ++k.sends;
    // A ≈ 400-byte request always fits an empty loopback send buffer.
    if (send(c.fd, request_.data(), request_.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request_.size()))
      die("send");
    c.tail_len = 0;
    c.last_token_ns = -1;
  }

  void on_readable(Conn& c, Counters& k) {
    ++k.recvs;
    const ssize_t got = recv(c.fd, buf_.data(), buf_.size(), 0);
    if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        ++k.recv_eagain;
        return;
      }
      die("recv");
    }
    if (got == 0) {
      std::cerr << "the firehose closed a connection\n";
      std::exit(1);
    }
    const std::int64_t t = now_ns(CLOCK_MONOTONIC);
    const std::string_view data(buf_.data(), static_cast<std::size_t>(got));
    const std::size_t tokens = count_of(data, kTokenMark);
    if (tokens > 0) {
      k.token_events += tokens;
      if (record_gaps_) {
        if (c.last_token_ns >= 0) k.gaps_ns.push_back(t - c.last_token_ns);
        for (std::size_t i = 1; i < tokens; ++i) k.gaps_ns.push_back(0);
      }
      c.last_token_ns = t;
    }
    if (ends_response(c, data)) {
      ++k.requests;
      send_request(c, k);
    }
  }

  // True when the bytes seen so far end with the terminal chunk (no pipelining: nothing
  // follows it). Keeps the last 8 bytes for a terminator split across reads.
  static bool ends_response(Conn& c, std::string_view data) {
    std::array<char, 16> joined{};
    std::size_t len = 0;
    if (data.size() < kTerminal.size()) {
      std::memcpy(joined.data(), c.tail.data(), c.tail_len);
      std::memcpy(joined.data() + c.tail_len, data.data(), data.size());
      len = c.tail_len + data.size();
    } else {
      len = kTerminal.size();
      std::memcpy(joined.data(), data.data() + data.size() - len, len);
    }
    const std::string_view last(joined.data(), len);
    const bool done =
        last.size() >= kTerminal.size() && last.substr(last.size() - kTerminal.size()) == kTerminal;
    const std::size_t keep = std::min(len, c.tail.size());
    std::memcpy(c.tail.data(), joined.data() + len - keep, keep);
    c.tail_len = keep;
    return done;
  }

  std::string request_;
  bool record_gaps_;
  int ep_ = -1;
  std::vector<Conn> conns_;
  std::array<char, 65536> buf_{};
};

double quantile(std::vector<std::int64_t>& v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]);
}

struct Row {
  double cpu_per_unit_us = 0, units_per_s = 0, utilisation = 0;
  double recvs = 0, eagain = 0, epoll_waits = 0, sends = 0;  // per unit
  double server_cpu_per_unit_us = 0;  // the firehose process, over its whole life
  double itl_p1_ms = 0, itl_p50_ms = 0, itl_p99_ms = 0, err_p99_ms = 0;
};

Row summarise(Counters& k, bool per_event, double interval_ms, std::int64_t server_cpu_ns) {
  Row r;
  const double units = static_cast<double>(per_event ? k.token_events : k.requests);
  if (units <= 0) return r;
  r.cpu_per_unit_us = static_cast<double>(k.cpu_ns) / 1e3 / units;
  r.units_per_s = units / (static_cast<double>(k.wall_ns) / 1e9);
  r.utilisation = static_cast<double>(k.cpu_ns) / static_cast<double>(k.wall_ns);
  r.recvs = static_cast<double>(k.recvs) / units;
  r.eagain = static_cast<double>(k.recv_eagain) / units;
  r.epoll_waits = static_cast<double>(k.epoll_waits) / units;
  r.sends = static_cast<double>(k.sends) / units;
  r.server_cpu_per_unit_us = static_cast<double>(server_cpu_ns) / 1e3 / units;
  if (!k.gaps_ns.empty()) {
    r.itl_p1_ms = quantile(k.gaps_ns, 0.01) / 1e6;
    r.itl_p50_ms = quantile(k.gaps_ns, 0.50) / 1e6;
    r.itl_p99_ms = quantile(k.gaps_ns, 0.99) / 1e6;
    r.err_p99_ms = std::max(r.itl_p99_ms - interval_ms, interval_ms - r.itl_p1_ms);
  }
  return r;
}

// One run against a fresh firehose child (a previous run's streams would still hold its
// connections), so the server's CPU per unit is this run's too.
Row run_one(const bench::FirehoseOptions& fo, bool raw_server, int connections, int max_tokens,
            double seconds, bool per_event) {
  bench::ForkedServer server;
  server.start([&](int fd) {
    if (raw_server)
      bench::serve_paced_raw(fo, fd);
    else
      bench::serve_firehose(fo, fd);
  });
  Counters k;
  {
    FloorClient client(server.port(), connections, max_tokens, per_event);
    k = client.run(seconds);
  }
  const std::int64_t server_cpu_ns = server.stop();
  return summarise(k, per_event, static_cast<double>(fo.interval_ms), server_cpu_ns);
}

template <typename F>
void print(const char* name, const std::vector<Row>& rows, F field, const char* unit) {
  std::vector<double> v;
  for (const Row& r : rows) v.push_back(field(r));
  if (v.empty()) return;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::printf("| %-34s | %12.3f | %12.3f .. %-12.3f | %s\n", name, bench::median(v), *lo, *hi,
              unit);
}

}  // namespace

int main(int argc, char** argv) {
  bench::BenchFlags flags(argc, argv);
  const std::string scenario = flags.text("scenario", "both");
  const double seconds = flags.number("seconds", 3);
  const int repeat = static_cast<int>(flags.number("repeat", 3));
  const int request_streams = static_cast<int>(flags.number("request-streams", 16));
  const int streams = static_cast<int>(flags.number("streams", 1000));
  const int interval_ms = static_cast<int>(flags.number("interval-ms", 50));
  const int tokens = static_cast<int>(flags.number("tokens", 40));
  // paced scenario: the paced server and its phases, as in bench_concurrency.
  const std::string server_kind = flags.text("server", "asio");
  const std::string phases = flags.text("phases", "aligned");
  flags.check_all_used();
  if (!bench::paced_server_flags_ok(server_kind, phases)) return 2;
  if (scenario != "requests" && scenario != "paced" && scenario != "both") {
    std::cerr << "--scenario: must be requests, paced or both\n";
    return 2;
  }
  if (bench::raise_nofile(static_cast<std::int64_t>(streams) * 2 + 256) < streams + 64) {
    std::cerr << "RLIMIT_NOFILE too low for --streams=" << streams << "\n";
    return 2;
  }

  if (scenario != "paced") {
    bench::FirehoseOptions fo;  // firehose mode: the whole 1-token answer as fast as it goes
    std::vector<Row> rows;
    for (int i = 0; i < repeat; ++i)
      rows.push_back(run_one(fo, false, request_streams, 1, seconds, false));
    std::printf(
        "bench_raw_floor requests: %d keep-alive connections, 1-token requests, %.1f s x %d"
        " (median, min .. max)\n",
        request_streams, seconds, repeat);
    print(
        "CPU per 1-token request", rows, [](const Row& r) { return r.cpu_per_unit_us; }, "us");
    print(
        "requests / wall second", rows, [](const Row& r) { return r.units_per_s; }, "req/s");
    print(
        "thread utilisation", rows, [](const Row& r) { return r.utilisation; }, "of a core");
    print(
        "recv per request", rows, [](const Row& r) { return r.recvs; }, "calls");
    print(
        "  of which EAGAIN", rows, [](const Row& r) { return r.eagain; }, "calls");
    print(
        "epoll_wait per request", rows, [](const Row& r) { return r.epoll_waits; }, "calls");
    print(
        "send per request", rows, [](const Row& r) { return r.sends; }, "calls");
    print(
        "firehose CPU per request", rows, [](const Row& r) { return r.server_cpu_per_unit_us; },
        "us (whole child)");
  }
  if (scenario != "requests") {
    bench::FirehoseOptions fo;
    fo.interval_ms = interval_ms;
    fo.max_connections = static_cast<std::size_t>(streams) + 64;
    fo.spread_phases = phases == "spread";
    std::vector<Row> rows;
    for (int i = 0; i < repeat; ++i)
      rows.push_back(run_one(fo, server_kind == "raw", streams, tokens, seconds, true));
    std::printf(
        "bench_raw_floor paced: %d streams x %d tokens, one event per %d ms per stream"
        " (%s paced server, %s phases), %.1f s x %d (median, min .. max)\n",
        streams, tokens, interval_ms, server_kind.c_str(), phases.c_str(), seconds, repeat);
    print(
        "CPU per token event", rows, [](const Row& r) { return r.cpu_per_unit_us; }, "us");
    print(
        "token events / wall second", rows, [](const Row& r) { return r.units_per_s; }, "events/s");
    print(
        "thread utilisation", rows, [](const Row& r) { return r.utilisation; }, "of a core");
    print(
        "recv per event", rows, [](const Row& r) { return r.recvs; }, "calls");
    print(
        "  of which EAGAIN", rows, [](const Row& r) { return r.eagain; }, "calls");
    print(
        "epoll_wait per event", rows, [](const Row& r) { return r.epoll_waits; }, "calls");
    print(
        "firehose CPU per event", rows, [](const Row& r) { return r.server_cpu_per_unit_us; },
        "us (whole child)");
    print(
        "measured ITL P1", rows, [](const Row& r) { return r.itl_p1_ms; }, "ms");
    print(
        "measured ITL P50", rows, [](const Row& r) { return r.itl_p50_ms; }, "ms");
    print(
        "measured ITL P99", rows, [](const Row& r) { return r.itl_p99_ms; }, "ms");
    print(
        "ITL error at P1/P99 vs interval", rows, [](const Row& r) { return r.err_p99_ms; }, "ms");
  }
  return 0;
}
