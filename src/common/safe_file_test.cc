// Issue 32, finding 1: files in a directory a user names must never be
// written, appended or removed through a link another user planted there.
#include "flotilla/common/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "flotilla/common/error.h"
#include "flotilla/common/file_util.h"

namespace flotilla {
namespace {

namespace fs = std::filesystem;

class SafeFile : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = ::testing::TempDir() + "flotilla_safe_file." + std::to_string(::getpid());
    RemoveAll(base_);
    MakeDirs(base_ + "/dir");
    MakeDirs(base_ + "/elsewhere");
    WriteFileAtomic(victim(), "precious\n");
  }
  void TearDown() override { RemoveAll(base_); }
  std::string dir() const { return base_ + "/dir"; }
  std::string victim() const { return base_ + "/elsewhere/victim"; }
  static std::string Message(const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }

  std::string base_;
};

TEST_F(SafeFile, WriteFileAtomicNeverWritesThroughALinkAtItsTemporaryName) {
  // The temporary name used to be "<path>.tmp.<pid>": predictable.
  const std::string path = dir() + "/job_status.json";
  fs::create_symlink(victim(), path + ".tmp." + std::to_string(::getpid()));
  WriteFileAtomic(path, "{}\n");
  EXPECT_EQ(ReadFile(victim()), "precious\n") << "written through the planted link";
  EXPECT_EQ(ReadFile(path), "{}\n");
}

TEST_F(SafeFile, AWriteReplacesALinkAtTheNameNeverItsTarget) {
  fs::create_symlink(victim(), dir() + "/endpoints.log");
  SafeDir::Open(dir(), "--log_dir").WriteAtomic("endpoints.log", "new\n");
  EXPECT_EQ(ReadFile(victim()), "precious\n");
  EXPECT_FALSE(fs::is_symlink(dir() + "/endpoints.log"));
  EXPECT_EQ(ReadFile(dir() + "/endpoints.log"), "new\n");
}

TEST_F(SafeFile, AnAppendRefusesALinkAtTheName) {
  fs::create_symlink(victim(), dir() + "/workerlog.0");
  const SafeDir d = SafeDir::Open(dir(), "--log_dir");
  const std::string refused = Message([&] { d.OpenFile("workerlog.0", O_WRONLY | O_CREAT | O_APPEND); });
  EXPECT_NE(refused.find("workerlog.0': it is a symbolic link"), std::string::npos) << refused;
  EXPECT_EQ(ReadFile(victim()), "precious\n");
}

TEST_F(SafeFile, ALinkedOrOpenDirectoryIsRefusedSayingWhy) {
  fs::create_symlink(base_ + "/elsewhere", base_ + "/linked");
  const std::string linked = Message([&] { SafeDir::Create(base_ + "/linked", "--log_dir"); });
  EXPECT_NE(linked.find("--log_dir '" + base_ + "/linked' is refused: it is a symbolic link"),
            std::string::npos) << linked;
  ASSERT_EQ(::chmod(dir().c_str(), 0777), 0);
  const std::string open = Message([&] { SafeDir::Open(dir(), "--checkpoint_dir"); });
  EXPECT_NE(open.find("writable by every user without the sticky bit"), std::string::npos) << open;
  EXPECT_THROW(CheckUserDir(dir(), "--log_dir"), InvalidArgument);
  ASSERT_EQ(::chmod(dir().c_str(), 01777), 0);  // like /tmp: others cannot replace our entries
  EXPECT_NO_THROW(SafeDir::Open(dir(), "--log_dir"));
  EXPECT_NO_THROW(CheckUserDir(dir(), "--log_dir"));
  const std::string file = Message([&] { SafeDir::Open(victim(), "model root"); });
  EXPECT_NE(file.find("it is not a directory"), std::string::npos) << file;
}

TEST_F(SafeFile, SubdirectoriesAreCreatedAndLinksAmongThemRefused) {
  const SafeDir d = SafeDir::Open(dir(), "--log_dir");
  const SafeDir flight = d.Subdir("flight", /*create=*/true);
  flight.WriteAtomic("rank0.json", "{}");
  EXPECT_EQ(ReadFile(dir() + "/flight/rank0.json"), "{}");
  fs::create_symlink(base_ + "/elsewhere", dir() + "/metrics");
  EXPECT_THROW(d.Subdir("metrics", /*create=*/true), InvalidArgument);
  EXPECT_THROW(d.Subdir("../elsewhere", false), InvalidArgument);
  EXPECT_THROW(d.Subdir("absent", false), NotFound);
}

TEST_F(SafeFile, RemovingATreeRemovesLinksNeverWhatTheyPointTo) {
  MakeDirs(dir() + "/step-9/sub");
  WriteFileAtomic(dir() + "/step-9/sub/f", "x");
  fs::create_symlink(base_ + "/elsewhere", dir() + "/step-9/sub/out");
  fs::create_symlink(base_ + "/elsewhere", dir() + "/flight");
  const SafeDir d = SafeDir::Open(dir(), "--log_dir");
  EXPECT_TRUE(d.RemoveTree("step-9"));
  EXPECT_TRUE(d.RemoveTree("flight"));
  EXPECT_TRUE(d.RemoveTree("absent"));
  EXPECT_FALSE(d.Exists("step-9"));
  EXPECT_FALSE(d.Exists("flight"));
  EXPECT_EQ(ReadFile(victim()), "precious\n");
}

TEST_F(SafeFile, ReadsRefuseLinksAndOversizedFiles) {
  const SafeDir d = SafeDir::Open(dir(), "--checkpoint_dir");
  d.WriteAtomic("STATE.json", "12345");
  EXPECT_EQ(d.ReadAtMost("STATE.json", 5), "12345");
  EXPECT_THROW(d.ReadAtMost("STATE.json", 4), Corruption);
  EXPECT_THROW(d.ReadAtMost("absent", 4), NotFound);
  fs::create_symlink(victim(), dir() + "/MANIFEST");
  EXPECT_THROW(d.ReadAtMost("MANIFEST", 100), Unavailable);
  EXPECT_EQ(d.List().size(), 2u);
}

}  // namespace
}  // namespace flotilla
