// The MultiSlot parser's speed on CTR-shaped lines (issue 28: >= 1 M slots/s
// per core): one label, 13 dense float slots, 26 sparse id slots of 1-4 ids,
// parsed from memory on one thread; then a Dataset loading 4 files of them
// through a pipe command ("cat -" under /bin/sh) on 1 and 2 threads. Prints
// one JSON line per measurement.
//
//   bench_multislot [--records N]
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "flotilla/io/dataset.h"
#include "flotilla/io/multislot.h"

namespace {

using flotilla::io::MultiSlotParser;
using flotilla::io::SlotColumns;
using flotilla::io::SlotSpec;
using flotilla::io::SlotType;

constexpr int kDense = 13;
constexpr int kSparse = 26;

std::vector<SlotSpec> CtrSlots() {
  std::vector<SlotSpec> slots{{"label", SlotType::kInt64}};
  for (int i = 0; i < kDense; ++i) slots.push_back({"dense_" + std::to_string(i), SlotType::kFloat32});
  for (int i = 0; i < kSparse; ++i) slots.push_back({"C" + std::to_string(i), SlotType::kInt64});
  return slots;
}

std::string CtrText(int64_t records) {
  std::mt19937_64 rng(7);
  std::string text;
  char buf[64];
  for (int64_t r = 0; r < records; ++r) {
    text += "1 " + std::to_string(rng() % 2);
    for (int i = 0; i < kDense; ++i) {
      std::snprintf(buf, sizeof buf, " 1 %.6g", double(rng() % 100000) / 997.0);
      text += buf;
    }
    for (int i = 0; i < kSparse; ++i) {
      const int n = 1 + int(rng() % 4);
      text += " " + std::to_string(n);
      for (int k = 0; k < n; ++k) text += " " + std::to_string(rng() % 1000000007ULL);
    }
    text += '\n';
  }
  return text;
}

double Seconds(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Loads `files` through "cat -" on 1 and 2 threads; one JSON line each.
void BenchDatasetLoad(const std::vector<std::string>& files, int64_t records, int64_t slots) {
  for (int threads : {1, 2}) {
    flotilla::io::Dataset ds(flotilla::io::DatasetKind::kInMemory);
    ds.SetUseVar(CtrSlots());
    ds.SetPipeCommand("cat -");
    ds.SetFileList(files);
    ds.SetThreadNum(threads);
    const double seconds = Seconds([&] { ds.LoadIntoMemory(); });
    nlohmann::json line{{"bench", "dataset_load"}, {"pipe_command", "cat -"}, {"files", files.size()},
                        {"threads", threads}, {"records", ds.MemoryDataSize()},
                        {"records_per_sec", double(records) / seconds},
                        {"slots_per_sec", double(records * slots) / seconds}};
    std::printf("%s\n", line.dump().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  int64_t records = 200000;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--records") == 0) records = std::atoll(argv[i + 1]);
  const std::string text = CtrText(records);
  MultiSlotParser parser(CtrSlots());
  double best = 1e30;
  SlotColumns out;
  for (int rep = 0; rep < 3; ++rep) {
    out = SlotColumns(parser.slots());
    best = std::min(best, Seconds([&] { parser.ParseText(text, "bench", 1, &out); }));
  }
  const double slots = double(records) * double(parser.slots().size());
  nlohmann::json line{{"bench", "multislot_parse"},   {"threads", 1},
                      {"records", out.records()},     {"values", out.values()},
                      {"mb_per_sec", double(text.size()) / best / 1e6},
                      {"records_per_sec", double(records) / best},
                      {"slots_per_sec", slots / best}};
  std::printf("%s\n", line.dump().c_str());
  nlohmann::json goal{{"bench", "multislot_parse"}, {"measure", "slots_per_sec"}, {"value", slots / best},
                      {"goal", ">= 1000000"}, {"met", slots / best >= 1e6}};
  std::printf("%s\n", goal.dump().c_str());

  std::string dir = (std::filesystem::temp_directory_path() / "flotilla_bench_multislot_XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) return 1;
  std::vector<std::string> files;
  for (int f = 0; f < 4; ++f) {
    files.push_back(dir + "/part-" + std::to_string(f));
    std::ofstream(files.back()) << text;
  }
  BenchDatasetLoad(files, 4 * records, int64_t(parser.slots().size()));
  std::filesystem::remove_all(dir);
  return 0;
}
