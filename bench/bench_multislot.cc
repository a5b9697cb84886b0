// The MultiSlot parser's speed on CTR-shaped lines (issue 28: >= 1 M slots/s
// per core): one label, 13 dense float slots, 26 sparse id slots of 1-4 ids,
// parsed from memory on one thread. Prints one JSON line per measurement.
//
//   bench_multislot [--records N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

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
    const auto start = std::chrono::steady_clock::now();
    parser.ParseText(text, "bench", 1, &out);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
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
  return 0;
}
