// KubernetesApiLauncher against a fake Kubernetes API server on 127.0.0.1 (plain HTTP). The
// fake checks the method, the path, the bearer token and the body, and answers what each test
// scripts. One test checks the cluster-CA verification over TLS against `openssl s_server`.
#include "server/fleet/kubernetes_api_launcher.h"

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

extern char** environ;

#include "net/http_server.h"

namespace llmcap::server {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kToken = "sa-token-0123456789abcdef";

struct SeenRequest {
  std::string method, path, query, authorization, content_type, body;
};

class FakeKubernetesApi {
 public:
  FakeKubernetesApi() {
    server_ = std::make_unique<net::HttpServer>(
        io_, net::HttpServerOptions{},
        [this](net::HttpRequest& req, net::ResponseStream&)
            -> asio::awaitable<std::optional<net::HttpResponse>> { co_return handle(req); });
    server_->start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~FakeKubernetesApi() {
    server_->stop();
    work_.reset();
    io_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  void answer(int status, json body) {
    std::lock_guard lock(mu_);
    status_ = status;
    body_ = std::move(body);
  }
  std::vector<SeenRequest> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  net::HttpResponse handle(const net::HttpRequest& req) {
    std::lock_guard lock(mu_);
    seen_.push_back({req.method, req.path, req.query,
                     std::string(req.header("authorization").value_or("")),
                     std::string(req.header("content-type").value_or("")), req.body});
    // Like the API server: no valid bearer token, 401 whatever the scripted answer.
    if (req.header("authorization").value_or("") != std::string("Bearer ") + kToken) {
      return net::HttpResponse::json(
          401, json{{"kind", "Status"}, {"message", "Unauthorized"}, {"code", 401}}.dump());
    }
    return net::HttpResponse::json(status_, body_.dump());
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  std::unique_ptr<net::HttpServer> server_;
  std::thread thread_;
  std::mutex mu_;
  int status_ = 201;               // guarded by mu_
  json body_;                      // guarded by mu_
  std::vector<SeenRequest> seen_;  // guarded by mu_
};

class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("llmcap-k8s-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    write("token", std::string(kToken) + "\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  KubernetesApiConfig config(const std::string& url) const {
    KubernetesApiConfig c;
    c.api_url = url;
    c.token_file = (dir_ / "token").string();
    c.timeout_ms = 5'000;
    return c;
  }
  static AgentFleetSpec spec() {
    AgentFleetSpec s;
    s.job_id = "job_01JDQ3ZK8W5M7X2T4R6Y9B0C1D";
    s.count = 4;
    s.image = "llmcapd:0.1.0";
    s.daemon_url = "http://llmcapd.llmcap.svc:8080";
    s.namespace_name = "loadtest";
    return s;
  }
  fs::path dir_;
};

TEST_F(LauncherTest, CreatesTheIndexedJobWith201) {
  FakeKubernetesApi api;
  api.answer(201, {{"kind", "Job"},
                   {"metadata", {{"name", "llmcap-agents-job-01jdq3zk8w5m7x2t4r6y9b0c1d"}}}});
  KubernetesApiLauncher launcher(config(api.url()));
  const LaunchResult r = launcher.launch(spec());
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.http_status, 201);
  EXPECT_EQ(r.job_name, "llmcap-agents-job-01jdq3zk8w5m7x2t4r6y9b0c1d");
  EXPECT_EQ(r.namespace_name, "loadtest");
  EXPECT_TRUE(r.manifest_text.empty());
  const auto seen = api.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/apis/batch/v1/namespaces/loadtest/jobs");
  EXPECT_EQ(seen[0].authorization, std::string("Bearer ") + kToken);
  EXPECT_EQ(seen[0].content_type, "application/json");
  // The body is exactly the manifest build_agent_job() makes.
  EXPECT_EQ(json::parse(seen[0].body), build_agent_job(spec()).value());
}

TEST_F(LauncherTest, RereadsTheRotatedTokenEveryCall) {
  FakeKubernetesApi api;
  write("token", "an-old-expired-token");
  KubernetesApiLauncher launcher(config(api.url()));
  const LaunchResult old = launcher.launch(spec());
  EXPECT_EQ(old.error, LaunchError::kUnauthorized);
  EXPECT_EQ(old.http_status, 401);
  EXPECT_NE(old.message.find("rejected the service account token"), std::string::npos)
      << old.message;
  write("token", kToken);  // kubelet rotated it
  EXPECT_TRUE(launcher.launch(spec()).ok());
}

TEST_F(LauncherTest, ForbiddenNamesRbac) {
  FakeKubernetesApi api;
  api.answer(403, {{"kind", "Status"},
                   {"message",
                    "jobs.batch is forbidden: User \"system:serviceaccount:llmcap:"
                    "llmcapd\" cannot create resource \"jobs\""},
                   {"reason", "Forbidden"},
                   {"code", 403}});
  KubernetesApiLauncher launcher(config(api.url()));
  const LaunchResult r = launcher.launch(spec());
  EXPECT_EQ(r.error, LaunchError::kForbidden);
  EXPECT_EQ(r.http_status, 403);
  EXPECT_NE(r.message.find("RBAC"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("cannot create resource"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("deploy/k8s/role.yaml"), std::string::npos) << r.message;
}

TEST_F(LauncherTest, ConflictSaysItExistsAndHowToDelete) {
  FakeKubernetesApi api;
  api.answer(409, {{"kind", "Status"},
                   {"message",
                    "jobs.batch \"llmcap-agents-job-01jdq3zk8w5m7x2t4r6y9b0c1d\" "
                    "already exists"},
                   {"reason", "AlreadyExists"},
                   {"code", 409}});
  KubernetesApiLauncher launcher(config(api.url()));
  const LaunchResult r = launcher.launch(spec());
  EXPECT_EQ(r.error, LaunchError::kAlreadyExists);
  EXPECT_EQ(r.http_status, 409);
  EXPECT_NE(
      r.message.find("kubectl -n loadtest delete job llmcap-agents-job-01jdq3zk8w5m7x2t4r6y9b0c1d"),
      std::string::npos)
      << r.message;
}

TEST_F(LauncherTest, OtherStatusIsApiErrorWithTheServersMessage) {
  FakeKubernetesApi api;
  api.answer(422, {{"kind", "Status"}, {"message", "Job.batch is invalid: spec.completions"}});
  KubernetesApiLauncher launcher(config(api.url()));
  const LaunchResult r = launcher.launch(spec());
  EXPECT_EQ(r.error, LaunchError::kApiError);
  EXPECT_NE(r.message.find("422"), std::string::npos);
  EXPECT_NE(r.message.find("spec.completions"), std::string::npos);
}

TEST_F(LauncherTest, UnreachableApiServer) {
  // A port that was just free: nothing listens there.
  asio::io_context io;
  asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
  const auto port = probe.local_endpoint().port();
  probe.close();
  KubernetesApiLauncher launcher(config("http://127.0.0.1:" + std::to_string(port)));
  const LaunchResult r = launcher.launch(spec());
  EXPECT_EQ(r.error, LaunchError::kUnreachable);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_NE(r.message.find("unreachable"), std::string::npos) << r.message;
}

TEST_F(LauncherTest, InvalidSpecIsRefusedBeforeAnyRequest) {
  FakeKubernetesApi api;
  KubernetesApiLauncher launcher(config(api.url()));
  AgentFleetSpec bad = spec();
  bad.count = 0;
  const LaunchResult r = launcher.launch(bad);
  EXPECT_EQ(r.error, LaunchError::kInvalidSpec);
  EXPECT_EQ(r.message.rfind("count:", 0), 0u);
  EXPECT_TRUE(api.seen().empty());
}

TEST_F(LauncherTest, MissingTokenFileIsUnauthorizedWithoutARequest) {
  FakeKubernetesApi api;
  KubernetesApiConfig c = config(api.url());
  c.token_file = (dir_ / "absent").string();
  KubernetesApiLauncher launcher(c);
  const LaunchResult r = launcher.launch(spec());
  EXPECT_EQ(r.error, LaunchError::kUnauthorized);
  EXPECT_NE(r.message.find("no service account token"), std::string::npos);
  EXPECT_TRUE(api.seen().empty());
}

TEST_F(LauncherTest, RemoveDeletesInTheBackground) {
  FakeKubernetesApi api;
  api.answer(200, {{"kind", "Status"}, {"status", "Success"}});
  KubernetesApiLauncher launcher(config(api.url()));
  const LaunchResult r = launcher.remove("job_01JDQ3ZK8W5M7X2T4R6Y9B0C1D", "loadtest");
  ASSERT_TRUE(r.ok()) << r.message;
  const auto seen = api.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "DELETE");
  EXPECT_EQ(seen[0].path,
            "/apis/batch/v1/namespaces/loadtest/jobs/llmcap-agents-job-01jdq3zk8w5m7x2t4r6y9b0c1d");
  EXPECT_EQ(seen[0].query, "propagationPolicy=Background");
  EXPECT_EQ(seen[0].authorization, std::string("Bearer ") + kToken);

  api.answer(404, {{"kind", "Status"}, {"message", "not found"}, {"code", 404}});
  const LaunchResult gone = launcher.remove("job_01JDQ3ZK8W5M7X2T4R6Y9B0C1D", "loadtest");
  EXPECT_EQ(gone.error, LaunchError::kNotFound);
  EXPECT_NE(gone.message.find("already deleted"), std::string::npos);
  EXPECT_EQ(launcher.remove("job_x", "Bad/NS").error, LaunchError::kInvalidSpec);
  EXPECT_EQ(api.seen().size(), 2u);
}

// The API server's certificate is checked against ca.crt (KubernetesApiConfig::ca_file): a
// self-signed server is refused by the system store and accepted with its own certificate as
// the cluster CA. `openssl s_server -www` speaks no Kubernetes, so only the handshake matters.
TEST_F(LauncherTest, VerifiesTheApiServerAgainstTheClusterCa) {
  if (std::system("openssl version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no openssl CLI";
  const std::string cert = (dir_ / "ca.crt").string(), key = (dir_ / "key.pem").string();
  const std::string gen = "openssl req -x509 -newkey rsa:2048 -nodes -keyout " + key + " -out " +
                          cert +
                          " -days 1 -subj /CN=kubernetes -addext subjectAltName=IP:127.0.0.1"
                          " > /dev/null 2>&1";
  ASSERT_EQ(std::system(gen.c_str()), 0);
  asio::io_context io;
  asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
  const std::string port = std::to_string(probe.local_endpoint().port());
  probe.close();
  std::vector<std::string> args = {"openssl", "s_server", "-quiet", "-www", "-accept",
                                   port,      "-cert",    cert,     "-key", key};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawnp(&pid, "openssl", nullptr, nullptr, argv.data(), environ), 0);
  KubernetesApiConfig c = config("https://127.0.0.1:" + port);
  c.timeout_ms = 3'000;
  // s_server needs a moment to listen; retry the first (system store) call until it answers.
  LaunchResult untrusted;
  for (int i = 0; i < 50; ++i) {
    untrusted = KubernetesApiLauncher(c).launch(spec());
    if (untrusted.message.find("certificate verify failed") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(untrusted.error, LaunchError::kUnreachable);
  EXPECT_NE(untrusted.message.find("certificate verify failed"), std::string::npos)
      << untrusted.message;
  // Trusted: the handshake passes and the request is sent; s_server never answers a POST, so
  // the call ends at its deadline, not with a certificate error.
  c.ca_file = cert;
  c.timeout_ms = 1'000;
  const LaunchResult trusted = KubernetesApiLauncher(c).launch(spec());
  EXPECT_EQ(trusted.message.find("certificate verify failed"), std::string::npos)
      << trusted.message;
  EXPECT_EQ(trusted.message.find("tls"), std::string::npos) << trusted.message;
  EXPECT_NE(trusted.message.find("timeout"), std::string::npos) << trusted.message;
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
}

TEST_F(LauncherTest, RemoveUsesTheNamespaceItLaunchedIn) {
  FakeKubernetesApi api;
  KubernetesApiLauncher launcher(config(api.url()));
  ASSERT_TRUE(launcher.launch(spec()).ok());  // namespace loadtest
  api.answer(200, {{"kind", "Status"}, {"status", "Success"}});
  const LaunchResult r = launcher.remove("job_01JDQ3ZK8W5M7X2T4R6Y9B0C1D", "elsewhere");
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.namespace_name, "loadtest");
  EXPECT_EQ(api.seen().back().path,
            "/apis/batch/v1/namespaces/loadtest/jobs/llmcap-agents-job-01jdq3zk8w5m7x2t4r6y9b0c1d");
  // Forgotten after the delete: a later call takes the namespace it is given.
  ASSERT_TRUE(launcher.remove("job_01JDQ3ZK8W5M7X2T4R6Y9B0C1D", "elsewhere").ok());
  EXPECT_EQ(api.seen().back().path.rfind("/apis/batch/v1/namespaces/elsewhere/", 0), 0u);
}

TEST_F(LauncherTest, InClusterConfigFromServiceAccountFolder) {
  write("ca.crt", "-----BEGIN CERTIFICATE-----\n");
  write("namespace", "llmcap\n");
  auto c = in_cluster_config("10.96.0.1", "443", dir_.string());
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->api_url, "https://10.96.0.1:443");
  EXPECT_EQ(c->token_file, (dir_ / "token").string());
  EXPECT_EQ(c->ca_file, (dir_ / "ca.crt").string());
  EXPECT_EQ(c->pod_namespace, "llmcap");
  auto v6 = in_cluster_config("fd00::1", "6443", dir_.string());
  ASSERT_TRUE(v6.ok()) << v6.error();
  EXPECT_EQ(v6->api_url, "https://[fd00::1]:6443");

  auto outside = in_cluster_config("", "", dir_.string());
  EXPECT_FALSE(outside.ok());
  EXPECT_NE(outside.error().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  auto no_token = in_cluster_config("10.96.0.1", "443", (dir_ / "nowhere").string());
  EXPECT_FALSE(no_token.ok());
  EXPECT_NE(no_token.error().find("automountServiceAccountToken"), std::string::npos);
  fs::remove(dir_ / "ca.crt");
  auto no_ca = in_cluster_config("10.96.0.1", "443", dir_.string());
  EXPECT_FALSE(no_ca.ok());
  EXPECT_NE(no_ca.error().find("ca.crt"), std::string::npos);
}

}  // namespace
}  // namespace llmcap::server
