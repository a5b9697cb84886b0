// Loading a sparse table while trainers push and pull: rows of an advancing
// rule catch up against the history as it is after the load, never past
// its end.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "flotilla/ps/sparse_table.h"

namespace flotilla::ps {
namespace {

constexpr float kRate = 0.25f;

// A momentum-like rule that records any learning rate it is handed that no
// step ever had: a rate read from beyond the step history.
class WatchfulRule : public UpdateRule {
 public:
  WatchfulRule() : UpdateRule(kRate) {}
  std::string name() const override { return "watchful"; }
  int64_t StateSize(int64_t dim) const override { return dim; }
  void Apply(std::span<float> value, std::span<float> state, std::span<const float> grad,
             float lr) const override {
    for (size_t i = 0; i < value.size(); ++i) value[i] -= lr * grad[i];
  }
  void ApplyRows(std::span<float* const> rows, std::span<const float* const> grads, int64_t dim,
                 float lr) const override {
    for (size_t j = 0; j < rows.size(); ++j) {
      for (int64_t i = 0; i < dim; ++i) rows[j][i] -= lr * grads[j][i];
    }
  }
  bool advances() const override { return true; }
  void Advance(float*, float*, int64_t, std::span<const float> lrs) const override {
    for (float lr : lrs) {
      if (lr != kRate) bad_rates.fetch_add(1);
    }
  }
  mutable std::atomic<int> bad_rates{0};
};

TEST(SparseTableLoad, ALoadRacingPushesAndPullsStaysInsideTheHistory) {
  auto rule = std::make_shared<WatchfulRule>();
  SparseTableConfig config{.name = "emb", .dim = 4, .rule = rule, .num_shards = 4};
  SparseTable table(config);
  // A short history to load, taken after a few steps.
  std::vector<int64_t> keys(64);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<int64_t>(i);
  std::vector<float> grads(keys.size() * 4, 0.01f), out(keys.size() * 4);
  table.Push(std::span<const int64_t>(keys).first(8), std::span<const float>(grads).first(32));
  const std::string short_image = table.Serialize();
  std::atomic<bool> stop{false};
  std::vector<std::thread> trainers;
  for (int t = 0; t < 3; ++t) {
    trainers.emplace_back([&, t] {
      std::vector<float> pulled(keys.size() * 4);
      for (int step = 0; !stop; ++step) {
        // Long pushes grow the history far past the image's before each load.
        for (int k = 0; k < 50; ++k) table.Push(keys, grads);
        table.Pull(keys, pulled);
      }
    });
  }
  // Loads for a second and a half while the trainers run.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  while (std::chrono::steady_clock::now() < until) {
    table.Deserialize(short_image, "short image");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop = true;
  for (auto& t : trainers) t.join();
  table.Pull(keys, out);
  EXPECT_EQ(rule->bad_rates.load(), 0) << "rows caught up with rates from past the history";
}

}  // namespace
}  // namespace flotilla::ps
