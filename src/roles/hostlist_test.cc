#include "flotilla/roles/hostlist.h"

#include <gtest/gtest.h>

#include "flotilla/common/error.h"

namespace flotilla::roles {
namespace {

using Hosts = std::vector<std::string>;

std::string ErrorOf(const std::string& list) {
  try {
    ExpandHostlist(list);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(Hostlist, PlainNamesAndLists) {
  EXPECT_EQ(ExpandHostlist("node1"), Hosts({"node1"}));
  EXPECT_EQ(ExpandHostlist("a,b,c"), Hosts({"a", "b", "c"}));
  EXPECT_EQ(ExpandHostlist("10.0.0.1,10.0.0.2"), Hosts({"10.0.0.1", "10.0.0.2"}));
}

TEST(Hostlist, RangesAndSingleNumbers) {
  EXPECT_EQ(ExpandHostlist("n[1-3]"), Hosts({"n1", "n2", "n3"}));
  EXPECT_EQ(ExpandHostlist("n[7]"), Hosts({"n7"}));
  EXPECT_EQ(ExpandHostlist("n[1,3,5-6]"), Hosts({"n1", "n3", "n5", "n6"}));
  EXPECT_EQ(ExpandHostlist("n[8-11]"), Hosts({"n8", "n9", "n10", "n11"}));
}

TEST(Hostlist, ZeroPaddingFollowsTheLowerBound) {
  EXPECT_EQ(ExpandHostlist("node[01-04,07]"),
            Hosts({"node01", "node02", "node03", "node04", "node07"}));
  EXPECT_EQ(ExpandHostlist("n[098-101]"), Hosts({"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(ExpandHostlist("n[0-2]"), Hosts({"n0", "n1", "n2"}));
  EXPECT_EQ(ExpandHostlist("n[00]"), Hosts({"n00"}));
}

TEST(Hostlist, SeveralGroupsInOneList) {
  EXPECT_EQ(ExpandHostlist("node[01-04,07],gpu-a[1-2]"),
            Hosts({"node01", "node02", "node03", "node04", "node07", "gpu-a1", "gpu-a2"}));
  EXPECT_EQ(ExpandHostlist("login,c[1-2],gpu"), Hosts({"login", "c1", "c2", "gpu"}));
}

TEST(Hostlist, NestedPrefixesAndSuffixes) {
  EXPECT_EQ(ExpandHostlist("rack[1-2]-n[1-2]"),
            Hosts({"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}));
  EXPECT_EQ(ExpandHostlist("c[1-2].cluster"), Hosts({"c1.cluster", "c2.cluster"}));
  EXPECT_EQ(ExpandHostlist("a[1-2]b[3]c"), Hosts({"a1b3c", "a2b3c"}));
}

TEST(Hostlist, MalformedListsAreNamed) {
  EXPECT_NE(ErrorOf("n[1-3").find("'[' without ']'"), std::string::npos);
  EXPECT_NE(ErrorOf("n1-3]").find("']' without '['"), std::string::npos);
  EXPECT_NE(ErrorOf("n[1-[2]]").find("nested brackets"), std::string::npos);
  EXPECT_NE(ErrorOf("n[3-1]").find("runs backwards"), std::string::npos);
  EXPECT_NE(ErrorOf("n[a-b]").find("is not a number"), std::string::npos);
  EXPECT_NE(ErrorOf("n[]").find("empty item"), std::string::npos);
  EXPECT_NE(ErrorOf("n[1,,2]").find("empty item"), std::string::npos);
  EXPECT_NE(ErrorOf("n[1-]").find("bad range bound"), std::string::npos);
  EXPECT_NE(ErrorOf("a,,b").find("empty host name"), std::string::npos);
  EXPECT_NE(ErrorOf("").find("empty host name"), std::string::npos);
  EXPECT_NE(ErrorOf("n[1-3").find("malformed Slurm hostlist 'n[1-3'"), std::string::npos);
}

TEST(Hostlist, HugeListsFailBeforeAllocating) {
  EXPECT_NE(ErrorOf("n[0-999999999999]").find("more than 65536 hosts"), std::string::npos);
  EXPECT_NE(ErrorOf("a[1-1000]b[1-1000]").find("more than 65536 hosts"), std::string::npos);
  EXPECT_NE(ErrorOf("n[1-9999999999999999999]").find("bad range bound"), std::string::npos);
  EXPECT_EQ(ExpandHostlist("n[1-65536]").size(), 65536u);
}

}  // namespace
}  // namespace flotilla::roles
