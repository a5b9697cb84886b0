// The launch command's parsing of durations: the option, Flotilla's variable
// and Paddle's (PADDLE_ELASTIC_TTL, PADDLE_ELASTIC_TIMEOUT), in that order.
#include "launch_command.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "flotilla/common/error.h"

namespace flotilla::tools {
namespace {

class LaunchCommandTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name : {"PADDLE_ELASTIC_TTL", "PADDLE_ELASTIC_TIMEOUT", "FLOTILLA_ELASTIC_TTL",
                             "FLOTILLA_ELASTIC_TIMEOUT"}) {
      unsetenv(name);
    }
  }

  // Parses `flotilla launch args... train.py` as main() does.
  launch::LaunchOptions Parse(std::vector<std::string> args) {
    CLI::App app;
    launch::LaunchOptions options;
    CLI::App* command = AddLaunchCommand(app, "launch", false, options);
    args.insert(args.begin(), "launch");
    args.push_back("train.py");
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
    FinishLaunchOptions(*command, false, options);
    return options;
  }
};

TEST_F(LaunchCommandTest, ElasticDurationsDefault) {
  launch::LaunchOptions o = Parse({});
  EXPECT_EQ(o.elastic_ttl.count(), 3);
  EXPECT_EQ(o.elastic_timeout.count(), 10000);
  EXPECT_EQ(o.command, std::vector<std::string>{"train.py"});
}

TEST_F(LaunchCommandTest, PaddleElasticVariablesAreRead) {
  setenv("PADDLE_ELASTIC_TTL", "7", 1);
  setenv("PADDLE_ELASTIC_TIMEOUT", "2.5", 1);
  launch::LaunchOptions o = Parse({});
  EXPECT_EQ(o.elastic_ttl.count(), 7);
  EXPECT_EQ(o.elastic_timeout.count(), 2500);
}

TEST_F(LaunchCommandTest, FlotillaVariablesWinOverPaddles) {
  setenv("PADDLE_ELASTIC_TTL", "7", 1);
  setenv("PADDLE_ELASTIC_TIMEOUT", "2.5", 1);
  setenv("FLOTILLA_ELASTIC_TTL", "4", 1);
  setenv("FLOTILLA_ELASTIC_TIMEOUT", "6", 1);
  launch::LaunchOptions o = Parse({});
  EXPECT_EQ(o.elastic_ttl.count(), 4);
  EXPECT_EQ(o.elastic_timeout.count(), 6000);
}

TEST_F(LaunchCommandTest, OptionsWinOverBothVariables) {
  setenv("PADDLE_ELASTIC_TTL", "7", 1);
  setenv("FLOTILLA_ELASTIC_TIMEOUT", "6", 1);
  launch::LaunchOptions o = Parse({"--elastic_ttl", "9", "--elastic_timeout", "1"});
  EXPECT_EQ(o.elastic_ttl.count(), 9);
  EXPECT_EQ(o.elastic_timeout.count(), 1000);
}

TEST_F(LaunchCommandTest, BadPaddleValuesAreNamed) {
  for (const char* bad : {"soon", "0", "1.5", ""}) {
    setenv("PADDLE_ELASTIC_TTL", bad, 1);
    try {
      Parse({});
      FAIL() << "PADDLE_ELASTIC_TTL='" << bad << "' was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("PADDLE_ELASTIC_TTL='" + std::string(bad) + "'"), std::string::npos)
          << e.what();
    }
  }
  unsetenv("PADDLE_ELASTIC_TTL");
  setenv("PADDLE_ELASTIC_TIMEOUT", "-1", 1);
  EXPECT_THROW(Parse({}), InvalidArgument);
}

}  // namespace
}  // namespace flotilla::tools
