// Issue 32, finding 1: what the launcher writes into --log_dir must never go
// through a link that another user planted there (as that user, with
// setpriv, when the test runs as root).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "launch_test_util.h"

namespace flotilla::launch_test {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr char kPrecious[] = "precious\n";

class LaunchFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::chmod(d.path().c_str(), 0755), 0);  // another user may reach in
    std::ofstream(d / "victim") << kPrecious;
  }

  // Runs `argv` as user nobody when this test runs as root (the attacker is
  // another local user), else as this user; false when it failed.
  bool AsAnotherUser(const std::vector<std::string>& argv) {
    std::vector<std::string> full = argv;
    if (::geteuid() == 0) {
      full = {"/usr/bin/setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups"};
      full.insert(full.end(), argv.begin(), argv.end());
    } else {
      std::cerr << "not root: the link is planted by this user, not by another one\n";
    }
    Child c(full, d.path());
    return c.WaitCode(Scaled(std::chrono::milliseconds(20000))) == 0;
  }

  // A one-process job writing its log into `log_dir`; its exit code.
  int Launch(const std::string& log_dir) {
    launch_ = std::make_unique<Child>(
        std::vector<std::string>{FlotillaBin(), "launch", "--nproc_per_node", "1", "--log_dir",
                                 log_dir, ProbeBin(), "--print", "3"},
        d.path());
    const int code = launch_->WaitCode(Scaled(std::chrono::milliseconds(60000)));
    std::cerr << "flotilla launch exited " << code << "; its stderr:\n" << launch_->Stderr();
    return code;
  }
  std::string LaunchStderr() const { return launch_->Stderr(); }
  std::string Victim() const { return ReadText(d / "victim"); }

  TempDir d;
  std::unique_ptr<Child> launch_;
};

TEST_F(LaunchFiles, AWorkerLogIsNeverAppendedThroughAPlantedLink) {
  // A shared log directory like /tmp: anyone may add, nobody may replace.
  fs::create_directory(d / "shared");
  ASSERT_EQ(::chmod((d / "shared").c_str(), 01777), 0);
  ASSERT_TRUE(AsAnotherUser({"/bin/ln", "-s", d / "victim", d / "shared/workerlog.0"}));
  Launch(d / "shared");
  EXPECT_EQ(Victim(), kPrecious) << "the job's output went through the link";
  EXPECT_NE(LaunchStderr().find("workerlog.0': it is a symbolic link"), std::string::npos)
      << LaunchStderr();
}

TEST_F(LaunchFiles, ALogDirectoryThatIsALinkIsRefused) {
  fs::create_directory(d / "elsewhere");
  fs::create_directory_symlink(d / "elsewhere", d / "log");
  EXPECT_NE(Launch(d / "log"), 0);
  EXPECT_TRUE(fs::is_empty(d / "elsewhere")) << "written (and cleared) through the link";
  EXPECT_NE(LaunchStderr().find("--log_dir '" + d / "log" + "' is refused: it is a symbolic link"),
            std::string::npos) << LaunchStderr();
}

TEST_F(LaunchFiles, ALogDirectoryEveryoneCanWriteWithoutTheStickyBitIsRefused) {
  fs::create_directory(d / "open");
  ASSERT_EQ(::chmod((d / "open").c_str(), 0777), 0);
  ASSERT_TRUE(AsAnotherUser({"/bin/ln", "-s", d / "victim", d / "open/workerlog.0"}));
  EXPECT_NE(Launch(d / "open"), 0);
  EXPECT_EQ(Victim(), kPrecious) << "the job's output went through the link";
  EXPECT_NE(LaunchStderr().find("writable by every user without the sticky bit"),
            std::string::npos) << LaunchStderr();
}

}  // namespace
}  // namespace flotilla::launch_test
