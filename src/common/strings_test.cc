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

TEST(Checksum, KnownVector) {
  // CRC-32C of "123456789" is 0xE3069283.
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
}

}  // namespace
}  // namespace flotilla
