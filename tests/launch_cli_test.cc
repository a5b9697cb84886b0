// `flotilla launch` end to end: options (seed 002 names, seed 001 legacy
// names, environment variables), mode selection, the environment contract
// each child receives (recorded by the probe as JSON), endpoints.log and the
// per-rank logs.
#include <gtest/gtest.h>

#include "launch_test_util.h"

namespace flotilla::launch_test {
namespace {

using std::chrono::seconds;

struct LaunchRun {
  TempDir dir;
  std::string log_dir = dir / "log";
  int code = -1;
  std::string out, err;

  // Runs `flotilla <sub> --log_dir D/log <options> probe --out D <probe_args>`.
  void Launch(const std::vector<std::string>& options, const std::vector<std::string>& probe_args = {},
              const std::vector<std::string>& env = {}, const std::string& sub = "launch") {
    std::vector<std::string> argv = {FlotillaBin(), sub, "--log_dir", log_dir, "--quiet"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(ProbeBin());
    argv.push_back("--out");
    argv.push_back(dir.path());
    argv.insert(argv.end(), probe_args.begin(), probe_args.end());
    Child launcher(argv, dir.path(), env);
    code = launcher.WaitCode(seconds(60));
    out = launcher.Stdout();
    err = launcher.Stderr();
    EXPECT_NO_PROBES_LEFT(dir.path());
  }
  nlohmann::json Env(const std::string& tag) { return ProbeEnv(dir.path(), tag); }
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

TEST(LaunchCli, HelpListsEveryOption) {
  TempDir dir;
  Child c({FlotillaBin(), "launch", "--help"}, dir.path());
  ASSERT_EQ(c.WaitCode(seconds(10)), 0);
  const std::string help = c.Stdout();
  for (const char* option :
       {"--log_dir", "--run_mode", "--gpus", "--devices", "--nproc_per_node", "--ips", "--host",
        "--servers", "--workers", "--server_num", "--worker_num", "--heter_workers",
        "--http_port", "--elastic_server", "--job_id", "--np", "--scale", "--force",
        "--cluster_node_ips", "--node_ip", "--started_port", "--selected_gpus",
        "--use_paddlecloud", "--grace_period", "PADDLE_NNODES", "PADDLE_LOG_DIR"}) {
    EXPECT_NE(help.find(option), std::string::npos) << option << " missing from --help";
  }
}

TEST(LaunchCli, CollectiveEnvironmentContract) {
  LaunchRun r;
  r.Launch({"--devices", "3,5,7"}, {"--bind", "--store_barrier"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> endpoints;
  for (int rank = 0; rank < 3; ++rank) {
    auto env = r.Env(std::to_string(rank));
    EXPECT_EQ(env["PADDLE_TRAINER_ID"], std::to_string(rank));
    EXPECT_EQ(env["PADDLE_TRAINERS_NUM"], "3");
    EXPECT_EQ(env["PADDLE_RANK_IN_NODE"], std::to_string(rank));
    EXPECT_EQ(env["FLAGS_selected_gpus"], std::to_string(3 + 2 * rank));
    EXPECT_EQ(env["PADDLE_LOCAL_DEVICE_IDS"], std::to_string(3 + 2 * rank));
    EXPECT_EQ(env["PADDLE_NNODES"], "1");
    EXPECT_EQ(env["PADDLE_LOCAL_SIZE"], "3");
    EXPECT_EQ(env.count("TRAINING_ROLE"), 0u);
    endpoints = Split(env["PADDLE_TRAINER_ENDPOINTS"]);
    ASSERT_EQ(endpoints.size(), 3u);
    EXPECT_EQ(env["PADDLE_CURRENT_ENDPOINT"], endpoints[rank]);
    EXPECT_EQ(env["PADDLE_MASTER"].get<std::string>().rfind("127.0.0.1:", 0), 0u);
    // The child could take over its reserved port and meet the others in the store.
    auto record = ReadJson(r.dir / ("env." + std::to_string(rank) + ".json"));
    EXPECT_EQ(record["bind"], "ok");
    EXPECT_EQ(ReadText(r.dir / ("barrier." + std::to_string(rank))), "ok");
  }
  EXPECT_EQ(ReadText(r.log_dir + "/endpoints.log"), "PADDLE_TRAINER_ENDPOINTS:\n" + endpoints[0] +
                                                       "\n" + endpoints[1] + "\n" + endpoints[2] + "\n");
  const std::string log = ReadText(r.log_dir + "/workerlog.2");
  EXPECT_EQ(log.rfind("===== ", 0), 0u) << log;
  EXPECT_NE(log.find("probe 2 pid"), std::string::npos) << log;
}

// A program that binds its endpoint without SO_REUSEADDR cannot take over a
// held port; --release_ports lets it.
TEST(LaunchCli, ReleasePortsForPlainBinds) {
  LaunchRun held;
  held.Launch({"--nproc_per_node", "1"}, {"--bind_plain"});
  ASSERT_EQ(held.code, 0) << held.err;
  EXPECT_NE(held.Env("0").dump(), "");
  EXPECT_EQ(ReadJson(held.dir / "env.0.json")["bind"], "bind: Address already in use");
  LaunchRun released;
  released.Launch({"--nproc_per_node", "1", "--release_ports"}, {"--bind_plain"});
  ASSERT_EQ(released.code, 0) << released.err;
  EXPECT_EQ(ReadJson(released.dir / "env.0.json")["bind"], "ok");
}

TEST(LaunchCli, LegacyOptionNames) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    LaunchRun r;
    const int port = FreePort();
    r.Launch({"--selected_gpus=0,1", "--cluster_node_ips=127.0.0.1", "--node_ip=127.0.0.1",
              "--started_port=" + std::to_string(port)});
    if (r.code == 2 && r.err.find("cannot reserve port") != std::string::npos) continue;
    ASSERT_EQ(r.code, 0) << r.err;
    auto env = r.Env("1");
    EXPECT_EQ(env["PADDLE_TRAINER_ENDPOINTS"],
              "127.0.0.1:" + std::to_string(port) + ",127.0.0.1:" + std::to_string(port + 1));
    EXPECT_EQ(env["FLAGS_selected_gpus"], "1");
    return;
  }
  FAIL() << "no two consecutive free ports found in 3 attempts";
}

// Seed 001's PaddleCloud mode: the platform names the nodes, this node and
// the first port.
TEST(LaunchCli, PaddleCloudEnvironment) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    LaunchRun r;
    const int port = FreePort();
    r.Launch({"--use_paddlecloud", "--selected_gpus", "0,1"}, {},
             {"PADDLE_TRAINERS=127.0.0.1", "POD_IP=127.0.0.1", "PADDLE_PORT=" + std::to_string(port)});
    if (r.code == 2 && r.err.find("cannot reserve port") != std::string::npos) continue;
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.Env("0")["PADDLE_CURRENT_ENDPOINT"], "127.0.0.1:" + std::to_string(port));
    EXPECT_EQ(r.Env("1")["PADDLE_CURRENT_ENDPOINT"], "127.0.0.1:" + std::to_string(port + 1));
    EXPECT_EQ(r.Env("1")["PADDLE_TRAINERS"], "127.0.0.1") << "the platform's variables stay";
    return;
  }
  FAIL() << "no two consecutive free ports found in 3 attempts";
}

TEST(LaunchCli, MasterWithOneNode) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    LaunchRun r;
    const std::string master = "127.0.0.1:" + std::to_string(FreePort());
    r.Launch({"--master", master, "--nnodes", "1", "--nproc_per_node", "2"}, {"--store_barrier"});
    if (r.code == 2 && r.err.find("cannot host the rendezvous store") != std::string::npos) continue;
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.Env("1")["PADDLE_MASTER"], master);
    EXPECT_EQ(ReadText(r.dir / "barrier.1"), "ok");
    return;
  }
  FAIL() << "no free port for the master in 3 attempts";
}

TEST(LaunchCli, OptionsFromEnvironment) {
  LaunchRun r;
  r.Launch({}, {}, {"PADDLE_NPROC_PER_NODE=3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Env("2")["PADDLE_TRAINERS_NUM"], "3");
  EXPECT_EQ(r.Env("2")["FLAGS_selected_gpus"], "2");

  LaunchRun bad;
  bad.Launch({}, {}, {"PADDLE_NNODES=2"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("PADDLE_NNODES=2"), std::string::npos) << bad.err;
}

TEST(LaunchCli, PsModeSelectedByPsOptions) {
  LaunchRun r;
  r.Launch({"--server_num", "2", "--worker_num", "3"}, {"--store_barrier"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string servers;
  for (int i = 0; i < 2; ++i) {
    auto env = r.Env("s" + std::to_string(i));
    EXPECT_EQ(env["TRAINING_ROLE"], "PSERVER");
    EXPECT_EQ(env["PADDLE_PSERVER_ID"], std::to_string(i));
    EXPECT_EQ(env["POD_IP"], "127.0.0.1");
    auto list = Split(env["PADDLE_PSERVERS_IP_PORT_LIST"]);
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[i], "127.0.0.1:" + env["PADDLE_PORT"].get<std::string>());
    EXPECT_EQ(env["PADDLE_TRAINERS_NUM"], "3");
    EXPECT_EQ(env.count("PADDLE_TRAINER_ID"), 0u);
    servers = env["PADDLE_PSERVERS_IP_PORT_LIST"];
  }
  for (int i = 0; i < 3; ++i) {
    auto env = r.Env("w" + std::to_string(i));
    EXPECT_EQ(env["TRAINING_ROLE"], "TRAINER");
    EXPECT_EQ(env["PADDLE_TRAINER_ID"], std::to_string(i));
    EXPECT_EQ(env["PADDLE_PSERVERS_IP_PORT_LIST"], servers);
    EXPECT_EQ(Split(env["PADDLE_TRAINER_ENDPOINTS"]).size(), 3u);
    EXPECT_EQ(env["PADDLE_TRAINING_ROLE"], "TRAINER");  // seed 000's names too
  }
  EXPECT_NE(ReadText(r.log_dir + "/serverlog.1").find("probe s1"), std::string::npos);
  EXPECT_NE(ReadText(r.log_dir + "/workerlog.2").find("probe w2"), std::string::npos);
}

TEST(LaunchCli, LaunchPsAndExplicitServerLists) {
  LaunchRun defaults;
  defaults.Launch({}, {"--store_barrier"}, {}, "launch_ps");  // seed 003: 2 servers, 2 workers
  ASSERT_EQ(defaults.code, 0) << defaults.err;
  EXPECT_EQ(defaults.Env("w1")["PADDLE_TRAINERS_NUM"], "2");
  EXPECT_EQ(Split(defaults.Env("s0")["PADDLE_PSERVERS_IP_PORT_LIST"]).size(), 2u);

  LaunchRun lists;
  lists.Launch({"--servers", "127.0.0.1", "--workers", "127.0.0.1,127.0.0.1"}, {"--store_barrier"});
  ASSERT_EQ(lists.code, 0) << lists.err;
  EXPECT_EQ(lists.Env("w1")["PADDLE_TRAINER_ID"], "1");
  EXPECT_EQ(Split(lists.Env("s0")["PADDLE_TRAINER_ENDPOINTS"]).size(), 2u);
}

TEST(LaunchCli, UnsupportedModesSayWhy) {
  LaunchRun elastic;
  elastic.Launch({"--np", "2"});  // elastic options without --elastic_server
  EXPECT_EQ(elastic.code, 2);
  EXPECT_NE(elastic.err.find("need --elastic_server"), std::string::npos) << elastic.err;
  LaunchRun heter;
  heter.Launch({"--run_mode", "ps-heter"});
  EXPECT_EQ(heter.code, 2);
  EXPECT_NE(heter.err.find("--run_mode ps-heter needs heter workers"), std::string::npos) << heter.err;
  LaunchRun conflict;
  conflict.Launch({"--run_mode", "collective", "--server_num", "1"});
  EXPECT_EQ(conflict.code, 2);
  EXPECT_NE(conflict.err.find("--run_mode collective"), std::string::npos) << conflict.err;
}

TEST(LaunchCli, LogsAreAppendedWithAHeaderPerRun) {
  LaunchRun r;
  r.Launch({"--nproc_per_node", "1"});
  ASSERT_EQ(r.code, 0);
  Child again({FlotillaBin(), "launch", "--quiet", "--log_dir", r.log_dir, ProbeBin()}, r.dir.path());
  ASSERT_EQ(again.WaitCode(seconds(60)), 0);
  const std::string log = ReadText(r.log_dir + "/workerlog.0");
  size_t headers = 0;
  for (size_t at = log.find("===== "); at != std::string::npos; at = log.find("===== ", at + 1)) {
    headers += log.compare(at, 6, "===== ") == 0 && (at == 0 || log[at - 1] == '\n');
  }
  EXPECT_EQ(headers, 2u) << log;
}

TEST(LaunchCli, MissingProgramIsNamed) {
  TempDir dir;
  Child c({FlotillaBin(), "launch", "--quiet", "--log_dir", dir / "log", "no_such_program_xyz"},
          dir.path());
  EXPECT_EQ(c.WaitCode(seconds(30)), 2);
  EXPECT_NE(c.Stderr().find("no_such_program_xyz"), std::string::npos) << c.Stderr();
}

TEST(LaunchCli, ConsoleShowsRankZeroAndTheBanner) {
  TempDir dir;
  Child c({FlotillaBin(), "launch", "--log_dir", dir / "log", "--nproc_per_node", "2", ProbeBin(),
           "--print", "2"}, dir.path());
  ASSERT_EQ(c.WaitCode(seconds(60)), 0);
  EXPECT_NE(c.Stdout().find("line 1 of 0"), std::string::npos) << c.Stdout();
  EXPECT_EQ(c.Stdout().find("of 1"), std::string::npos) << "rank 1 must stay in its log";
  EXPECT_NE(c.Stderr().find("-----------  Configuration Arguments -----------"), std::string::npos);
  EXPECT_NE(c.Stderr().find("PADDLE_TRAINER_ENDPOINTS"), std::string::npos);
}

}  // namespace
}  // namespace flotilla::launch_test
