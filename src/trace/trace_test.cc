// Spans, buffers and the timeline file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "flotilla/common/file_util.h"
#include "flotilla/trace/activity.h"
#include "flotilla/trace/trace.h"
#include "flotilla/trace/track.h"
#include "flotilla/common/error.h"
#include "trace/settings.h"
#include "trace/thread_buffer.h"

namespace flotilla::trace {
namespace {

std::string TempPath(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("flotilla_trace_test." + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// Parses a timeline file, appending the closing bracket a killed writer
// leaves out (as the viewers do).
nlohmann::json Load(const std::string& path) {
  std::string text = ReadFile(path);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.back() != ']') text += "]";
  return nlohmann::json::parse(text);
}

std::vector<nlohmann::json> Named(const nlohmann::json& events, const std::string& name) {
  std::vector<nlohmann::json> out;
  for (const auto& e : events) {
    if (e.value("name", "") == name) out.push_back(e);
  }
  return out;
}

TEST(Names, InternIsStableAndShared) {
  const NameId a = Intern("mul_grad");
  EXPECT_EQ(Intern("mul_grad"), a);
  EXPECT_NE(Intern("mul"), a);
  EXPECT_EQ(NameOf(a), "mul_grad");
  EXPECT_EQ(Intern(""), kNoName);
  std::vector<NameId> ids(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { ids[t] = Intern("shared_name"); });
  for (auto& th : threads) th.join();
  for (NameId id : ids) EXPECT_EQ(id, ids[0]);
}

TEST(ThreadBuffer, DropsWhenFullAndDrainsInOrder) {
  ThreadBuffer b(1, 4);
  Event e{};
  for (int i = 0; i < 6; ++i) {
    e.start_ns = i;
    b.Push(e);
  }
  EXPECT_EQ(b.dropped(), 2u);
  std::vector<int64_t> seen;
  EXPECT_EQ(b.Drain([&](const Event& ev) { seen.push_back(ev.start_ns); }), 4u);
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3}));
  b.Push(e);
  EXPECT_EQ(b.Drain([](const Event&) {}), 1u);
  EXPECT_TRUE(b.empty());
}

TEST(Timeline, SpansFromSeveralThreadsWithArgsAndRows) {
  const std::string path = TempPath("spans.json");
  StartTimeline(path);
  ASSERT_TRUE(Enabled());
  {
    Span s(Category::kOp, Intern("mul"));
    s.ArgName("output", Intern("fc_0.tmp_0")).Arg("bytes", 4096).ArgDouble("ratio", 0.5);
  }
  std::thread worker([] {
    SetThreadName("comm 0");
    Span s(Category::kCollective, Intern("allreduce"));
    s.Arg("seq", 7);
  });
  worker.join();
  { Span s(Category::kRpcCall, Intern("PullSparse")); s.OnTrack(Track("rpc → server 1")); }
  Count(Intern("loss"), 0.25);
  Instant(Category::kElastic, Intern("membership change"), "generation", 2);
  StopTimeline();
  EXPECT_FALSE(Enabled());
  { Span s(Category::kOp, Intern("after_stop")); }

  const auto events = Load(path);
  auto mul = Named(events, "mul");
  ASSERT_EQ(mul.size(), 1u);
  EXPECT_EQ(mul[0]["ph"], "X");
  EXPECT_EQ(mul[0]["cat"], "op");
  EXPECT_EQ(mul[0]["args"]["output"], "fc_0.tmp_0");
  EXPECT_EQ(mul[0]["args"]["bytes"], 4096);
  EXPECT_DOUBLE_EQ(mul[0]["args"]["ratio"].get<double>(), 0.5);
  EXPECT_GE(mul[0]["dur"].get<double>(), 0.0);
  auto ar = Named(events, "allreduce");
  ASSERT_EQ(ar.size(), 1u);
  EXPECT_NE(ar[0]["tid"], mul[0]["tid"]);
  bool comm_row = false, rpc_row = false;
  for (const auto& e : Named(events, "thread_name")) {
    comm_row |= e["tid"] == ar[0]["tid"] && e["args"]["name"] == "comm 0";
    rpc_row |= e["args"]["name"] == "rpc → server 1" &&
               e["tid"] == Named(events, "PullSparse")[0]["tid"];
  }
  EXPECT_TRUE(comm_row);
  EXPECT_TRUE(rpc_row);
  EXPECT_EQ(Named(events, "loss")[0]["ph"], "C");
  EXPECT_EQ(Named(events, "membership change")[0]["args"]["generation"], 2);
  EXPECT_TRUE(Named(events, "after_stop").empty());
  EXPECT_EQ(Named(events, "flotilla_process").size(), 1u);
}

TEST(Timeline, AFileCutAtAnyLineLoads) {
  const std::string path = TempPath("cut.json");
  StartTimeline(path);
  for (int i = 0; i < 10; ++i) Span s(Category::kOp, Intern("op" + std::to_string(i)));
  FlushTimeline();
  // Still open, as a killed process leaves it: no closing bracket.
  const std::string text = ReadFile(path);
  EXPECT_EQ(text.back(), '}');
  EXPECT_EQ(Named(Load(path), "op9").size(), 1u);
  StopTimeline();
  EXPECT_NO_THROW(nlohmann::json::parse(ReadFile(path)));
}

TEST(Timeline, RingModeKeepsTheNewestEventsWithinTheBound) {
  const std::string path = TempPath("ring.json");
  const int64_t max_bytes = 64 << 10;
  StartTimeline(path, max_bytes);
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 100; ++i) Span s(Category::kOp, Intern("r" + std::to_string(round)));
    FlushTimeline();
  }
  StopTimeline();
  EXPECT_LE(static_cast<int64_t>(std::filesystem::file_size(path)), max_bytes + 4096);
  const auto events = Load(path);
  EXPECT_EQ(Named(events, "r39").size(), 100u);
  EXPECT_TRUE(Named(events, "r0").empty());
  EXPECT_FALSE(Named(events, "process_name").empty());
  EXPECT_FALSE(std::filesystem::exists(path + ".seg0"));
}

TEST(Timeline, StepWindowRecordsOnlyItsSteps) {
  const std::string path = TempPath("window.json");
  const int64_t base = Step() + 100;
  StartTimeline(path, 0, base + 3, base + 4);
  for (int64_t step = base + 1; step <= base + 6; ++step) {
    SetStep(step);
    Span s(Category::kStep, Intern("step" + std::to_string(step - base)));
  }
  StopTimeline();
  const auto events = Load(path);
  for (int k = 1; k <= 6; ++k) {
    EXPECT_EQ(Named(events, "step" + std::to_string(k)).size(), k == 3 || k == 4 ? 1u : 0u) << k;
  }
}

TEST(ParseStepWindow, FirstLastOrOneStep) {
  int64_t first = 0, last = 0;
  ParseStepWindow("--timeline_steps", "100-120", &first, &last);
  EXPECT_EQ(first, 100);
  EXPECT_EQ(last, 120);
  ParseStepWindow("--timeline_steps", "7", &first, &last);
  EXPECT_EQ(first, 7);
  EXPECT_EQ(last, 7);
  try {
    ParseStepWindow("--timeline_steps", "120-100", &first, &last);
    ADD_FAILURE() << "a backwards window was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--timeline_steps '120-100'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ParseStepWindow("--timeline_steps", "a-b", &first, &last), Error);
}

}  // namespace
}  // namespace flotilla::trace
