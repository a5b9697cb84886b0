// The doctor's diagnosis from hand-made dumps (the hang tests in
// tests/observe_hang_test.cc produce real ones).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "flotilla/common/file_util.h"
#include "flotilla/trace/doctor.h"

namespace flotilla::trace {
namespace {

constexpr int64_t kSec = 1000000000;

class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("flotilla_doctor_test." + std::to_string(getpid()) + "." +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    MakeDirs(dir_ + "/flight");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static nlohmann::json Allreduce(int rank, uint64_t seq, const char* state, int bucket,
                                  int64_t start) {
    return {{"type", "collective"}, {"state", state},   {"kind", "allreduce"},
            {"seq", seq},           {"bytes", 4 << 20}, {"group", "fleet_dp0"},
            {"backend", "gloo"},    {"comm", 0},        {"rank", rank},
            {"participants", 4},    {"bucket", bucket}, {"enqueue_ns", start},
            {"start_ns", start},    {"end_ns", std::string(state) == "done" ? start + 1000 : 0}};
  }
  void Dump(const std::string& label, const std::string& role, int id, nlohmann::json records,
            const std::string& op = "", int64_t step = 97) {
    nlohmann::json d = {{"label", label},  {"role", role},  {"id", id},         {"pid", 100 + id},
                        {"reason", "signal"}, {"mono_ns", 100 * kSec},
                        {"wall_minus_mono_ns", 0}, {"step", step}, {"in_op", !op.empty()},
                        {"op", op}, {"op_output", ""}, {"op_since_ns", 60 * kSec},
                        {"records", records}};
    WriteFileAtomic(dir_ + "/flight/" + label + ".flight.json", d.dump());
  }
  std::string dir_;
};

TEST_F(DoctorTest, NamesTheRankThatNeverEnteredAndWhereItIs) {
  for (int r : {0, 1, 3}) {
    Dump("rank" + std::to_string(r), "trainer", r,
         {Allreduce(r, 811, "done", 2, 60 * kSec), Allreduce(r, 812, "started", 3, 100 * kSec - 30200000000)});
  }
  Dump("rank2", "trainer", 2, {Allreduce(2, 811, "done", 2, 60 * kSec)}, "mul_grad");
  const Diagnosis d = Diagnose(dir_);
  ASSERT_FALSE(d.findings.empty()) << FormatDiagnosis(d);
  EXPECT_EQ(d.findings[0],
            "allreduce #812 (bucket 3, 4.0 MB): ranks 0,1,3 waiting 30.2 s; rank 2 never entered — "
            "last record: allreduce #811 (bucket 2, 4.0 MB) done, now in op mul_grad (step 97)");
}

TEST_F(DoctorTest, ARankThatSkippedABucketIsNamedAsDisagreeing) {
  for (int r : {0, 1, 2, 3}) {
    // Rank 1 skipped bucket 3: its #812 is bucket 4's all-reduce.
    Dump("rank" + std::to_string(r), "trainer", r,
         {Allreduce(r, 811, "done", 2, 60 * kSec),
          Allreduce(r, 812, "started", r == 1 ? 4 : 3, 95 * kSec)});
  }
  const Diagnosis d = Diagnose(dir_);
  const std::string text = FormatDiagnosis(d);
  EXPECT_NE(text.find("ranks 0,2,3 waiting 5.0 s; rank 1 is in allreduce #812 (bucket 4, 4.0 MB) instead"),
            std::string::npos) << text;
  EXPECT_NE(text.find("the ranks disagree on collective #812: ranks 0,2,3 ran allreduce #812 "
                      "(bucket 3, 4.0 MB); rank 1 ran allreduce #812 (bucket 4, 4.0 MB) — rank 1"),
            std::string::npos) << text;
}

TEST_F(DoctorTest, AStoppedServerIsUnreachableAndItsTrainersBlocked) {
  for (int t : {0, 1}) {
    nlohmann::json rpc = {{"type", "rpc"}, {"state", "started"}, {"kind", "PullSparse"},
                          {"table", "emb"}, {"endpoint", "127.0.0.1:6171"}, {"server", 1},
                          {"trainer", t}, {"keys", 100}, {"bytes", 800},
                          {"enqueue_ns", 90 * kSec}, {"start_ns", 90 * kSec}};
    Dump("rank" + std::to_string(t), "trainer", t, {rpc}, "distributed_lookup_table", 12);
  }
  nlohmann::json status = {{"processes",
                            {{{"label", "server 1"}, {"role", "server"}, {"id", 1}, {"pid", 42},
                              {"state", "stopped"}, {"status", "stopped by SIGSTOP"}}}}};
  WriteFileAtomic(dir_ + "/job_status.json", status.dump());
  const Diagnosis d = Diagnose(dir_);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_NE(d.findings[0].find("pserver 1 (127.0.0.1:6171) unreachable since "), std::string::npos);
  EXPECT_NE(d.findings[0].find("(its process is stopped: stopped by SIGSTOP); trainers 0,1 blocked "
                               "in PullSparse table emb"),
            std::string::npos) << d.findings[0];
}

// Sync PS: trainer 1 is SIGSTOPped, trainer 0 waits at the servers'
// barrier for it. The servers answer (they dumped); the stopped trainer is
// the one to name, first.
TEST_F(DoctorTest, AStoppedTrainerIsNamedFirst) {
  nlohmann::json rpc = {{"type", "rpc"}, {"state", "started"}, {"kind", "Barrier"},
                        {"endpoint", "127.0.0.1:6170"}, {"server", 0}, {"trainer", 0},
                        {"enqueue_ns", 90 * kSec}, {"start_ns", 90 * kSec}};
  Dump("rank0", "trainer", 0, {rpc}, "ps_barrier", 12);
  Dump("server 0", "server", 0, {}, "listen_and_serv", 1);
  nlohmann::json status = {{"processes",
                            {{{"label", "rank 1"}, {"role", "trainer"}, {"id", 1}, {"pid", 43},
                              {"endpoint", "127.0.0.1:6171"}, {"state", "stopped"},
                              {"status", "stopped by a signal (SIGSTOP)"}}}}};
  WriteFileAtomic(dir_ + "/job_status.json", status.dump());
  const Diagnosis d = Diagnose(dir_);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0], "rank 1 (pid 43, 127.0.0.1:6171) is stopped (stopped by a signal "
                           "(SIGSTOP)): it cannot run or answer, and whoever waits on it waits "
                           "forever");
  // The server that holds the barrier is alive: the finding on it names the
  // stopped trainer it waits on.
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[1].find("pserver 0 (127.0.0.1:6170) has not answered since "), 0u)
      << d.findings[1];
  EXPECT_NE(d.findings[1].find(", waiting on the stopped rank 1; trainer 0 blocked in Barrier"),
            std::string::npos)
      << d.findings[1];
}

TEST_F(DoctorTest, DamagedDumpsBecomeNotesAndNothingFoundIsSaid) {
  WriteFileAtomic(dir_ + "/flight/rank0.flight.json", "{not json");
  const Diagnosis d = Diagnose(dir_);
  EXPECT_TRUE(d.findings.empty());
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("rank0.flight.json is unreadable"), std::string::npos);
  EXPECT_NE(FormatDiagnosis(d).find("no stuck collective"), std::string::npos);
}

}  // namespace
}  // namespace flotilla::trace
