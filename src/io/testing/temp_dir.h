// A fresh temporary directory for one test, removed with everything in it.
#pragma once

#include <stdlib.h>

#include <string>

#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"

namespace flotilla::io::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = "/tmp/flotilla_io_XXXXXX";
    FLOTILLA_CHECK(::mkdtemp(pattern.data()) != nullptr, Unavailable, "mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() { RemoveAll(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace flotilla::io::testing
