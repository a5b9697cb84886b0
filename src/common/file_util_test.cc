#include <gtest/gtest.h>

#include <string>

#include "flotilla/common/error.h"
#include "flotilla/common/file_util.h"

namespace flotilla {
namespace {

TEST(FileUtil, AtomicWriteReplaces) {
  std::string dir = ::testing::TempDir() + "flotilla_file_util";
  MakeDirs(dir);
  std::string path = dir + "/f";
  WriteFileAtomic(path, "one");
  WriteFileAtomic(path, "two");
  EXPECT_EQ(ReadFile(path), "two");
  EXPECT_THROW(ReadFile(dir + "/missing"), NotFound);
  RemoveAll(dir);
}

TEST(FileUtil, RenameDirAtomicReplacesAnOldDirectory) {
  std::string base = ::testing::TempDir() + "flotilla_rename_dir";
  RemoveAll(base);
  MakeDirs(base + "/new");
  MakeDirs(base + "/final");
  WriteFileAtomic(base + "/new/v", "2");
  WriteFileAtomic(base + "/final/v", "1");
  RenameDirAtomic(base + "/new", base + "/final");
  EXPECT_EQ(ReadFile(base + "/final/v"), "2");
  EXPECT_FALSE(FileExists(base + "/new"));
  RenameDirAtomic(base + "/final", base + "/moved");  // target missing: a plain rename
  EXPECT_EQ(ReadFile(base + "/moved/v"), "2");
  RemoveAll(base);
}

}  // namespace
}  // namespace flotilla
