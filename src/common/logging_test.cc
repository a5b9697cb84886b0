#include "flotilla/common/logging.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

namespace flotilla::log {
namespace {

TEST(Capture, KeepsTheLinesLoggedWhileItLives) {
  Warn("before the capture");
  std::string outer_text;
  {
    Capture outer;
    Warn("line {}", 1);
    {
      Capture inner;
      Warn("line {}", 2);
      EXPECT_EQ(inner.text().find("line 1"), std::string::npos) << inner.text();
      EXPECT_NE(inner.text().find("line 2"), std::string::npos) << inner.text();
    }
    Warn("line {}", 3);
    outer_text = outer.text();
  }
  Warn("after the capture");
  EXPECT_EQ(outer_text.find("before the capture"), std::string::npos) << outer_text;
  for (const char* line : {"line 1", "line 2", "line 3"}) {
    EXPECT_NE(outer_text.find(line), std::string::npos) << line << " in " << outer_text;
  }
  EXPECT_EQ(outer_text.find("after the capture"), std::string::npos) << outer_text;
}

// Captures come and go (and are read) while another thread logs: their sinks
// change under a lock, never under a logging thread's feet.
TEST(Capture, OpensAndClosesWhileAnotherThreadLogs) {
  std::atomic<bool> stop{false};
  std::atomic<int> logged{0};
  std::thread logger([&] {
    while (!stop) Warn("from the logging thread {}", logged++);
  });
  for (int round = 0; round < 200; ++round) {
    Capture capture;
    const int seen = logged.load();
    while (logged.load() < seen + 2) std::this_thread::yield();
    EXPECT_NE(capture.text().find("from the logging thread"), std::string::npos) << round;
  }
  stop = true;
  logger.join();
}

}  // namespace
}  // namespace flotilla::log
