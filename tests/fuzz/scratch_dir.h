// The directory a fuzz target writes its files into: one per process,
// under /dev/shm when it exists (every input writes files; tmpfs keeps
// fsync cheap), else under the system temporary directory; removed at exit.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"

namespace flotilla::fuzz {

inline const std::string& ScratchDir() {
  // On the heap and never freed: the exit handler below runs after every
  // static object registered before it is destroyed.
  static const std::string* dir = [] {
    namespace fs = std::filesystem;
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string pattern = (base / "flotilla_fuzz_XXXXXX").string();
    FLOTILLA_CHECK(::mkdtemp(pattern.data()) != nullptr, Unavailable,
                   "cannot make a scratch directory under ", base.string());
    return new std::string(pattern);
  }();
  static const bool removed_at_exit = std::atexit([] { RemoveAll(*dir); }) == 0;
  (void)removed_at_exit;
  return *dir;
}

}  // namespace flotilla::fuzz
