// The main of a fuzz target in the normal build: runs LLVMFuzzerTestOneInput
// once on every file named on the command line and every file of every
// directory named there (in name order), so seed corpora and crash inputs
// replay as ordinary tests. A directory that does not exist is skipped (a
// target without crashes has no crashes/ directory). Exits 0 after the last
// input; an input that crashes the target ends the process as it would under
// libFuzzer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> InputsOf(const fs::path& arg) {
  std::vector<fs::path> out;
  if (fs::is_directory(arg)) {
    for (const auto& e : fs::directory_iterator(arg)) {
      if (e.is_regular_file()) out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
  } else if (fs::exists(arg)) {
    out.push_back(arg);
  }
  return out;
}

void Replay(const fs::path& input) {
  std::ifstream in(input, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replay %s (%zu bytes)\n", input.c_str(), bytes.size());
  // A copy of exactly the input's size, so reads past the end are caught by
  // the sanitizers of builds that have them.
  std::vector<uint8_t> data(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(data.data(), data.size());
}

}  // namespace

int main(int argc, char** argv) {
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    for (const auto& input : InputsOf(argv[i])) {
      Replay(input);
      ++count;
    }
  }
  std::fprintf(stderr, "replayed %zu inputs\n", count);
  if (count == 0) {
    std::fprintf(stderr, "no inputs: expected corpus files in the directories named\n");
    return 1;
  }
  return 0;
}
