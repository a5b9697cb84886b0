#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "flotilla/common/env.h"
#include "flotilla/common/error.h"

namespace flotilla {
namespace {

TEST(Env, ParsesAndNamesBadValues) {
  setenv("FLOTILLA_T_INT", "12", 1);
  EXPECT_EQ(env::GetInt("FLOTILLA_T_INT", 0), 12);
  setenv("FLOTILLA_T_INT", "two", 1);
  try {
    env::GetInt("FLOTILLA_T_INT", 0);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("FLOTILLA_T_INT"), std::string::npos);
  }
  unsetenv("FLOTILLA_T_MISSING");
  EXPECT_THROW(env::Require("FLOTILLA_T_MISSING"), NotFound);
  setenv("FLOTILLA_T_LIST", "a, b,,c", 1);
  EXPECT_EQ(env::GetList("FLOTILLA_T_LIST"), (std::vector<std::string>{"a", "b", "c"}));
}

}  // namespace
}  // namespace flotilla
