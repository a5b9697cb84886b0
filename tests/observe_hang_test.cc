// Hang injection (issue 14's must-show): a rank that sleeps before a
// collective, a rank that skips one, a parameter server that is SIGSTOPped.
// With --stall_timeout 3 the launcher's ABORT message and `flotilla doctor`
// must name the stuck rank or server, the collective's number and kind, and
// the last op — within the stall timeout + 2 s of the hang.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <regex>
#include <thread>

#include "launch_test_util.h"

namespace flotilla::launch_test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kStallTimeout = 3s;

std::string HangWorker() { return Bin("hang_worker"); }

// Polls until read() contains `text`; the time it was first seen.
template <typename Read>
std::optional<Clock::time_point> WaitForText(Read read, const std::string& text,
                                             std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (read().find(text) != std::string::npos) return Clock::now();
    std::this_thread::sleep_for(20ms);
  }
  return std::nullopt;
}

std::optional<Clock::time_point> WaitForText(const std::string& path, const std::string& text,
                                             std::chrono::milliseconds timeout) {
  return WaitForText([&] { return ReadText(path); }, text, timeout);
}

// The launcher's stderr once it printed the whole ABORT report.
struct Aborted {
  int code = -1;
  std::string report;
  double seconds_after_hang = -1;
};

Aborted WaitForAbort(Child& job, Clock::time_point hang) {
  Aborted a;
  auto seen = WaitForText([&] { return job.Stderr(); }, "ABORT!!!", 60s);
  if (seen) a.seconds_after_hang = std::chrono::duration<double>(*seen - hang).count();
  a.code = job.WaitCode(60s);
  a.report = job.Stderr();
  return a;
}

std::string Doctor(const TempDir& dir) {
  Child doctor({FlotillaBin(), "doctor", dir / "log"}, dir.path());
  EXPECT_EQ(doctor.WaitCode(30s), 0) << doctor.Stderr();
  return doctor.Stdout();
}

std::vector<std::string> Job(const TempDir& dir, const std::vector<std::string>& options,
                             const std::vector<std::string>& program) {
  std::vector<std::string> argv = {FlotillaBin(), "launch", "--log_dir", dir / "log",
                                   "--stall_timeout", "3", "--grace_period", "1", "--quiet"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

// A three-rank hang_worker job with `worker_args`, under the stall watch.
Child HangJob(const TempDir& dir, std::vector<std::string> worker_args) {
  worker_args.insert(worker_args.begin(), HangWorker());
  return Child(Job(dir, {"--devices", "0,1,2"}, worker_args), dir.path());
}

// The launcher stopped the job as stalled (exit 124) within the stall
// timeout (3 s) + 2 s of the hang (the 2 s to notice and stop the job
// stretched in sanitizer builds).
void ExpectStoppedAsStalled(const Aborted& a) {
  EXPECT_EQ(a.code, 124) << a.report;
  const double slack = std::chrono::duration<double>(Scaled(2s)).count();
  EXPECT_LE(a.seconds_after_hang, 3.0 + slack) << a.report;
}

TEST(ObserveHang, ASleepingRankIsNamedWithTheCollectiveAndItsOp) {
  TempDir dir;
  Child job = HangJob(dir, {"--steps", "40", "--sleep_rank", "1", "--sleep_step", "5",
                            "--sleep_seconds", "60"});
  auto hang = WaitForText(dir / "log/workerlog.1", "sleeping at step 5", 60s);
  ASSERT_TRUE(hang) << job.Stderr();
  const Aborted a = WaitForAbort(job, *hang);
  ExpectStoppedAsStalled(a);
  EXPECT_GE(a.seconds_after_hang, 2.5) << a.report;
  const std::regex finding(
      "allreduce #(\\d+) \\(bucket 0, [0-9.]+ KB\\): ranks 0,2 waiting [0-9.]+ s; rank 1 never "
      "entered — last record: allreduce #(\\d+) \\(bucket 3, 8 B\\) done, now in op debug_sleep "
      "\\(step 5\\)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(a.report, m, finding)) << a.report;
  EXPECT_EQ(std::stoi(m[1]), std::stoi(m[2]) + 1);
  EXPECT_LT(a.report.find("ABORT!!! The job stalled"), a.report.find("Diagnosis"));
  const std::string doctor = Doctor(dir);
  EXPECT_TRUE(std::regex_search(doctor, finding)) << doctor;
  EXPECT_EQ(doctor.find("allreduce #"), 0u) << "the diagnosis comes first:\n" << doctor;
}

// Gloo pairs each rank's k-th collective with the others' k-th: a rank that
// skipped bucket 0 waits in bucket 1's all-reduce while the others wait in
// bucket 0's.
TEST(ObserveHang, ARankThatSkippedACollectiveIsNamed) {
  TempDir dir;
  Child job = HangJob(dir, {"--steps", "40", "--skip_rank", "1", "--skip_step", "5",
                            "--backend", "gloo"});
  auto hang = WaitForText(dir / "log/workerlog.1", "skipping bucket 0 at step 5", 60s);
  ASSERT_TRUE(hang) << job.Stderr();
  const Aborted a = WaitForAbort(job, *hang);
  ExpectStoppedAsStalled(a);
  const std::regex finding(
      "allreduce #(\\d+) \\(bucket 0, [0-9.]+ KB\\): ranks 0,2 waiting [0-9.]+ s; rank 1 is in "
      "allreduce #(\\d+) \\(bucket 1, 128 B\\) issued at step 5 instead");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(a.report, m, finding)) << a.report;
  EXPECT_EQ(m[1], m[2]);
  EXPECT_NE(a.report.find("rank 1 skipped, added or reordered a collective"), std::string::npos)
      << a.report;
  const std::string doctor = Doctor(dir);
  EXPECT_TRUE(std::regex_search(doctor, finding)) << doctor;
}

// Over shared memory the skipped collective does not hang: the ranks pair
// mismatched all-reduces until rank 1 runs out one early. The doctor still
// names rank 1 and the first collective the ranks disagree on.
TEST(ObserveHang, ASkipOverSharedMemoryIsFoundAfterTheFailure) {
  TempDir dir;
  Child job = HangJob(dir, {"--steps", "20", "--skip_rank", "1", "--skip_step", "5",
                            "--backend", "shm"});
  EXPECT_NE(job.WaitCode(60s), 0);
  const std::regex finding(
      "the ranks disagree on collective #(\\d+): ranks 0,2 ran allreduce #\\d+ \\(bucket 0, "
      "[0-9.]+ KB\\) issued at step 5; rank 1 ran allreduce #\\d+ \\(bucket 1, 128 B\\) issued "
      "at step 5 — rank 1 skipped");
  EXPECT_TRUE(std::regex_search(job.Stderr(), finding)) << job.Stderr();
  const std::string doctor = Doctor(dir);
  EXPECT_TRUE(std::regex_search(doctor, finding)) << doctor;
}

// A pid from the launcher's job_status.json.
pid_t PidOf(const TempDir& dir, const std::string& label) {
  for (int i = 0; i < 600; ++i) {
    auto status = nlohmann::json::parse(ReadText(dir / "log/job_status.json"), nullptr, false);
    if (status.is_object()) {
      for (const auto& p : status["processes"]) {
        if (p["label"] == label) return p["pid"].get<pid_t>();
      }
    }
    std::this_thread::sleep_for(100ms);
  }
  return -1;
}

TEST(ObserveHang, AStoppedParameterServerIsNamedWithItsBlockedTrainers) {
  TempDir dir;
  Child job(Job(dir, {"--server_num", "2", "--worker_num", "2"},
                {Bin("wide_and_deep"), "--train_samples", "400000", "--hidden_size",
                 "32", "--log_every", "20"}),
            dir.path());
  ASSERT_TRUE(WaitForText(dir / "log/workerlog.1", "step 40", 120s)) << job.Stderr();
  const pid_t server = PidOf(dir, "server 1");
  ASSERT_GT(server, 0);
  ASSERT_EQ(kill(server, SIGSTOP), 0);
  const auto hang = Clock::now();
  const Aborted a = WaitForAbort(job, hang);
  kill(server, SIGKILL);  // whatever the launcher did, it must not outlive the test
  ExpectStoppedAsStalled(a);
  const std::regex finding(
      "pserver 1 \\(127\\.0\\.0\\.1:\\d+\\) unreachable since \\d\\d:\\d\\d:\\d\\d \\(its process "
      "is stopped: stopped by a signal \\(SIGSTOP\\)( until the job was stopped)?\\); trainers 0,1 blocked in "
      "[A-Za-z]+");
  EXPECT_TRUE(std::regex_search(a.report, finding)) << a.report;
  const std::string doctor = Doctor(dir);
  EXPECT_TRUE(std::regex_search(doctor, finding)) << doctor;
}

}  // namespace
}  // namespace flotilla::launch_test
