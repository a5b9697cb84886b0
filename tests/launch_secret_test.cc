// The job secret end to end: what `flotilla launch` makes and hands to its
// children, what its store refuses, and what processes started without the
// launcher need.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <httplib.h>

#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/error.h"
#include "launch_test_util.h"

namespace flotilla::launch_test {
namespace {

using std::chrono::seconds;

// ctest gives every test a job secret, as a user who exported one would
// have; these tests need the launcher to make its own.
const std::string kNoSecret = "FLOTILLA_JOB_SECRET=";

// Connects to the store at `address` with `token`; "" when accepted, else the error.
std::string TryStore(const std::string& address, const std::string& token) {
  comm::TCPStoreOptions o;
  o.token = token;
  o.connect_timeout = seconds(5);
  try {
    comm::ConnectStore(address, o)->setString("intruder", "was here");
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every file under `dir`, concatenated.
std::string ReadTree(const std::string& dir) {
  std::string all;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) all += ReadAll(e.path().string());
  }
  return all;
}

// The launcher's /metrics, at the address it printed ("metrics on http://...").
std::string LauncherMetrics(const std::string& stderr_text) {
  std::smatch m;
  if (!std::regex_search(stderr_text, m, std::regex(R"(metrics on http://127\.0\.0\.1:(\d+)/)"))) {
    ADD_FAILURE() << "no metrics address in: " << stderr_text;
    return "";
  }
  httplib::Client http("127.0.0.1", std::stoi(m[1]));
  auto reply = http.Get("/metrics");
  if (!reply || reply->status != 200) {
    ADD_FAILURE() << "GET /metrics failed on port " << m[1];
    return "";
  }
  return reply->body;
}

// Finding 1: the store of a job run by `flotilla launch` accepted anyone.
// Now the launcher makes a secret, its children read it from an inherited
// memory file, and a client without it (or with another) is refused.
TEST(LaunchSecret, AJobAloneGetsASecretItsStoreDemandsAndNoLogShows) {
  TempDir d;
  Child launch({FlotillaBin(), "launch", "--nproc_per_node", "2", "--log_dir", d / "log",
                "--timeline", d / "timeline.json", "--metrics_port", "0", ProbeBin(), "--out",
                d.path(), "--store_barrier", "--sleep", "30"},
               d.path(), {kNoSecret});
  ASSERT_TRUE(WaitForFiles(d.path(), "barrier.", 2, seconds(60))) << launch.Stderr();
  EXPECT_EQ(ReadText(d / "barrier.0"), "ok");
  EXPECT_EQ(ReadText(d / "barrier.1"), "ok");
  auto record = ReadJson(d / "env.0.json");
  const std::string master = record["env"]["PADDLE_MASTER"];
  const std::string file = record["env"]["FLOTILLA_JOB_SECRET_FILE"];
  ASSERT_EQ(file.rfind("/proc/self/fd/", 0), 0u) << file;
  // What rank 0 reads there (through its /proc entry: the test is its owner).
  const pid_t rank0 = record["pid"];
  const std::string secret = ReadAll("/proc/" + std::to_string(rank0) + "/fd/" + file.substr(14));
  ASSERT_EQ(secret.size(), 65u) << "64 hex digits and a newline";
  const std::string token = secret.substr(0, 64);
  struct stat st {};
  ASSERT_EQ(stat(("/proc/" + std::to_string(rank0) + "/fd/" + file.substr(14)).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0400u);

  EXPECT_NE(TryStore(master, "").find("refused the token"), std::string::npos);
  EXPECT_NE(TryStore(master, std::string(64, '0')).find("refused the token"), std::string::npos);
  EXPECT_EQ(TryStore(master, token), "");
  // The launcher names each refused client and counts them in its /metrics.
  const std::string metrics = LauncherMetrics(launch.Stderr());
  EXPECT_NE(metrics.find("flotilla_auth_refusals_total{service=\"store\",reason=\"bad_secret\"} 2"), std::string::npos)
      << metrics;
  EXPECT_NE(launch.Stderr().find("(store): refused the client at 127.0.0.1:"), std::string::npos)
      << launch.Stderr();
  // Neither on a command line nor in an environment, a log or endpoints.log.
  for (pid_t pid : {launch.pid(), rank0, static_cast<pid_t>(ReadJson(d / "env.1.json")["pid"])}) {
    EXPECT_EQ(ReadAll("/proc/" + std::to_string(pid) + "/cmdline").find(token), std::string::npos);
    EXPECT_EQ(ReadAll("/proc/" + std::to_string(pid) + "/environ").find(token), std::string::npos);
  }
  launch.Kill(SIGTERM);
  EXPECT_NE(launch.WaitCode(seconds(30)), -1);
  // Nor in the job's timeline (looked at below with every other file).
  EXPECT_TRUE(std::filesystem::exists(d / "timeline.json")) << launch.Stderr();
  EXPECT_EQ(ReadTree(d.path()).find(token), std::string::npos);
  EXPECT_EQ((launch.Stdout() + launch.Stderr()).find(token), std::string::npos);
}

TEST(LaunchSecret, TheNodesOfAJobMustShareOne) {
  TempDir d;
  Child launch({FlotillaBin(), "launch", "--master", "127.0.0.1:" + std::to_string(FreePort()),
                "--nnodes", "2", "--log_dir", d / "log", ProbeBin()},
               d.path(), {kNoSecret});
  EXPECT_NE(launch.WaitCode(seconds(30)), 0);
  const std::string err = launch.Stderr();
  for (const char* part : {"must share a job secret", "FLOTILLA_JOB_SECRET_FILE", "--insecure"}) {
    EXPECT_NE(err.find(part), std::string::npos) << part << " not in: " << err;
  }
}

TEST(LaunchSecret, InsecureIsExplicitAndWarned) {
  TempDir d;
  Child launch({FlotillaBin(), "launch", "--insecure", "--log_dir", d / "log", ProbeBin(), "--out",
                d.path(), "--store_barrier", "--sleep", "30"},
               d.path(), {kNoSecret});
  ASSERT_TRUE(WaitForFiles(d.path(), "barrier.", 1, seconds(60))) << launch.Stderr();
  EXPECT_EQ(ReadText(d / "barrier.0"), "ok");
  auto record = ReadJson(d / "env.0.json");
  EXPECT_EQ(record["env"]["FLOTILLA_INSECURE"], "1");
  EXPECT_EQ(record["env"].count("FLOTILLA_JOB_SECRET_FILE"), 0u);
  EXPECT_EQ(TryStore(record["env"]["PADDLE_MASTER"], ""), "");
  launch.Kill(SIGTERM);
  EXPECT_NE(launch.WaitCode(seconds(30)), -1);
  EXPECT_NE(launch.Stderr().find("--insecure"), std::string::npos) << launch.Stderr();
}

// Processes started without the launcher (torchrun-style variables, rank 0
// hosting the store) need the secret from the environment: without it they
// stop at once naming the variables; with another one than rank 0's, rank 1
// is refused by rank 0's store.
TEST(LaunchSecret, ProcessesStartedByHandReadItFromTheEnvironment) {
  TempDir d;
  const std::string port = std::to_string(FreePort());
  auto rank = [&](int r, const std::string& secret) {
    return Child({Bin("train_with_fleet"), "--steps", "5", "--hidden", "8"}, d.path(),
                 {"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port, "WORLD_SIZE=2",
                  "RANK=" + std::to_string(r), "FLOTILLA_JOB_SECRET=" + secret,
                  "FLOTILLA_RENDEZVOUS_TIMEOUT=10"});
  };
  {
    Child alone = rank(0, "");
    EXPECT_NE(alone.WaitCode(seconds(30)), 0);
    const std::string err = alone.Stderr();
    for (const char* part : {"needs the job secret", "FLOTILLA_JOB_SECRET_FILE", "FLOTILLA_INSECURE=1"}) {
      EXPECT_NE(err.find(part), std::string::npos) << part << " not in: " << err;
    }
  }
  Child r0 = rank(0, "the-secret-of-rank-0-0123456789");
  Child r1 = rank(1, "another-secret-0123456789abcdef");
  EXPECT_NE(r1.WaitCode(seconds(60)), 0);
  EXPECT_NE(r1.Stderr().find("refused the token"), std::string::npos) << r1.Stderr();
  r0.Kill(SIGKILL);
}

}  // namespace
}  // namespace flotilla::launch_test
