// The pure rules of elastic jobs: --np parsing, records, and how a new world
// keeps the survivors' ranks.
#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "launch/elastic/membership.h"

namespace flotilla::launch {
namespace {

Member M(const std::string& host, int64_t lease, int64_t rev) { return {{host, lease}, rev, {}}; }
MemberId Id(const std::string& host, int64_t lease) { return {host, lease}; }

TEST(ElasticNp, ParsesNAndMinMax) {
  EXPECT_EQ(ParseNp("2").min, 2);
  EXPECT_EQ(ParseNp("2").max, 2);
  EXPECT_EQ(ParseNp("2:4").max, 4);
  for (const char* bad : {"", "0", "3:2", "a", "1:2:3", "-1:2"}) {
    EXPECT_THROW(ParseNp(bad), InvalidArgument) << bad;
  }
}

TEST(ElasticWorld, FirstWorldFollowsRegistrationOrderUpToMax) {
  std::vector<Member> alive = {M("a", 1, 5), M("b", 2, 6), M("c", 3, 7)};
  EXPECT_EQ(AssignWorld({}, alive, 3), (std::vector<MemberId>{Id("a", 1), Id("b", 2), Id("c", 3)}));
  EXPECT_EQ(AssignWorld({}, alive, 2), (std::vector<MemberId>{Id("a", 1), Id("b", 2)}));
}

TEST(ElasticWorld, SurvivorsKeepTheirRanksAndTheLastFillsTheHole) {
  std::vector<MemberId> before = {Id("a", 1), Id("b", 2), Id("c", 3)};
  // b is lost: a keeps 0; c (index 2 no longer exists) takes b's place.
  EXPECT_EQ(AssignWorld(before, {M("a", 1, 5), M("c", 3, 7)}, 3),
            (std::vector<MemberId>{Id("a", 1), Id("c", 3)}));
  // a is lost: b keeps 1; c (index 2 no longer exists) fills 0.
  EXPECT_EQ(AssignWorld(before, {M("b", 2, 6), M("c", 3, 7)}, 3),
            (std::vector<MemberId>{Id("c", 3), Id("b", 2)}));
}

TEST(ElasticWorld, NewcomersJoinAtTheEndAndARestartedLauncherIsNew) {
  std::vector<MemberId> before = {Id("a", 1), Id("c", 3)};
  // b came back with a new lease: a newcomer, after the survivors.
  EXPECT_EQ(AssignWorld(before, {M("a", 1, 5), M("c", 3, 7), M("b", 9, 20)}, 3),
            (std::vector<MemberId>{Id("a", 1), Id("c", 3), Id("b", 9)}));
  // At MAX, survivors win over newcomers.
  EXPECT_EQ(AssignWorld(before, {M("x", 8, 1), M("a", 1, 5), M("c", 3, 7)}, 2), before);
}

TEST(ElasticWorld, ScaleTargetCapsTheWorldWithinMinMax) {
  const NodeRange np{2, 4};
  EXPECT_EQ(WorldCap(np, std::nullopt), 4);
  EXPECT_EQ(WorldCap(np, "3"), 3);
  EXPECT_EQ(WorldCap(np, "1"), 2);   // never below MIN
  EXPECT_EQ(WorldCap(np, "9"), 4);   // never above MAX
  EXPECT_THROW(WorldCap(np, "three"), Corruption);
}

TEST(ElasticRecords, RoundTrip) {
  WorldRecord w{4, {Id("10.0.0.1", 77), Id("10.0.0.2", 78)}, 0};
  WorldRecord back = DecodeWorld(EncodeWorld(w), 12);
  EXPECT_EQ(back.gen, 4);
  EXPECT_EQ(back.members, w.members);
  EXPECT_EQ(back.mod_revision, 12);
  Member m = M("10.0.0.3", 0, 0);
  m.procs.push_back(ProcessSpec{Role::kTrainer, 0, 0, 0, "10.0.0.3", 4000, {"0"}});
  Member dm = DecodeMember("/k", EncodeMember(m), 99, 3);
  EXPECT_EQ(dm.id, Id("10.0.0.3", 99));
  ASSERT_EQ(dm.procs.size(), 1u);
  EXPECT_EQ(dm.procs[0].port, 4000);
  EXPECT_THROW(DecodeMember("/k", "{}", 1, 1), Corruption);
  EXPECT_THROW(DecodeWorld("[", 1), Corruption);
}

TEST(ElasticKeysTest, LayoutUnderTheJob) {
  ElasticKeys k("j");
  EXPECT_EQ(k.node("10.0.0.1"), "/flotilla/j/nodes/10.0.0.1");
  EXPECT_EQ(k.ok(3, "h"), "/flotilla/j/gen/3/ok/h");
  EXPECT_EQ(k.master(0), "/flotilla/j/gen/0/master");
}

}  // namespace
}  // namespace flotilla::launch
