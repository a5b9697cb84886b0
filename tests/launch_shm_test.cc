// Shared-memory segments never outlive their job: a rank killed while
// setting one up leaves nothing in /dev/shm once the launcher exits, and a
// launcher removes the segments of jobs whose owner is gone, keeping live
// ones.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "launch_test_util.h"

namespace flotilla::launch_test {
namespace {

using std::chrono::seconds;
namespace fs = std::filesystem;

const std::string kShmDir = "/dev/shm";

std::vector<std::string> Launch(const TempDir& dir, const std::vector<std::string>& probe_args) {
  std::vector<std::string> argv = {FlotillaBin(),      "launch", "--quiet", "--log_dir",
                                   dir / "log", "--nproc_per_node", "2", "--grace_period", "2",
                                   ProbeBin(), "--out", dir.path()};
  argv.insert(argv.end(), probe_args.begin(), probe_args.end());
  return argv;
}

// Start ticks of /proc/self/stat (field 22), as the launcher reads them.
std::string StartTicks(pid_t pid) {
  std::string line = ReadText("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) rest >> field;
  return field;
}

// Rank 0 creates the job's segment and waits for rank 1 to map it; rank 1
// fails instead, so the launcher stops rank 0 in the middle of setup (by
// SIGTERM, which it does not catch: nothing of its own cleans up).
TEST(LaunchShm, SegmentOfARankKilledDuringSetupIsRemoved) {
  TempDir dir;
  Child launcher(Launch(dir, {"--shm_setup", "go@0", "--shm_created", "go@1", "--exit", "3@1"}),
                 dir.path());
  EXPECT_EQ(launcher.WaitCode(seconds(60)), 3) << launcher.Stderr();
  const std::string name = ReadText(dir / "shm_name");
  ASSERT_FALSE(name.empty()) << "rank 0 never created its segment: " << launcher.Stderr();
  EXPECT_FALSE(fs::exists(kShmDir + name)) << name << " outlived the job";
  EXPECT_NO_PROBES_LEFT(dir.path());
}

TEST(LaunchShm, SegmentsOfDeadJobsAreRemovedLiveOnesKept) {
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const std::string me = std::to_string(getpid());
  const std::string tag = "t" + me;
  const std::string stale = kShmDir + "/flotilla." + tag + "." + std::to_string(gone) +
                            ".12345." + std::to_string(gone) + ".0000000000000001";
  const std::string alive = kShmDir + "/flotilla." + tag + "." + me + "." + StartTicks(getpid()) +
                            "." + me + ".0000000000000002";
  const std::string reused = kShmDir + "/flotilla." + tag + "." + me + ".1." + me +
                             ".0000000000000003";  // our pid, another start time
  for (const auto& f : {stale, alive, reused}) std::ofstream(f) << "x";
  TempDir dir;
  Child launcher(Launch(dir, {"--exit", "0"}), dir.path());
  EXPECT_EQ(launcher.WaitCode(seconds(60)), 0) << launcher.Stderr();
  EXPECT_FALSE(fs::exists(stale)) << "a segment of a dead owner stayed";
  EXPECT_FALSE(fs::exists(reused)) << "a segment of a reused pid stayed";
  EXPECT_TRUE(fs::exists(alive)) << "a live owner's segment was removed";
  for (const auto& f : {stale, alive, reused}) fs::remove(f);
  EXPECT_NO_PROBES_LEFT(dir.path());
}

}  // namespace
}  // namespace flotilla::launch_test
