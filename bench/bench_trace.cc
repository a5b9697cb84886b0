// Costs of recording, per event (Google Benchmark): a span with tracing off
// (what every instrumented site pays by default), a span with tracing on
// (two clock reads and a copy into the thread's ring), with arguments, a
// flight-recorder record, metric updates and the executor's per-op
// activity stores. Goal: a span on ≤ 100 ns.
//
//   bench_trace [--benchmark_filter=Span]
#include <benchmark/benchmark.h>

#include "flotilla/trace/activity.h"
#include "flotilla/trace/flight_recorder.h"
#include "flotilla/trace/metrics.h"
#include "flotilla/trace/trace.h"
#include "trace/thread_buffer.h"

namespace {

using namespace flotilla::trace;

constexpr int kBatch = 1024;  // spans per iteration; the ring is drained between batches

void Drain() {
  BufferRegistry::Get().Local().Drain([](const Event&) {});
}

template <typename Fn>
void Batched(benchmark::State& state, bool enabled, Fn&& record) {
  detail::g_enabled = enabled;
  Drain();
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) record(i);
    state.PauseTiming();
    Drain();
    state.ResumeTiming();
  }
  detail::g_enabled = false;
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kBatch),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_SpanOff(benchmark::State& state) {
  const NameId name = Intern("mul_grad");
  Batched(state, false, [&](int i) {
    Span s(Category::kOp, name);
    s.ArgName("output", name);
    benchmark::DoNotOptimize(i);
  });
}
BENCHMARK(BM_SpanOff);

void BM_SpanOn(benchmark::State& state) {
  const NameId name = Intern("mul_grad");
  Batched(state, true, [&](int) { Span s(Category::kOp, name); });
}
BENCHMARK(BM_SpanOn);

void BM_SpanOnSixArgs(benchmark::State& state) {
  const NameId name = Intern("allreduce");
  Batched(state, true, [&](int i) {
    Span s(Category::kCollective, name);
    s.Arg("seq", i).Arg("bytes", 4 << 20).Arg("bucket", 3).Arg("comm", 1).ArgName("group", name)
        .ArgName("backend", name);
  });
}
BENCHMARK(BM_SpanOnSixArgs);

void BM_CounterSample(benchmark::State& state) {
  const NameId name = Intern("loss");
  Batched(state, true, [&](int i) { Count(name, i * 0.5); });
}
BENCHMARK(BM_CounterSample);

void BM_FlightRecord(benchmark::State& state) {
  FlightRecorder fr(2000);
  FlightRecord r;
  r.kind = Intern("allreduce");
  for (auto _ : state) {
    const uint64_t id = fr.Add(r);
    fr.MarkStarted(id);
    fr.MarkEnded(id, true);
  }
}
BENCHMARK(BM_FlightRecord);

void BM_ActivityPerOp(benchmark::State& state) {
  const NameId op = Intern("mul"), out = Intern("fc_0.tmp_0");
  for (auto _ : state) {
    EnterOp(op, out);
    LeaveOp();
  }
}
BENCHMARK(BM_ActivityPerOp);

void BM_HistogramObserve(benchmark::State& state) {
  Histogram h(LatencyBuckets());
  double v = 0.001;
  for (auto _ : state) h.Observe(v += 1e-6);
}
BENCHMARK(BM_HistogramObserve);

}  // namespace

BENCHMARK_MAIN();
