#include <gtest/gtest.h>
#include <stdlib.h>

#include "flotilla/common/checksum.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/strings.h"

namespace flotilla {
namespace {

TEST(Enforce, MessageNamesContextAndLocation) {
  try {
    int a = 3;
    FLOTILLA_ENFORCE_EQ(a, 4, "shape of 'x'");
    FAIL();
  } catch (const InvalidArgument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("shape of 'x'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("3 vs 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("common_test.cc"), std::string::npos) << msg;
  }
}

TEST(Env, ParsesAndNamesBadValues) {
  setenv("FLOTILLA_T_INT", "12", 1);
  EXPECT_EQ(env::GetInt("FLOTILLA_T_INT", 0), 12);
  setenv("FLOTILLA_T_INT", "two", 1);
  try {
    env::GetInt("FLOTILLA_T_INT", 0);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("FLOTILLA_T_INT"), std::string::npos);
  }
  unsetenv("FLOTILLA_T_MISSING");
  EXPECT_THROW(env::Require("FLOTILLA_T_MISSING"), NotFound);
  setenv("FLOTILLA_T_LIST", "a, b,,c", 1);
  EXPECT_EQ(env::GetList("FLOTILLA_T_LIST"), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(Strings, SplitJoinHostPort) {
  EXPECT_EQ(Split("a,,b", ','), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Split("a,,b", ',', false), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Join({"x", "y"}, ":"), "x:y");
  auto hp = ParseHostPort("127.0.0.1:6170", "endpoint");
  EXPECT_EQ(hp.host, "127.0.0.1");
  EXPECT_EQ(hp.port, 6170);
  EXPECT_THROW(ParseHostPort("nohost", "endpoint"), InvalidArgument);
  EXPECT_THROW(ParseHostPort("h:99999", "endpoint"), InvalidArgument);
}

TEST(Checksum, KnownVector) {
  // CRC-32C of "123456789" is 0xE3069283.
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
}

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

}  // namespace
}  // namespace flotilla

namespace flotilla {
namespace {

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
