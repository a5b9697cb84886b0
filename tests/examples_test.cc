// Runs the examples as a user would and checks the metrics they report on
// their last line (issue "Foundation": fit_a_line reaches test MSE ≤ 25 in
// 100 epochs; mlp reaches accuracy ≥ 0.95).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

namespace {

std::string BinDir() {
  const char* build = std::getenv("FLOTILLA_BUILD_DIR");
  return std::string(build ? build : "build") + "/bin/";
}

// Runs `command`, returns (exit status, stdout).
std::pair<int, std::string> RunCommand(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  std::string out;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) out += buf.data();
  return {pclose(pipe), out};
}

nlohmann::json LastLine(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  auto pos = s.rfind('\n');
  return nlohmann::json::parse(pos == std::string::npos ? s : s.substr(pos + 1));
}

TEST(Examples, FitALineReachesTestMse25) {
  auto [status, out] = RunCommand(BinDir() + "fit_a_line --epochs 100");
  ASSERT_EQ(status, 0) << out;
  auto result = LastLine(out);
  EXPECT_LE(result["test_mse"].get<double>(), 25.0) << out;
  EXPECT_EQ(result["epochs"].get<int>(), 100);
  EXPECT_GT(result["samples_per_sec"].get<double>(), 0);
}

TEST(Examples, MlpReachesAccuracy95) {
  auto [status, out] = RunCommand(BinDir() + "mlp");
  ASSERT_EQ(status, 0) << out;
  auto result = LastLine(out);
  EXPECT_GE(result["accuracy"].get<double>(), 0.95) << out;
  EXPECT_GT(result["steps_per_sec"].get<double>(), 0);
}

TEST(Examples, UnknownFlagIsNamed) {
  auto [status, out] = RunCommand(BinDir() + "mlp --no_such_flag 2>&1");
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("--no_such_flag"), std::string::npos) << out;
}

}  // namespace
