#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flotilla/common/checksum.h"
#include "flotilla/common/error.h"
#include "flotilla/common/strings.h"

namespace flotilla {
namespace {

TEST(Strings, SplitJoinHostPort) {
  EXPECT_EQ(Split("a,,b", ','), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Split("a,,b", ',', false), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Join({"x", "y"}, ":"), "x:y");
  auto hp = ParseHostPort("127.0.0.1:6170", "endpoint");
  EXPECT_EQ(hp.host, "127.0.0.1");
  EXPECT_EQ(hp.port, 6170);
  EXPECT_THROW(ParseHostPort("nohost", "endpoint"), InvalidArgument);
  EXPECT_THROW(ParseHostPort("h:99999", "endpoint"), InvalidArgument);
}

// The message of what `fn` throws as InvalidArgument; "" when nothing.
template <typename Fn>
std::string InvalidMessage(Fn fn) {
  try {
    fn();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(Strings, IntegersFromFlagsAndVariablesAreRangeChecked) {
  EXPECT_EQ(ParseIntInRange(" 6170 ", "--port", 1, kMaxPort), 6170);
  EXPECT_EQ(ParseIntInRange("0", "--port", 0, kMaxPort), 0);
  EXPECT_EQ(ParseIntInRange("65535", "--port", 0, kMaxPort), 65535);
  EXPECT_NE(InvalidMessage([] { ParseIntInRange("70000", "--port", 0, kMaxPort, "0: any"); })
                .find("--port=70000 is outside 0..65535 (0: any)"),
            std::string::npos);
  EXPECT_NE(InvalidMessage([] { ParseIntInRange("-1", "environment variable MASTER_PORT", 1,
                                                kMaxPort); })
                .find("environment variable MASTER_PORT=-1 is outside 1..65535"),
            std::string::npos);
  // Past int64: still a range error, not a wrap.
  EXPECT_NE(InvalidMessage([] { ParseIntInRange("99999999999999999999", "--n", 0, 10); })
                .find("--n=99999999999999999999 is outside 0..10"),
            std::string::npos);
  EXPECT_NE(InvalidMessage([] { ParseIntInRange("12x", "--n", 0, 100); }).find("not an integer"),
            std::string::npos);
  EXPECT_EQ(CheckInRange(-1, "--rank", -1, 10), -1);
  EXPECT_NE(InvalidMessage([] { CheckInRange(2000000000, "--nproc_per_node", 0, 4096); })
                .find("--nproc_per_node=2000000000 is outside 0..4096"),
            std::string::npos);
  EXPECT_NE(InvalidMessage([] { ParseHostPort("h:-1", "endpoint"); }).find("is outside 1..65535"),
            std::string::npos);
}

TEST(Checksum, KnownVector) {
  // CRC-32C of "123456789" is 0xE3069283.
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
}

}  // namespace
}  // namespace flotilla
