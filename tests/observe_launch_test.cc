// The launcher's console and log options (--tee, --log_prefix, --log_level)
// and what every process it starts gets for observability.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "launch_test_util.h"

namespace flotilla::launch_test {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(ObserveLaunch, TeeAllPrefixesEveryLineWithItsRank) {
  TempDir dir;
  Child c({FlotillaBin(), "launch", "--log_dir", dir / "log", "--nproc_per_node", "2",
           "--tee", "all", ProbeBin(), "--out", dir.path(), "--print", "3"},
          dir.path());
  ASSERT_EQ(c.WaitCode(60s), 0) << c.Stderr();
  const std::regex line("\\[rank ([01])\\] (line \\d of|probe) ([01]).*");
  int seen[2] = {0, 0};
  for (const std::string& l : Lines(c.Stdout())) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << "unprefixed or mixed line: '" << l << "'";
    EXPECT_EQ(m[1], m[3]) << l;
    if (m[2] != "probe") ++seen[std::stoi(m[1])];
  }
  EXPECT_EQ(seen[0], 3);
  EXPECT_EQ(seen[1], 3);
  // The logs keep the raw output.
  EXPECT_NE(ReadText(dir / "log/workerlog.1").find("\nline 1 of 1\n"), std::string::npos);
  EXPECT_NO_PROBES_LEFT(dir.path());
}

TEST(ObserveLaunch, TeeSelectsRanksAndThePrefixCanBeForced) {
  TempDir dir;
  Child c({FlotillaBin(), "launch", "--log_dir", dir / "log", "--nproc_per_node", "2",
           "--tee", "1", "--log_prefix", "always", ProbeBin(), "--out", dir.path(), "--print",
           "2"},
          dir.path());
  ASSERT_EQ(c.WaitCode(60s), 0) << c.Stderr();
  EXPECT_EQ(std::regex_replace(c.Stdout(), std::regex("pid \\d+"), "pid P"),
            "[rank 1] probe 1 pid P started\n[rank 1] line 0 of 1\n[rank 1] line 1 of 1\n");
  EXPECT_NO_PROBES_LEFT(dir.path());
}

TEST(ObserveLaunch, BadObservabilityOptionsAreNamed) {
  TempDir dir;
  for (const auto& [option, value] : std::vector<std::pair<std::string, std::string>>{
           {"--log_prefix", "sometimes"}, {"--log_level", "loud"}, {"--timeline_steps", "20-10"},
           {"--dashboard", "host:port"}}) {
    Child c({FlotillaBin(), "launch", "--quiet", "--log_dir", dir / "log", option, value,
             ProbeBin(), "--out", dir.path()},
            dir.path());
    EXPECT_NE(c.WaitCode(30s), 0) << option;
    EXPECT_NE(c.Stderr().find(option), std::string::npos) << option << ": " << c.Stderr();
  }
  EXPECT_NO_PROBES_LEFT(dir.path());
}

TEST(ObserveLaunch, EveryProcessGetsItsLabelDumpDirAndLogLevel) {
  TempDir dir;
  Child c({FlotillaBin(), "launch", "--quiet", "--log_dir", dir / "log", "--nproc_per_node", "2",
           "--log_level", "debug", "--stall_timeout", "7.5", "--timeline", dir / "job.json",
           "--timeline_steps", "3-4", ProbeBin(), "--out", dir.path()},
          dir.path());
  ASSERT_EQ(c.WaitCode(60s), 0) << c.Stderr();
  const auto env = ProbeEnv(dir.path(), "0");
  EXPECT_EQ(env["FLOTILLA_TRACE_LABEL"], "rank 0");
  EXPECT_EQ(env["FLOTILLA_LOG_LEVEL"], "debug");
  EXPECT_EQ(env["FLOTILLA_STALL_TIMEOUT"], "7.5");
  EXPECT_EQ(env["FLOTILLA_TIMELINE_STEPS"], "3-4");
  EXPECT_NE(env["FLOTILLA_TIMELINE"].get<std::string>().find("/timeline/rank0.json"),
            std::string::npos);
  EXPECT_NE(env["FLOTILLA_FLIGHT_DIR"].get<std::string>().find("/log/flight"), std::string::npos);
  // The probe traces nothing, so there is no timeline to merge; the launcher says so.
  EXPECT_NE(c.Stderr().find("timeline"), std::string::npos) << c.Stderr();
  EXPECT_NO_PROBES_LEFT(dir.path());
}

}  // namespace
}  // namespace flotilla::launch_test
