#include "bench/paced_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <queue>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/log_histogram.h"
#include "bench/bench_support.h"

namespace llmcap::bench {
namespace {

std::int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string chunk(std::string_view payload) {
  char hex[20];
  const auto [end, ec] = std::to_chars(hex, hex + sizeof hex, payload.size(), 16);
  (void)ec;
  std::string out(hex, end);
  out.append("\r\n").append(payload).append("\r\n");
  return out;
}

constexpr std::uint64_t kListenTag = ~0ULL;
constexpr std::uint64_t kSignalTag = ~0ULL - 1;

struct Conn {
  int fd = -1;
  std::uint32_t generation = 0;  // bumped on close: stale heap entries are skipped
  std::string in;                // request bytes not yet handled
  std::string out;               // bytes the socket did not take yet (EPOLLOUT armed)
  bool streaming = false;
  bool tail_due = false;  // [DONE] and the last chunk wait for their heap entry (tail_delay_ms)
  bool chat = false;
  std::int64_t tokens_left = 0, tokens = 0, prompt_tokens = 0;
  std::int64_t last_write_ns = -1;
};

struct Due {
  std::int64_t at_ns;
  std::uint32_t conn;
  std::uint32_t generation;
  bool operator>(const Due& o) const { return at_ns > o.at_ns; }
};

class PacedServer {
 public:
  explicit PacedServer(const FirehoseOptions& o)
      : o_(o),
        interval_ns_(o.interval_ms * 1'000'000),
        events_{chunk(vllm_token_event(false, o.model)), chunk(vllm_token_event(true, o.model))} {
    if (o.interval_ms <= 0) throw std::invalid_argument("interval_ms: must be > 0");
    if (o.default_max_tokens < 0) throw std::invalid_argument("default_max_tokens: must be >= 0");
    if (o.tail_delay_ms < 0) throw std::invalid_argument("tail_delay_ms: must be >= 0");
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ep_ < 0 || listen_fd_ < 0) throw std::runtime_error("paced server: socket/epoll failed");
    const int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(o.port);
    if (inet_pton(AF_INET, o.address.c_str(), &addr.sin_addr) != 1)
      throw std::invalid_argument("address: not an IPv4 address: " + o.address);
    if (bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listen_fd_, 4096) != 0)
      throw std::runtime_error(std::string("paced server: cannot listen: ") + std::strerror(errno));
    add(listen_fd_, EPOLLIN, kListenTag);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigprocmask(SIG_BLOCK, &mask, nullptr);
    signal_fd_ = signalfd(-1, &mask, SFD_CLOEXEC);
    add(signal_fd_, EPOLLIN, kSignalTag);
  }

  std::uint16_t port() const {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    return ntohs(addr.sin_port);
  }

  void run() {
    std::vector<epoll_event> ready(1024);
    while (!stopping_) {
      write_due(mono_ns());
      timespec timeout{};
      timespec* wait = nullptr;  // no stream due: block until a socket or the signal
      if (!heap_.empty()) {
        const std::int64_t left = std::max<std::int64_t>(0, heap_.top().at_ns - mono_ns());
        timeout.tv_sec = left / 1'000'000'000;
        timeout.tv_nsec = left % 1'000'000'000;
        wait = &timeout;
      }
      const int n = epoll_pwait2(ep_, ready.data(), static_cast<int>(ready.size()), wait, nullptr);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(std::string("epoll_pwait2: ") + std::strerror(errno));
      }
      for (int i = 0; i < n; ++i) {
        const epoll_event& ev = ready[static_cast<std::size_t>(i)];
        if (ev.data.u64 == kListenTag)
          accept_all();
        else if (ev.data.u64 == kSignalTag)
          stopping_ = true;
        else
          on_conn(static_cast<std::uint32_t>(ev.data.u64), ev.events);
      }
    }
    std::fprintf(stderr,
                 "paced server (raw epoll): %llu requests, %llu token events, worst pacing lag "
                 "%.3f ms, server's own gap error P50/P99 %.3f/%.3f ms, %llu connections refused "
                 "at max_connections\n",
                 static_cast<unsigned long long>(requests_),
                 static_cast<unsigned long long>(events_sent_),
                 static_cast<double>(max_lag_ns_) / 1e6,
                 gap_error_ns_.count() ? gap_error_ns_.quantile(0.5) / 1e6 : 0.0,
                 gap_error_ns_.count() ? gap_error_ns_.quantile(0.99) / 1e6 : 0.0,
                 static_cast<unsigned long long>(refused_));
  }

 private:
  void add(int fd, std::uint32_t events, std::uint64_t tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) != 0)
      throw std::runtime_error(std::string("epoll_ctl: ") + std::strerror(errno));
  }
  void modify(std::uint32_t id, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    epoll_ctl(ep_, EPOLL_CTL_MOD, conns_[id].fd, &ev);
  }

  void accept_all() {
    for (;;) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN (or a transient error: the next readiness retries)
      if (open_ >= o_.max_connections) {
        ++refused_;
        close(fd);
        continue;
      }
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::uint32_t id;
      if (!free_.empty()) {
        id = free_.back();
        free_.pop_back();
      } else {
        id = static_cast<std::uint32_t>(conns_.size());
        conns_.emplace_back();
      }
      Conn& c = conns_[id];
      const std::uint32_t gen = c.generation;
      c = Conn{};
      c.generation = gen;
      c.fd = fd;
      ++open_;
      add(fd, EPOLLIN, id);
    }
  }

  void drop(std::uint32_t id) {
    Conn& c = conns_[id];
    close(c.fd);  // also removes it from the epoll set
    c.fd = -1;
    ++c.generation;
    c.in.clear();
    c.out.clear();
    --open_;
    free_.push_back(id);
  }

  void on_conn(std::uint32_t id, std::uint32_t events) {
    Conn& c = conns_[id];
    if (c.fd < 0) return;
    if (events & EPOLLOUT) {
      if (!flush(id)) return;
    }
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) return;
    char buf[16384];
    const ssize_t got = recv(c.fd, buf, sizeof buf, 0);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
      drop(id);
      return;
    }
    if (got < 0) return;
    c.in.append(buf, static_cast<std::size_t>(got));
    if (!c.streaming && !c.tail_due) handle_request(id);
  }

  // One complete request in c.in (no pipelining: the agent waits for each response).
  void handle_request(std::uint32_t id) {
    Conn& c = conns_[id];
    const auto head_end = c.in.find("\r\n\r\n");
    if (head_end == std::string::npos) return;
    const std::string_view head(c.in.data(), head_end);
    std::size_t body_len = 0;
    for (std::size_t at = head.find("\r\n"); at != std::string_view::npos;
         at = head.find("\r\n", at + 2)) {
      const std::string_view line = head.substr(at + 2, head.find("\r\n", at + 2) - (at + 2));
      constexpr std::string_view kLen = "content-length:";
      if (line.size() > kLen.size() && strncasecmp(line.data(), kLen.data(), kLen.size()) == 0) {
        std::size_t i = kLen.size();
        while (i < line.size() && line[i] == ' ') ++i;
        std::from_chars(line.data() + i, line.data() + line.size(), body_len);
      }
    }
    if (c.in.size() < head_end + 4 + body_len) return;
    const std::string_view body(c.in.data() + head_end + 4, body_len);
    const std::string_view request_line = head.substr(0, head.find("\r\n"));
    const bool completions = request_line.starts_with("POST /v1/completions ");
    const bool chat = request_line.starts_with("POST /v1/chat/completions ");
    if (!completions && !chat) {
      constexpr std::string_view kBody = R"({"error":{"message":"not found"}})";
      const std::string not_found =
          "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: " +
          std::to_string(kBody.size()) + "\r\n\r\n" + std::string(kBody);
      c.in.erase(0, head_end + 4 + body_len);
      send_bytes(id, not_found);
      return;
    }
    const auto max_tokens = max_tokens_in(body);
    c.tokens = max_tokens.value_or(o_.default_max_tokens);
    c.tokens_left = c.tokens;
    c.prompt_tokens = static_cast<std::int64_t>(body.size() / 4);
    c.chat = chat;
    c.streaming = true;
    c.last_write_ns = -1;
    c.in.erase(0, head_end + 4 + body_len);
    ++requests_;
    constexpr std::string_view kHeaders =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        "Server: llmcap-paced-raw\r\nTransfer-Encoding: chunked\r\n\r\n";
    if (!send_bytes(id, kHeaders)) return;
    if (c.tokens_left == 0) {
      finish(id);
      return;
    }
    std::int64_t first = interval_ns_;
    if (o_.spread_phases)
      first += std::uniform_int_distribution<std::int64_t>(0, interval_ns_ - 1)(rng_);
    heap_.push(Due{mono_ns() + first, id, c.generation});
  }

  void write_due(std::int64_t now) {
    while (!heap_.empty() && heap_.top().at_ns <= now) {
      const Due d = heap_.top();
      heap_.pop();
      Conn& c = conns_[d.conn];
      if (c.fd < 0 || c.generation != d.generation) continue;
      if (c.tail_due) {
        send_tail(d.conn);
        continue;
      }
      if (!c.streaming) continue;
      const std::int64_t t = mono_ns();
      max_lag_ns_ = std::max(max_lag_ns_, t - d.at_ns);
      if (c.last_write_ns >= 0) {
        const std::int64_t err = (t - c.last_write_ns) - interval_ns_;
        gap_error_ns_.record(static_cast<double>(err < 0 ? -err : err));
      }
      c.last_write_ns = t;
      if (!send_bytes(d.conn, events_[c.chat ? 1 : 0])) continue;
      ++events_sent_;
      if (--c.tokens_left > 0)
        heap_.push(Due{d.at_ns + interval_ns_, d.conn, d.generation});
      else
        finish(d.conn);
      now = std::max(now, t);
    }
  }

  void finish(std::uint32_t id) {
    Conn& c = conns_[id];
    const std::string events = vllm_final_events(c.chat, c.prompt_tokens, c.tokens);
    c.streaming = false;
    if (o_.tail_delay_ms > 0) {
      const std::size_t done_at = events.rfind("data: [DONE]");
      if (!send_bytes(id, chunk(std::string_view(events).substr(0, done_at)))) return;
      c.tail_due = true;
      heap_.push(Due{mono_ns() + o_.tail_delay_ms * 1'000'000, id, c.generation});
      return;
    }
    std::string tail = chunk(events);
    tail.append("0\r\n\r\n");
    if (!send_bytes(id, tail)) return;
    if (!c.in.empty()) handle_request(id);
  }

  // The delayed end of an answer (tail_delay_ms): [DONE] and the last chunk, one write.
  void send_tail(std::uint32_t id) {
    Conn& c = conns_[id];
    c.tail_due = false;
    if (!send_bytes(id, chunk("data: [DONE]\n\n") + "0\r\n\r\n")) return;
    if (!c.in.empty()) handle_request(id);
  }

  // Sends (or queues behind bytes already waiting); false when the connection was dropped.
  bool send_bytes(std::uint32_t id, std::string_view bytes) {
    Conn& c = conns_[id];
    if (!c.out.empty()) {
      c.out.append(bytes);
      return true;
    }
    const ssize_t n = send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN) {
      drop(id);
      return false;
    }
    const std::size_t sent = n < 0 ? 0 : static_cast<std::size_t>(n);
    if (sent < bytes.size()) {
      c.out.assign(bytes.substr(sent));
      modify(id, EPOLLIN | EPOLLOUT);
    }
    return true;
  }

  bool flush(std::uint32_t id) {
    Conn& c = conns_[id];
    const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN) {
      drop(id);
      return false;
    }
    if (n > 0) c.out.erase(0, static_cast<std::size_t>(n));
    if (c.out.empty()) modify(id, EPOLLIN);
    return true;
  }

  FirehoseOptions o_;
  std::int64_t interval_ns_;
  std::string events_[2];  // chunk-framed token event: completions, chat
  int ep_ = -1, listen_fd_ = -1, signal_fd_ = -1;
  bool stopping_ = false;
  std::vector<Conn> conns_;
  std::vector<std::uint32_t> free_;
  std::size_t open_ = 0;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> heap_;
  std::uint64_t requests_ = 0, events_sent_ = 0;
  std::uint64_t refused_ = 0;  // connections closed at accept: max_connections were open
  std::int64_t max_lag_ns_ = 0;
  analysis::LogHistogram gap_error_ns_;
  std::mt19937_64 rng_{20261203};  // phases (spread_phases): the same every run
};

}  // namespace

void serve_paced_raw(const FirehoseOptions& options, int port_fd) {
  raise_nofile(static_cast<std::int64_t>(options.max_connections) + 256);
  PacedServer server(options);
  const std::uint16_t port = server.port();
  if (write(port_fd, &port, sizeof port) != static_cast<ssize_t>(sizeof port)) return;
  close(port_fd);
  server.run();
}

}  // namespace llmcap::bench
