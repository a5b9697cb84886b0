// The metrics registry and its Prometheus text.
#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "flotilla/trace/metrics.h"

namespace flotilla::trace {
namespace {

TEST(Metrics, TextFormatForEveryType) {
  MetricsRegistry r;
  r.GetCounter("jobs_total", "Jobs run", {{"queue", "a\"b\\c\nd"}}).Add(3);
  r.GetGauge("temperature", "Degrees").Set(-1.5);
  auto& h = r.GetHistogram("latency_seconds", "Latency", {0.1, 1}, {{"method", "Pull"}});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(5);
  const std::string text = r.PrometheusText();
  EXPECT_NE(text.find("# TYPE jobs_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("jobs_total{queue=\"a\\\"b\\\\c\\nd\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("temperature -1.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("latency_seconds_bucket{method=\"Pull\",le=\"0.10000000000000001\"} 1\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("latency_seconds_bucket{method=\"Pull\",le=\"1\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("latency_seconds_bucket{method=\"Pull\",le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("latency_seconds_count{method=\"Pull\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("latency_seconds_sum{method=\"Pull\"} 5.5"), std::string::npos);
}

TEST(Metrics, SameSeriesSameObjectAndTypeClashThrows) {
  MetricsRegistry r;
  Counter& a = r.GetCounter("c_total", "c", {{"k", "v"}});
  EXPECT_EQ(&a, &r.GetCounter("c_total", "c", {{"k", "v"}}));
  EXPECT_NE(&a, &r.GetCounter("c_total", "c", {{"k", "w"}}));
  EXPECT_THROW(r.GetGauge("c_total", "c"), Error);
  EXPECT_THROW(r.GetGauge("bad name", "c"), Error);
}

TEST(Metrics, CollectorsRunBeforeRendering) {
  MetricsRegistry r;
  int calls = 0;
  r.AddCollector([&](MetricsRegistry& reg) { reg.GetGauge("rows", "rows").Set(++calls); });
  EXPECT_NE(r.PrometheusText().find("rows 1\n"), std::string::npos);
  EXPECT_NE(r.PrometheusText().find("rows 2\n"), std::string::npos);
}

}  // namespace
}  // namespace flotilla::trace
