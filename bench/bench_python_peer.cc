// bench_python_peer: the C++ side of bench_python's Python-overhead
// comparison. It runs exactly the program bench_python.py built in Python
// (main.pb and startup.pb, serialized by Program.serialize()) on exactly its
// feed (raw little-endian arrays listed in feed.json), so the only
// difference between the two sides is the language driving Executor::Run.
//
//   bench_python_peer DIR
//
// DIR/feed.json: {"fetch": "loss name", "feeds": [{"name": "x", "dtype":
// "float32", "shape": [64, 32], "file": "x.bin"}, ...]}. The peer runs the
// startup program, then serves commands on stdin, one per line, so that
// bench_python.py can alternate the two sides while both stay warm:
//   run N   runs N training steps; prints one JSON line
//           {"steps":N,"wall_ms":...,"cpu_ms":...,"loss":...}
// End of input ends the peer. One BLAS thread (as the Python side). Errors:
// a message naming the file or command on stderr, exit status 1.
#include <time.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/core/math.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

namespace {

using namespace flotilla;

// Largest feed file accepted: checked against the file's own size before
// anything is allocated.
constexpr int64_t kMaxFeedBytes = int64_t(1) << 31;

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// One feed array: the shape from feed.json, the bytes from its file, whose
// size must be exactly numel * sizeof(dtype).
Tensor LoadFeed(const std::string& dir, const nlohmann::json& spec) {
  const std::string path = dir + "/" + spec.at("file").get<std::string>();
  const DType dtype = ParseDType(spec.at("dtype").get<std::string>());
  Dims dims = spec.at("shape").get<Dims>();
  int64_t numel = 1;
  for (int64_t d : dims) {
    FLOTILLA_CHECK(d >= 0 && (d == 0 || numel <= kMaxFeedBytes / d), InvalidArgument, path,
                   ": shape ", DimsToString(dims), " in feed.json is negative or too large");
    numel *= d;
  }
  const int64_t expected = numel * int64_t(SizeOf(dtype));
  FLOTILLA_CHECK(expected <= kMaxFeedBytes, InvalidArgument, path, ": ", expected,
                 " bytes is more than a feed of this benchmark may hold");
  const auto actual = static_cast<int64_t>(std::filesystem::file_size(path));
  FLOTILLA_CHECK(actual == expected, InvalidArgument, path, " holds ", actual, " bytes; shape ",
                 DimsToString(dims), " of ", DTypeName(dtype), " needs ", expected);
  const std::string bytes = ReadFile(path);
  Tensor t(dtype, dims);
  std::memcpy(t.raw_mutable_data(dtype), bytes.data(), bytes.size());
  return t;
}

class Peer {
 public:
  explicit Peer(const std::string& dir)
      : main_(Program::Parse(ReadFile(dir + "/main.pb"), dir + "/main.pb")),
        startup_(Program::Parse(ReadFile(dir + "/startup.pb"), dir + "/startup.pb")) {
    const auto spec = nlohmann::json::parse(ReadFile(dir + "/feed.json"));
    fetch_ = {spec.at("fetch").get<std::string>()};
    for (const auto& f : spec.at("feeds")) feed_[f.at("name").get<std::string>()] = LoadFeed(dir, f);
    exe_.Run(startup_, {}, {}, &scope_);
  }

  // Runs `steps` training steps; the JSON line bench_python.py reads.
  nlohmann::json Run(int steps) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu0 = ProcessCpuSeconds();
    std::vector<Tensor> out;
    for (int i = 0; i < steps; ++i) out = exe_.Run(main_, feed_, fetch_, &scope_);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return {{"steps", steps},
            {"wall_ms", wall * 1e3},
            {"cpu_ms", (ProcessCpuSeconds() - cpu0) * 1e3},
            {"loss", out.empty() ? 0.0 : double(out[0].data<float>()[0])}};
  }

 private:
  Program main_, startup_;
  FeedMap feed_;
  std::vector<std::string> fetch_;
  Executor exe_;
  Scope scope_;
};

int Serve(Peer& peer) {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    FLOTILLA_CHECK(line.rfind("run ", 0) == 0, InvalidArgument, "bench_python_peer: unknown command '",
                   line, "' (expected 'run N')");
    const int steps = std::stoi(line.substr(4));
    FLOTILLA_CHECK(steps > 0, InvalidArgument, "bench_python_peer: 'run N' needs N > 0, got ", steps);
    std::cout << peer.Run(steps).dump() << std::endl;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: bench_python_peer DIR   (DIR written by bench/bench_python.py)" << std::endl;
    return 2;
  }
  try {
    flotilla::RegisterAllOps();
    flotilla::math::SetBlasThreads(1);
    Peer peer(argv[1]);
    return Serve(peer);
  } catch (const std::exception& e) {
    std::cerr << "bench_python_peer: " << e.what() << std::endl;
    return 1;
  }
}
