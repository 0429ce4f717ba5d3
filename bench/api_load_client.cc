// Open-loop HTTP/1.1 read load for bench/api_under_load.py (issue 10: API P99 at 500 req/s).
//
// Request i is due at t0 + i/rate (steady_clock) and asks for paths[i % n]. A dispatcher hands
// each due request to a pool of worker threads, each holding one keep-alive connection. When
// every worker is busy the request waits in the queue: it is sent late, never dropped, and the
// wait shows up in its lateness. Per request (coordinated-omission correct):
//   latency_from_intended = last byte of the response - intended send time
//   lateness              = actual send (a worker starts on it) - intended send time
//   service               = last byte - actual send
// Runs for --duration-s, or until SIGINT/SIGTERM; then waits for the requests already due (up
// to 30 s; any still queued then count as errors, "not_sent") and prints one JSON line on
// stdout. Exit 0, 1 when no request succeeded, 2 on a bad flag.
//
// Usage: bench_api_load_client --port P --rate R --duration-s S --paths /a,/b
//                              [--workers 32] [--host 127.0.0.1]
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kIoTimeoutS = 30;                     // per send/recv on a socket
constexpr std::size_t kMaxHeaderBytes = 65536;      // a longer response head is an error
constexpr double kMaxRequests = 1e8;                // rate x duration bound (one record each)
constexpr int kDrainS = 30;                         // after the schedule: wait for queued requests
constexpr int kTransportError = -1, kNotSent = -2;  // Record::status besides HTTP codes

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  double rate = 0;
  double duration_s = 0;
  std::vector<std::string> paths;
  int workers = 32;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr,
               "bench_api_load_client: %s\nusage: bench_api_load_client --port P --rate R "
               "--duration-s S --paths /a,/b [--workers 32] [--host 127.0.0.1]\n",
               message.c_str());
  std::exit(2);
}

template <typename T>
T parse_number(const std::string& flag, const std::string& text, T lo, T hi) {
  T v{};
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || text.empty() || !(v >= lo && v <= hi)) {
    char range[96];
    std::snprintf(range, sizeof range, "[%g, %g]", static_cast<double>(lo),
                  static_cast<double>(hi));
    usage_error(flag + " wants a number in " + range + ", not '" + text + "'");
  }
  return v;
}

std::vector<std::string> parse_paths(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::string p = text.substr(start, comma - start);
    if (p.empty() || p[0] != '/' ||
        std::any_of(p.begin(), p.end(), [](unsigned char c) { return c <= ' ' || c >= 0x7f; })) {
      usage_error(
          "--paths wants comma-separated paths starting with '/', without spaces or "
          "control characters, not '" +
          text + "'");
    }
    out.push_back(std::move(p));
    start = comma + 1;
  }
  return out;
}

Options parse_options(int argc, char** argv) {
  Options o;
  bool have_port = false, have_rate = false, have_duration = false, have_paths = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    std::optional<std::string> value;
    if (const auto eq = flag.find('='); flag.starts_with("--") && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    if (flag == "--help" || flag == "-h") {
      std::printf(
          "usage: bench_api_load_client --port P --rate R --duration-s S --paths /a,/b "
          "[--workers 32] [--host 127.0.0.1]\n");
      std::exit(0);
    }
    if (flag != "--port" && flag != "--rate" && flag != "--duration-s" && flag != "--paths" &&
        flag != "--workers" && flag != "--host") {
      usage_error("unknown argument '" + std::string(argv[i]) + "'");
    }
    if (!value) {
      if (i + 1 >= argc) usage_error(flag + " needs a value");
      value = argv[++i];
    }
    if (flag == "--port") {
      o.port = parse_number<int>(flag, *value, 1, 65535);
      have_port = true;
    } else if (flag == "--rate") {
      o.rate = parse_number<double>(flag, *value, 1e-3, 1e6);
      have_rate = true;
    } else if (flag == "--duration-s") {
      o.duration_s = parse_number<double>(flag, *value, 1e-3, 86400);
      have_duration = true;
    } else if (flag == "--paths") {
      o.paths = parse_paths(*value);
      have_paths = true;
    } else if (flag == "--workers") {
      o.workers = parse_number<int>(flag, *value, 1, 1024);
    } else {
      if (value->empty()) usage_error("--host wants a host name or address, not ''");
      o.host = *value;
    }
  }
  if (!have_port) usage_error("--port is required");
  if (!have_rate) usage_error("--rate is required");
  if (!have_duration) usage_error("--duration-s is required");
  if (!have_paths) usage_error("--paths is required");
  if (o.rate * o.duration_s > kMaxRequests) {
    usage_error("--rate x --duration-s is over 1e8 requests");
  }
  return o;
}

// One keep-alive HTTP/1.1 connection, used by one worker thread.
class Connection {
 public:
  Connection(const sockaddr_storage& addr, socklen_t addr_len, std::string host_header)
      : addr_(addr), addr_len_(addr_len), host_header_(std::move(host_header)) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { close(); }

  // Sends GET path and reads the whole response. Returns the status code, or kTransportError
  // on a transport or framing error. A request on a reused connection that the server closed
  // before answering a byte (idle keep-alive close) is retried once on a fresh connection;
  // `retried` says so.
  int get(const std::string& path, bool& retried) {
    const bool reused = fd_ >= 0;
    const int status = attempt(path);
    retried = status == kTransportError && reused && peer_closed_ && !got_bytes_;
    return retried ? attempt(path) : status;
  }

 private:
  int attempt(const std::string& path) {
    got_bytes_ = peer_closed_ = false;
    if (fd_ < 0 && !connect_now()) return kTransportError;
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + host_header_ + "\r\n\r\n";
    const int status = send_all(req) ? read_response() : kTransportError;
    return status < 0 ? fail() : status;
  }

  bool connect_now() {
    buf_.clear();
    fd_ = ::socket(addr_.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const timeval tv{kIoTimeoutS, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr_), addr_len_) != 0) {
      close();
      return false;
    }
    return true;
  }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buf_.clear();
  }

  int fail() {
    close();
    return kTransportError;
  }

  bool send_all(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        peer_closed_ = n < 0 && (errno == EPIPE || errno == ECONNRESET);
        return false;
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // Appends what the socket has to buf_; false on EOF, error or timeout.
  bool fill() {
    char tmp[16384];
    for (;;) {
      const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // EOF, reset, or kIoTimeoutS without a byte (EAGAIN)
        peer_closed_ = n == 0 || errno == ECONNRESET;
        return false;
      }
      got_bytes_ = true;
      buf_.append(tmp, static_cast<std::size_t>(n));
      return true;
    }
  }

  // Position just past the next "\r\n" at or after `from`, filling as needed; npos on error.
  std::size_t line_end(std::size_t from) {
    for (;;) {
      const std::size_t p = buf_.find("\r\n", from);
      if (p != std::string::npos) return p + 2;
      if (buf_.size() - from > kMaxHeaderBytes || !fill()) return std::string::npos;
    }
  }

  bool have(std::size_t n) {
    while (buf_.size() < n) {
      if (!fill()) return false;
    }
    return true;
  }

  static std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }

  static std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  }

  // Reads one response (head and body) from buf_ + socket and consumes it from buf_.
  int read_response() {
    std::size_t head_end;
    for (;;) {
      head_end = buf_.find("\r\n\r\n");
      if (head_end != std::string::npos) break;
      if (buf_.size() > kMaxHeaderBytes || !fill()) return kTransportError;
    }
    const std::string_view head(buf_.data(), head_end);
    // Status line: HTTP/1.x SP 3DIGIT SP reason
    if (head.size() < 12 || !head.starts_with("HTTP/1.")) return kTransportError;
    int status = 0;
    if (std::from_chars(head.data() + 9, head.data() + 12, status).ec != std::errc())
      return kTransportError;
    std::optional<std::size_t> content_length;
    bool chunked = false, close_after = head.starts_with("HTTP/1.0");
    for (std::size_t pos = head.find("\r\n"); pos != std::string_view::npos;) {
      const std::size_t next = head.find("\r\n", pos + 2);
      const std::string_view line =
          head.substr(pos + 2, (next == std::string_view::npos ? head.size() : next) - pos - 2);
      pos = next;
      const std::size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      const std::string name = lower(trim(line.substr(0, colon)));
      const std::string value = lower(trim(line.substr(colon + 1)));
      if (name == "content-length") {
        std::size_t n = 0;
        const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc() || p != value.data() + value.size()) return kTransportError;
        content_length = n;
      } else if (name == "transfer-encoding") {
        chunked = value.find("chunked") != std::string::npos;
      } else if (name == "connection") {
        if (value.find("close") != std::string::npos) close_after = true;
      }
    }
    std::size_t pos = head_end + 4;
    if ((status >= 100 && status < 200) || status == 204 || status == 304) {
      // no body
    } else if (chunked) {
      for (;;) {
        const std::size_t end = line_end(pos);
        if (end == std::string::npos) return kTransportError;
        std::size_t size = 0;
        const auto [p, ec] = std::from_chars(buf_.data() + pos, buf_.data() + end - 2, size, 16);
        if (ec != std::errc() || p == buf_.data() + pos) return kTransportError;
        pos = end;
        if (size == 0) {  // trailers up to an empty line
          for (;;) {
            const std::size_t t = line_end(pos);
            if (t == std::string::npos) return kTransportError;
            const bool empty = t == pos + 2;
            pos = t;
            if (empty) break;
          }
          break;
        }
        if (!have(pos + size + 2) || buf_.compare(pos + size, 2, "\r\n") != 0)
          return kTransportError;
        pos += size + 2;
      }
    } else if (content_length) {
      if (!have(pos + *content_length)) return kTransportError;
      pos += *content_length;
    } else {  // body runs to the end of the connection
      while (fill()) {
      }
      pos = buf_.size();
      close_after = true;
    }
    buf_.erase(0, pos);
    if (close_after) close();
    return status;
  }

  sockaddr_storage addr_;
  socklen_t addr_len_;
  std::string host_header_;
  int fd_ = -1;
  std::string buf_;
  bool got_bytes_ = false;    // the current attempt received a byte
  bool peer_closed_ = false;  // the current attempt failed on EOF, EPIPE or ECONNRESET
};

struct Record {
  Clock::time_point intended, sent, done;
  std::size_t path = 0;  // index into Options::paths
  int status = 0;
  bool retried = false;
};

// The dispatcher's hand-off to the workers: indices of due requests, FIFO, unbounded.
class WorkQueue {
 public:
  // Returns how many requests now wait for a free worker (this one included).
  std::size_t push(std::size_t i) {
    std::size_t waiting;
    {
      std::lock_guard lock(mu_);
      items_.push_back(i);
      waiting = items_.size();
    }
    cv_.notify_one();
    return waiting;
  }
  // No more pushes; the workers finish what is queued, then pop() returns nullopt.
  void close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  // Waits until the queue is empty, at most until `deadline`; then empties it and returns what
  // no worker took (those requests are never sent).
  std::vector<std::size_t> drain(Clock::time_point deadline) {
    std::unique_lock lock(mu_);
    drained_.wait_until(lock, deadline, [&] { return items_.empty(); });
    std::vector<std::size_t> left(items_.begin(), items_.end());
    items_.clear();
    return left;
  }
  std::optional<std::size_t> pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    const std::size_t i = items_.front();
    items_.pop_front();
    if (items_.empty()) drained_.notify_all();
    return i;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_, drained_;
  std::deque<std::size_t> items_;
  bool closed_ = false;
};

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Linear interpolation between closest ranks (the project's percentile method).
double pct(const std::vector<double>& sorted, double p) {
  const double k = static_cast<double>(sorted.size() - 1) * p / 100.0;
  const auto lo = static_cast<std::size_t>(k);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (k - static_cast<double>(lo));
}

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.4f", v);
  return b;
}

std::string summary(std::vector<double> v) {
  if (v.empty()) return R"({"n":0,"p50":null,"p90":null,"p99":null,"max":null})";
  std::sort(v.begin(), v.end());
  return "{\"n\":" + std::to_string(v.size()) + ",\"p50\":" + num(pct(v, 50)) +
         ",\"p90\":" + num(pct(v, 90)) + ",\"p99\":" + num(pct(v, 99)) +
         ",\"max\":" + num(v.back()) + "}";
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;  // paths are printable ASCII (checked by parse_paths)
  }
  return out + "\"";
}

// Counts and latency summaries over the records `take` selects.
template <typename Pred>
std::string stats(const std::vector<Record>& rs, Pred take) {
  std::size_t sent = 0, ok = 0;
  std::map<int, std::size_t> by_status;
  std::vector<double> latency, lateness, service;
  for (const Record& r : rs) {
    if (!take(r)) continue;
    ++sent;
    ++by_status[r.status];
    lateness.push_back(ms(r.sent - r.intended));
    if (r.status >= 200 && r.status < 300) {
      ++ok;
      latency.push_back(ms(r.done - r.intended));
      service.push_back(ms(r.done - r.sent));
    }
  }
  std::string status = "{";
  for (const auto& [code, n] : by_status) {
    if (status.size() > 1) status += ",";
    status += "\"" +
              (code == kTransportError ? std::string("error")
               : code == kNotSent      ? std::string("not_sent")
                                       : std::to_string(code)) +
              "\":" + std::to_string(n);
  }
  status += "}";
  return "\"sent\":" + std::to_string(sent) + ",\"ok\":" + std::to_string(ok) +
         ",\"errors\":" + std::to_string(sent - ok) + ",\"status\":" + status +
         ",\"latency_from_intended_ms\":" + summary(std::move(latency)) +
         ",\"lateness_ms\":" + summary(std::move(lateness)) +
         ",\"service_ms\":" + summary(std::move(service));
}

}  // namespace

int main(int argc, char** argv) {
  // SIGINT/SIGTERM end the schedule early (the dispatcher waits for them with sigtimedwait);
  // blocked before any thread starts, so every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const Options o = parse_options(argc, argv);

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(o.port);
  if (const int rc = ::getaddrinfo(o.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    usage_error("--host '" + o.host + "' does not resolve: " + ::gai_strerror(rc));
  }
  sockaddr_storage addr{};
  const socklen_t addr_len = found->ai_addrlen;
  std::memcpy(&addr, found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  const std::string host_header =
      (o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host) + ":" + port;

  const auto max_requests = static_cast<std::size_t>(std::ceil(o.rate * o.duration_s));
  std::vector<Record> records(max_requests);
  WorkQueue queue;
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(o.workers));
  for (int w = 0; w < o.workers; ++w) {
    workers.emplace_back([&] {
      Connection conn(addr, addr_len, host_header);
      while (const auto i = queue.pop()) {
        Record& r = records[*i];
        r.sent = Clock::now();
        r.status = conn.get(o.paths[r.path], r.retried);
        r.done = Clock::now();
      }
    });
  }

  // Dispatcher: request i is due at t0 + i/rate.
  const Clock::time_point t0 = Clock::now();
  std::size_t dispatched = 0;
  std::size_t queued_max = 0;  // most requests seen waiting for a free worker
  bool stopped = false;
  while (dispatched < max_requests && !stopped) {
    const Clock::time_point due =
        t0 + std::chrono::duration_cast<Clock::duration>(
                 std::chrono::duration<double>(static_cast<double>(dispatched) / o.rate));
    // Sleeps until due in sigtimedwait; with a zero wait when behind, so a stop still counts.
    for (;;) {
      const auto wait = std::max<std::int64_t>(
          0, std::chrono::duration_cast<std::chrono::nanoseconds>(due - Clock::now()).count());
      const timespec ts{static_cast<time_t>(wait / 1000000000),
                        static_cast<long>(wait % 1000000000)};
      if (::sigtimedwait(&stop_signals, nullptr, &ts) > 0) {
        stopped = true;
        break;
      }
      if (Clock::now() >= due) break;
    }
    if (stopped) break;
    records[dispatched].intended = due;
    records[dispatched].path = dispatched % o.paths.size();
    queued_max = std::max(queued_max, queue.push(dispatched));
    ++dispatched;
  }
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
  queue.close();
  // Requests no worker took within kDrainS of the schedule's end are reported as not sent
  // (status "not_sent", an error) so that an overloaded run still ends in bounded time.
  for (const std::size_t i : queue.drain(Clock::now() + std::chrono::seconds(kDrainS))) {
    records[i].sent = records[i].done = Clock::now();
    records[i].status = kNotSent;
  }
  for (std::thread& t : workers) t.join();
  records.resize(dispatched);

  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const double cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  std::size_t retries = 0, ok = 0;
  for (const Record& r : records) {
    retries += r.retried ? 1 : 0;
    ok += (r.status >= 200 && r.status < 300) ? 1 : 0;
  }
  std::string out = "{" + stats(records, [](const Record&) { return true; });
  out += ",\"retries\":" + std::to_string(retries);
  out += ",\"elapsed_s\":" + num(elapsed_s);
  out +=
      ",\"achieved_rate\":" + num(elapsed_s > 0 ? static_cast<double>(dispatched) / elapsed_s : 0);
  out += ",\"rate\":" + num(o.rate);
  out += ",\"workers\":" + std::to_string(o.workers);
  out += ",\"queued_max\":" + std::to_string(queued_max);
  out += ",\"cpu_s\":" + num(cpu_s);
  out += ",\"stopped_by_signal\":" + std::string(stopped ? "true" : "false");
  out += ",\"paths\":[";
  for (std::size_t k = 0; k < o.paths.size(); ++k) {
    if (k) out += ",";
    out += "{\"path\":" + json_string(o.paths[k]) + "," +
           stats(records, [k](const Record& r) { return r.path == k; }) + "}";
  }
  out += "]}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return dispatched > 0 && ok == 0 ? 1 : 0;
}
