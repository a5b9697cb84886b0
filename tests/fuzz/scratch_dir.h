// The directory a fuzz target writes its files into: one per process, under
// $FLOTILLA_FUZZ_SCRATCH when set, else /dev/shm when it exists (every input
// writes files; tmpfs keeps fsync cheap), else the system temporary
// directory. Removed at a normal exit (the replay tests); a libFuzzer run
// ends without running exit handlers, so run_fuzzers.sh points
// FLOTILLA_FUZZ_SCRATCH at a root of its own for each run and removes it.
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
    const char* root = ::getenv("FLOTILLA_FUZZ_SCRATCH");
    const fs::path base = root != nullptr && *root != '\0' ? fs::path(root)
                          : fs::is_directory("/dev/shm")    ? fs::path("/dev/shm")
                                                            : fs::temp_directory_path();
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
