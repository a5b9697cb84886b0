#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "flotilla/common/enforce.h"
#include "flotilla/common/error.h"
#include "flotilla/common/interrupt.h"

namespace flotilla {
namespace {

TEST(Enforce, MessageNamesContextAndLocation) {
  try {
    int a = 3;
    FLOTILLA_ENFORCE_EQ(a, 4, "shape of 'x'");
    FAIL();
  } catch (const InvalidArgument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("shape of 'x'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("3 vs 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("error_test.cc"), std::string::npos) << msg;
  }
}

TEST(Error, EachCodeNamesItselfInTheMessage) {
  EXPECT_STREQ(ErrorCodeName(ErrorCode::kUnavailable), "Unavailable");
  EXPECT_EQ(std::string(Unavailable("store down").what()), "Unavailable: store down");
}

// A stop asked for by the host is not a failure that retrying may cure.
TEST(Error, CancelledHasItsOwnCode) {
  Cancelled e("interrupted");
  EXPECT_EQ(e.code(), ErrorCode::kCancelled);
  EXPECT_NE(e.code(), ErrorCode::kUnavailable);
  EXPECT_EQ(std::string(e.what()), "Cancelled: interrupted");
}

TEST(Interrupt, CheckThrowsCancelledOnlyWhenTheCheckSaysSo) {
  static bool stop = false;
  SetInterruptCheck([] { return stop; });
  EXPECT_NO_THROW(CheckInterrupt(std::chrono::milliseconds(0)));
  stop = true;
  EXPECT_THROW(CheckInterrupt(std::chrono::milliseconds(0)), Cancelled);
  SetInterruptCheck(nullptr);
  EXPECT_NO_THROW(CheckInterrupt(std::chrono::milliseconds(0)));
}

}  // namespace
}  // namespace flotilla
