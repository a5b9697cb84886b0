// Runs the examples as a user would and checks the metrics they report on
// their last line (issue "Foundation": fit_a_line reaches test MSE ≤ 25 in
// 100 epochs; mlp reaches accuracy ≥ 0.95).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flotilla/testing/process.h"

namespace {

std::string BinDir() {
  const char* build = std::getenv("FLOTILLA_BUILD_DIR");
  return std::string(build ? build : "build") + "/bin/";
}

// Runs the example `argv` (argv[0] under build/bin) to its end; returns
// (exit code, stdout, with stderr too when `with_stderr`).
std::pair<int, std::string> RunExample(std::vector<std::string> argv, bool with_stderr = false) {
  argv[0] = BinDir() + argv[0];
  flotilla::testing::ProcessOptions o{std::move(argv)};
  o.stdout_to = flotilla::testing::Output::kCapture;
  if (with_stderr) o.stderr_to = flotilla::testing::Output::kStdout;
  flotilla::testing::Process example(std::move(o));
  const int code = example.Finish(std::chrono::minutes(4));
  return {code, example.Stdout()};
}

nlohmann::json LastLine(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  auto pos = s.rfind('\n');
  return nlohmann::json::parse(pos == std::string::npos ? s : s.substr(pos + 1));
}

TEST(Examples, FitALineReachesTestMse25) {
  auto [status, out] = RunExample({"fit_a_line", "--epochs", "100"});
  ASSERT_EQ(status, 0) << out;
  auto result = LastLine(out);
  EXPECT_LE(result["test_mse"].get<double>(), 25.0) << out;
  EXPECT_EQ(result["epochs"].get<int>(), 100);
  EXPECT_GT(result["samples_per_sec"].get<double>(), 0);
}

TEST(Examples, MlpReachesAccuracy95) {
  auto [status, out] = RunExample({"mlp"});
  ASSERT_EQ(status, 0) << out;
  auto result = LastLine(out);
  EXPECT_GE(result["accuracy"].get<double>(), 0.95) << out;
  EXPECT_GT(result["steps_per_sec"].get<double>(), 0);
}

TEST(Examples, UnknownFlagIsNamed) {
  auto [status, out] = RunExample({"mlp", "--no_such_flag"}, /*with_stderr=*/true);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("--no_such_flag"), std::string::npos) << out;
}

}  // namespace
