// The flight recorder's ring and its dumps.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "flotilla/trace/flight_recorder.h"

namespace flotilla::trace {
namespace {

FlightRecord Collective(uint64_t seq) {
  FlightRecord r;
  r.kind = Intern("allreduce");
  r.group = Intern("fleet_dp0");
  r.seq = seq;
  r.bytes = 4 << 20;
  r.participants = 4;
  return r;
}

TEST(FlightRecorder, KeepsTheLastNInOrder) {
  FlightRecorder fr(3);
  for (uint64_t s = 1; s <= 5; ++s) fr.MarkEnded(fr.Add(Collective(s)), true);
  auto records = fr.Snapshot();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].seq, 3u);
  EXPECT_EQ(records[2].seq, 5u);
  for (const auto& r : records) {
    EXPECT_EQ(r.state, FlightState::kDone);
    EXPECT_LE(r.enqueue_ns, r.start_ns);
    EXPECT_LE(r.start_ns, r.end_ns);
  }
}

TEST(FlightRecorder, UpdatesOfOverwrittenRecordsAreIgnored) {
  FlightRecorder fr(2);
  const uint64_t first = fr.Add(Collective(1));
  fr.Add(Collective(2));
  fr.Add(Collective(3));  // overwrites the first
  fr.MarkEnded(first, true);
  for (const auto& r : fr.Snapshot()) EXPECT_EQ(r.state, FlightState::kQueued);
}

TEST(FlightRecorder, OldestPendingSkipsFinishedRecords) {
  FlightRecorder fr(8);
  const uint64_t a = fr.Add(Collective(1));
  const uint64_t b = fr.Add(Collective(2));
  fr.MarkStarted(b);
  FlightRecord r;
  ASSERT_TRUE(fr.OldestPending(&r));
  EXPECT_EQ(r.seq, 1u);
  fr.MarkEnded(a, true);
  ASSERT_TRUE(fr.OldestPending(&r));
  EXPECT_EQ(r.seq, 2u);
  EXPECT_EQ(r.state, FlightState::kStarted);
  fr.MarkEnded(b, true);
  EXPECT_FALSE(fr.OldestPending(&r));
}

TEST(FlightRecorder, OffWhenSizeIsZero) {
  FlightRecorder fr(0);
  EXPECT_EQ(fr.Add(Collective(1)), 0u);
  EXPECT_TRUE(fr.Snapshot().empty());
}

TEST(FlightScope, FailsWhenUnwinding) {
  auto& fr = FlightRecorder::Get();
  uint64_t id = 0;
  try {
    FlightScope scope(Collective(9));
    id = scope.id();
    throw std::runtime_error("peer died");
  } catch (const std::runtime_error&) {
  }
  bool seen = false;
  for (const auto& r : fr.Snapshot()) {
    if (r.id == id) {
      seen = true;
      EXPECT_EQ(r.state, FlightState::kFailed);
    }
  }
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace flotilla::trace
