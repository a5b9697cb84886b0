// TLS for the parameter servers and the store, with throw-away certificates
// made here by `openssl`: wide_and_deep with 2 servers and 2 workers runs
// under `flotilla launch --tls_cert --tls_key --tls_ca`, and a server or store
// with TLS refuses plaintext clients and clients whose certificate its CA did
// not sign.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <iostream>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/error.h"
#include "flotilla/core/tensor.h"
#include "flotilla/ps/client.h"
#include "flotilla/ps/heter_service.h"
#include "flotilla/ps/server.h"
#include "flotilla/ps/update_rule.h"
#include "flotilla/trace/standard_metrics.h"
#include "launch_test_util.h"
#include "ps/ps.grpc.pb.h"

namespace flotilla {
namespace {

using launch_test::Bin;
using launch_test::Child;
using launch_test::TempDir;
using namespace std::chrono_literals;

// Runs openssl with `args` in `dir`; fails the test when it fails.
void OpenSsl(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), "/usr/bin/openssl");
  Child c(args, dir.path());
  ASSERT_EQ(c.WaitCode(60s), 0) << "openssl " << args[1] << ": " << c.Stderr();
}

// A CA and one certificate it signed for 127.0.0.1 and localhost, good for
// serving and for client authentication (every process of a job uses it).
struct Pki {
  std::string ca, cert, key;
};

Pki MakePki(const TempDir& dir, const std::string& name) {
  const std::string p = dir / name;
  const std::vector<std::string> ec = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                       "-nodes"};
  std::vector<std::string> ca = {"req", "-x509", "-days", "1", "-subj", "/CN=" + name + " test CA",
                                 "-keyout", p + "-ca.key", "-out", p + "-ca.pem"};
  ca.insert(ca.begin() + 2, ec.begin(), ec.end());
  OpenSsl(dir, ca);
  std::vector<std::string> csr = {"req", "-subj", "/CN=localhost", "-keyout", p + ".key",
                                  "-out", p + ".csr"};
  csr.insert(csr.begin() + 1, ec.begin(), ec.end());
  OpenSsl(dir, csr);
  {
    std::ofstream ext(p + ".ext");
    ext << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
           "extendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n";
  }
  OpenSsl(dir, {"x509", "-req", "-days", "1", "-in", p + ".csr", "-CA", p + "-ca.pem", "-CAkey",
                p + "-ca.key", "-CAcreateserial", "-extfile", p + ".ext", "-out", p + ".pem"});
  return {p + "-ca.pem", p + ".pem", p + ".key"};
}

TlsFiles Files(const Pki& pki) { return {pki.cert, pki.key, pki.ca}; }

// A server of one dense table "b" (3 floats) with TLS, on a free loopback port.
std::unique_ptr<ps::PsServer> TlsServer(const Pki& pki) {
  ps::PsServerOptions o;
  o.endpoint = "127.0.0.1:0";
  o.mode = ps::PsMode::kAsync;
  o.tls = Files(pki);
  auto server = std::make_unique<ps::PsServer>(o);
  ps::DenseTableConfig b;
  b.name = "b";
  b.numel = 3;
  b.rule = ps::MakeUpdateRule(ps::UpdateRuleConfig::Sgd(0.1f));
  server->AddDenseTable(std::move(b));
  server->Start();
  return server;
}

// What a pull of "b" through a client with `tls` says: "" when it worked.
std::string Pull(const ps::PsServer& server, const TlsFiles& tls) {
  ps::PsClientOptions o;
  o.tls = tls;
  o.retry_timeout = 2s;
  o.rpc_timeout = 2s;
  Tensor b(DType::kFloat32, {3});
  try {
    ps::PsClient({server.endpoint()}, 0, 1, o).PullDense("b", &b);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(PsTls, ATlsServerRefusesPlaintextAndForeignClients) {
  TempDir dir;
  const Pki job = MakePki(dir, "job");
  const Pki stranger = MakePki(dir, "stranger");
  auto server = TlsServer(job);

  EXPECT_EQ(Pull(*server, Files(job)), "") << "a client with the job's certificate";

  const std::string plaintext = Pull(*server, {});
  EXPECT_NE(plaintext.find("parameter server 0 at " + server->endpoint() + " is unreachable"),
            std::string::npos) << plaintext;
  EXPECT_NE(plaintext.find("this client is plaintext: a server that serves TLS refuses it"),
            std::string::npos) << plaintext;
  std::cout << "plaintext client: " << plaintext << std::endl;

  // A bare gRPC client without TLS gets no answer from the service at all.
  auto stub = ps::rpc::PsService::NewStub(
      grpc::CreateChannel(server->endpoint(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 2s);
  ps::rpc::EchoMessage in, out;
  const grpc::Status status = stub->Echo(&ctx, in, &out);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();

  // Mutual TLS: a certificate of another CA is refused, and so is none.
  const std::string foreign = Pull(*server, {stranger.cert, stranger.key, job.ca});
  EXPECT_NE(foreign.find("is unreachable"), std::string::npos) << foreign;
  const std::string anonymous = Pull(*server, {"", "", job.ca});
  EXPECT_NE(anonymous.find("is unreachable"), std::string::npos) << anonymous;
  // A server whose certificate the client's CA did not sign is not trusted.
  const std::string untrusted = Pull(*server, {job.cert, job.key, stranger.ca});
  EXPECT_NE(untrusted.find("this client uses TLS"), std::string::npos) << untrusted;
}

// The heter workers' service takes the same TLS files.
TEST(PsTls, AHeterWorkerWithTlsServesTlsClientsOnly) {
  TempDir dir;
  const Pki job = MakePki(dir, "job");
  auto echo = [](int, const ps::NamedTensors& in, const std::vector<std::string>&) { return in; };
  ps::HeterServer server({.endpoint = "127.0.0.1:0", .token = "s3cret", .tls = Files(job)}, echo);
  server.Start();
  const std::string endpoint = "127.0.0.1:" + std::to_string(server.port());
  const ps::NamedTensors batch = {{"x", Tensor::FromVector<float>({1, 2}, {1, 2})}};
  ps::HeterClient good(endpoint, 0, {.token = "s3cret", .tls = Files(job), .timeout = 10s});
  EXPECT_EQ(good.Run(0, batch).get().at(0).second.data<float>()[1], 2.0f);
  ps::HeterClient plaintext(endpoint, 0, {.token = "s3cret", .timeout = 2s});
  EXPECT_THROW(plaintext.Run(1, batch).get(), Error);
  EXPECT_EQ(server.batches(), 1);
}

TEST(PsTls, WideAndDeepTwoServersTwoWorkersRunsOverTls) {
  TempDir dir;
  const Pki job = MakePki(dir, "job");
  Child launch({Bin("flotilla"), "launch", "--server_num", "2", "--worker_num", "2", "--log_dir",
                dir / "log", "--tls_cert", job.cert, "--tls_key", job.key, "--tls_ca", job.ca,
                Bin("wide_and_deep"), "--mode", "sync", "--train_samples", "20000",
                "--test_samples", "2000", "--hidden_size", "32"},
               dir.path());
  ASSERT_EQ(launch.WaitCode(240s), 0) << launch.Stderr();
  for (int s = 0; s < 2; ++s) {
    const std::string log = launch_test::ReadText(dir / ("log/serverlog." + std::to_string(s)));
    EXPECT_NE(log.find("(mutual TLS)"), std::string::npos) << "server " << s << ":\n" << log;
  }
  const std::string worker = launch_test::ReadText(dir / "log/workerlog.0");
  const size_t at = worker.rfind("{\"");
  ASSERT_NE(at, std::string::npos) << worker;
  const auto result = nlohmann::json::parse(worker.substr(at, worker.find('\n', at) - at));
  EXPECT_GT(result["auc"].get<double>(), 0.9 * result["bayes_auc"].get<double>()) << result.dump();
  std::cout << result.dump() << std::endl;
}

// What connecting to the store at `address` with `tls` says: "" when it worked.
std::string ConnectStore(const std::string& address, const TlsFiles& tls) {
  comm::TCPStoreOptions o;
  o.token = "the-job-secret-0123456789abcdef";
  o.tls = tls;
  o.connect_timeout = 5s;
  try {
    comm::ConnectStore(address, o)->setString("k", "v");
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(StoreTls, AStoreWithTlsServesTlsClientsAndRefusesTheOthers) {
  TempDir dir;
  const Pki job = MakePki(dir, "job");
  const Pki stranger = MakePki(dir, "stranger");
  comm::TCPStoreServerOptions options;
  options.token = "the-job-secret-0123456789abcdef";
  options.tls = Files(job);
  auto server = comm::TCPStoreServer::Start("127.0.0.1", 0, options);
  const std::string address = server->address();
  EXPECT_EQ(ConnectStore(address, Files(job)), "");
  // Refusals of plaintext clients and failed handshakes, by their reasons.
  auto refusals = [] {
    return trace::AuthRefusals("store", "plaintext_client") +
           trace::AuthRefusals("store", "tls_handshake");
  };
  const double before = refusals();

  const std::string plaintext = ConnectStore(address, {});
  EXPECT_NE(plaintext.find("store at " + address + " refused the connection: the store at " +
                           address + " serves TLS only: set FLOTILLA_TLS_CA"),
            std::string::npos) << plaintext;
  // Mutual TLS: another CA's certificate, or none, is refused.
  const std::string foreign = ConnectStore(address, {stranger.cert, stranger.key, job.ca});
  EXPECT_NE(foreign.find("store at " + address + " refused the connection: TLS"),
            std::string::npos) << foreign;
  const std::string anonymous = ConnectStore(address, {"", "", job.ca});
  EXPECT_NE(anonymous.find("refused the connection: TLS"), std::string::npos) << anonymous;
  EXPECT_GE(refusals(), before + 3) << "every refusal is counted";
  EXPECT_EQ(server->refused(), static_cast<int64_t>(refusals() - before));

  // The client checks the store: a certificate its CA did not sign is not trusted.
  const std::string untrusted = ConnectStore(address, {job.cert, job.key, stranger.ca});
  EXPECT_NE(untrusted.find("TLS handshake with the store at " + address + " failed"),
            std::string::npos) << untrusted;
  EXPECT_NE(untrusted.find("certificate"), std::string::npos) << untrusted;
  // A client with TLS does not talk to a store without it.
  auto plain = comm::TCPStoreServer::Start("127.0.0.1", 0, options.token);
  const std::string downgraded = ConnectStore(plain->address(), Files(job));
  EXPECT_NE(downgraded.find("TLS handshake with the store at " + plain->address() + " failed"),
            std::string::npos) << downgraded;

  // Large values go through the TLS session's partial writes intact.
  comm::TCPStoreOptions o;
  o.token = options.token;
  o.tls = Files(job);
  auto store = comm::ConnectStore(address, o);
  comm::Bytes big(4 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 13);
  store->set("big", big);
  EXPECT_EQ(comm::ConnectStore(address, o)->get("big"), big);
}

// `flotilla launch --tls_*` serves the job's store over TLS: its processes
// meet there, and a plaintext client is told and refused.
TEST(StoreTls, ALaunchedJobsStoreServesTlsOnly) {
  TempDir dir;
  const Pki job = MakePki(dir, "job");
  Child launch({Bin("flotilla"), "launch", "--nproc_per_node", "2", "--log_dir", dir / "log",
                "--tls_cert", job.cert, "--tls_key", job.key, "--tls_ca", job.ca,
                launch_test::ProbeBin(), "--out", dir.path(), "--store_barrier", "--sleep", "30"},
               dir.path());
  ASSERT_TRUE(launch_test::WaitForFiles(dir.path(), "barrier.", 2, 60s)) << launch.Stderr();
  EXPECT_EQ(launch_test::ReadText(dir / "barrier.0"), "ok");
  EXPECT_EQ(launch_test::ReadText(dir / "barrier.1"), "ok");
  const auto record = launch_test::ReadJson(dir / "env.0.json");
  EXPECT_EQ(record["env"]["FLOTILLA_TLS_CA"], job.ca);
  const std::string master = record["env"]["PADDLE_MASTER"];
  const std::string plaintext = ConnectStore(master, {});
  EXPECT_NE(plaintext.find("serves TLS only"), std::string::npos) << plaintext;
  std::cout << "plaintext client: " << plaintext << std::endl;
  launch.Kill(SIGTERM);
  EXPECT_NE(launch.WaitCode(30s), -1);
  EXPECT_NE(launch.Stderr().find("refused the client at 127.0.0.1:"), std::string::npos)
      << launch.Stderr();
}

TEST(PsTls, LaunchChecksTheFilesAndNamesTheFlag) {
  TempDir dir;
  const Pki job = MakePki(dir, "job");
  auto run = [&](std::vector<std::string> flags) {
    std::vector<std::string> argv = {Bin("flotilla"), "launch", "--server_num", "1",
                                     "--worker_num", "1", "--log_dir", dir / "log"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back(Bin("wide_and_deep"));
    Child launch(argv, dir.path());
    EXPECT_NE(launch.WaitCode(60s), 0);
    return launch.Stderr();
  };
  const std::string alone = run({"--tls_cert", job.cert});
  EXPECT_NE(alone.find("--tls_cert and --tls_key go together"), std::string::npos) << alone;
  const std::string missing = run({"--tls_cert", job.cert, "--tls_key", dir / "nope.key"});
  EXPECT_NE(missing.find("--tls_key='" + dir / "nope.key" + "': cannot read the TLS file"),
            std::string::npos) << missing;
  const std::string not_pem = run({"--tls_cert", job.cert, "--tls_key", job.key, "--tls_ca",
                                   dir / "job.ext"});
  EXPECT_NE(not_pem.find("is not a PEM file"), std::string::npos) << not_pem;
}

}  // namespace
}  // namespace flotilla
