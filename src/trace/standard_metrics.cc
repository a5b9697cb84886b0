#include "flotilla/trace/standard_metrics.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>

#include "flotilla/trace/activity.h"
#include "flotilla/trace/metrics.h"
#include "flotilla/trace/trace.h"

namespace flotilla::trace {

namespace {

MetricsRegistry& R() { return MetricsRegistry::Global(); }

double ResidentBytes() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// Per-key metric handles, looked up once per key. Allocated once and never
// destroyed: communication threads may record while the process exits.
template <typename Key, typename Handles>
class HandleCache {
 public:
  template <typename Make>
  Handles& Get(const Key& key, Make make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) it = map_.emplace(key, make()).first;
    return it->second;
  }

 private:
  std::mutex mu_;
  std::map<Key, Handles> map_;
};

struct StepMetrics {
  Histogram& seconds = R().GetHistogram("flotilla_step_seconds", "Wall time of a training step",
                                        LatencyBuckets());
  Counter& steps = R().GetCounter("flotilla_steps_total", "Training steps run");
  Gauge& step = R().GetGauge("flotilla_step", "The current step");
  Counter& samples = R().GetCounter("flotilla_samples_total", "Samples consumed by steps");
  Gauge& compute = R().GetGauge("flotilla_step_compute_seconds",
                                "Last step's time not blocked on communication");
  Gauge& comm = R().GetGauge("flotilla_step_comm_seconds",
                             "Last step's time blocked on collectives and parameter-server calls");
  StepMetrics() {
    R().AddCollector([](MetricsRegistry& r) {
      r.GetGauge("process_resident_memory_bytes", "Resident memory size in bytes")
          .Set(ResidentBytes());
    });
  }
};

StepMetrics& Steps() {
  static auto* m = new StepMetrics();
  return *m;
}

struct KindMetrics {
  Histogram* seconds;
  Counter* bytes;
};

// Bytes of collectives and parameter-server calls so far, for the
// timeline's counter track.
std::atomic<int64_t> g_comm_bytes{0};

}  // namespace

void RecordStep(double seconds, int64_t samples, double comm_seconds) {
  StepMetrics& m = Steps();
  m.seconds.Observe(seconds);
  m.steps.Add();
  m.step.Set(static_cast<double>(Step()));
  m.samples.Add(static_cast<double>(samples));
  m.comm.Set(comm_seconds);
  m.compute.Set(seconds - comm_seconds);
  if (!Enabled()) return;
  Count(FLOTILLA_TRACE_NAME("step"), static_cast<double>(Step()));
  if (seconds > 0 && samples > 0) {
    Count(FLOTILLA_TRACE_NAME("samples_per_sec"), static_cast<double>(samples) / seconds);
  }
  Count(FLOTILLA_TRACE_NAME("comm_bytes"), static_cast<double>(g_comm_bytes.load()));
}

void RecordLoss(double value) {
  static Gauge& loss = R().GetGauge("flotilla_loss", "Last fetched loss");
  loss.Set(value);
  Count(FLOTILLA_TRACE_NAME("loss"), value);
}

void RecordCollective(NameId kind, int64_t bytes, double seconds) {
  static auto* cache = new HandleCache<NameId, KindMetrics>();
  KindMetrics& m = cache->Get(kind, [&] {
    const Labels l = {{"kind", NameOf(kind)}};
    return KindMetrics{
        &R().GetHistogram("flotilla_collective_seconds", "Collective latency by kind",
                          LatencyBuckets(), l),
        &R().GetCounter("flotilla_collective_bytes_total", "Bytes in collectives by kind", l)};
  });
  m.seconds->Observe(seconds);
  m.bytes->Add(static_cast<double>(bytes));
  g_comm_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

void RecordRpc(NameId method, NameId table, int64_t bytes, double seconds, bool ok) {
  static auto* cache = new HandleCache<std::pair<NameId, NameId>, KindMetrics>();
  KindMetrics& m = cache->Get(std::make_pair(method, table), [&] {
    return KindMetrics{
        &R().GetHistogram("flotilla_rpc_seconds", "Parameter-server call latency",
                          LatencyBuckets(), {{"method", NameOf(method)}, {"table", NameOf(table)}}),
        &R().GetCounter("flotilla_rpc_bytes_total", "Bytes sent in parameter-server calls",
                        {{"method", NameOf(method)}})};
  });
  m.seconds->Observe(seconds);
  m.bytes->Add(static_cast<double>(bytes));
  g_comm_bytes.fetch_add(bytes, std::memory_order_relaxed);
  if (!ok) {
    R().GetCounter("flotilla_rpc_errors_total", "Failed parameter-server calls",
                   {{"method", NameOf(method)}})
        .Add();
  }
}

void RecordServed(NameId method, NameId table, double seconds) {
  static auto* cache = new HandleCache<std::pair<NameId, NameId>, Histogram*>();
  Histogram* h = cache->Get(std::make_pair(method, table), [&] {
    return &R().GetHistogram("flotilla_rpc_served_seconds",
                             "Time to handle a parameter-server call", LatencyBuckets(),
                             {{"method", NameOf(method)}, {"table", NameOf(table)}});
  });
  h->Observe(seconds);
}

InputWait::InputWait() : start_ns_(MonoNs()) {}

InputWait::~InputWait() {
  static Counter& waited = R().GetCounter("flotilla_input_wait_seconds_total",
                                          "Time training loops waited for input batches");
  const int64_t end = MonoNs();
  waited.Add(static_cast<double>(end - start_ns_) / 1e9);
  Span span(Category::kReader, FLOTILLA_TRACE_NAME("wait for input"));
  span.StartedAt(start_ns_);
}

void SetTableRows(NameId table, int64_t rows) {
  R().GetGauge("flotilla_ps_table_rows", "Rows held by a parameter-server table",
               {{"table", NameOf(table)}})
      .Set(static_cast<double>(rows));
  if (Enabled()) Count(Intern("rows " + NameOf(table)), static_cast<double>(rows));
}

namespace {

Counter& AuthRefusalCounter(std::string_view service, std::string_view reason) {
  return R().GetCounter("flotilla_auth_refusals_total",
                        "Peers refused or closed before proving the job secret, by reason",
                        {{"service", std::string(service)}, {"reason", std::string(reason)}});
}

}  // namespace

void RecordAuthRefusal(std::string_view service, std::string_view reason) {
  AuthRefusalCounter(service, reason).Add();
}

double AuthRefusals(std::string_view service, std::string_view reason) {
  return AuthRefusalCounter(service, reason).value();
}

}  // namespace flotilla::trace
