// Metrics: counters, gauges and histograms with labels, rendered in the
// Prometheus text exposition format (version 0.0.4) for /metrics.
//
//   static auto& bytes = MetricsRegistry::Global().GetCounter(
//       "flotilla_collective_bytes_total", "Bytes reduced or broadcast", {{"kind", "allreduce"}});
//   bytes.Add(n);
//
// Get* looks the series up under a lock: keep the returned reference (it
// lives as long as the process) where a call site repeats. Updates are
// lock-free atomics. Names must match [a-zA-Z_:][a-zA-Z0-9_:]*; asking for
// one name with two types throws InvalidArgument.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace flotilla::trace {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Add(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Cumulative buckets with upper bounds `bounds` (ascending) and +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Observations <= bounds[i] (cumulative), then the total count.
  std::vector<uint64_t> CumulativeCounts() const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // per bucket, not cumulative
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// Latency buckets in seconds, 100 µs to 60 s.
const std::vector<double>& LatencyBuckets();

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  // The process's registry.
  static MetricsRegistry& Global();

  Counter& GetCounter(std::string_view name, std::string_view help, const Labels& labels = {});
  Gauge& GetGauge(std::string_view name, std::string_view help, const Labels& labels = {});
  Histogram& GetHistogram(std::string_view name, std::string_view help,
                          const std::vector<double>& bounds, const Labels& labels = {});
  // Runs before every render: sets gauges that are read, not pushed
  // (resident memory, table sizes). Thread-safe; runs without the lock.
  void AddCollector(std::function<void(MetricsRegistry&)> collect);

  // Every series in the text format, families sorted by name.
  std::string PrometheusText();
  // Visits every series: fn(name, labels, type, value) where histograms give
  // their count under name + "_count" and their sum under name + "_sum".
  void ForEach(const std::function<void(const std::string&, const Labels&, const char*,
                                        double)>& fn);

 private:
  struct Family;
  // Requires mu_.
  Family& GetFamily(std::string_view name, std::string_view help, const char* type);
  void Collect();

  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Family>, std::less<>> families_;  // guarded by mu_
  std::vector<std::function<void(MetricsRegistry&)>> collectors_;        // guarded by mu_
};

// Escapes a label value for the text format (backslash, quote, newline).
std::string EscapeLabelValue(std::string_view v);

}  // namespace flotilla::trace
