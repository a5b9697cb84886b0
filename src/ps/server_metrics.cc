#include "ps/server_metrics.h"

#include <mutex>
#include <set>

#include "flotilla/trace/metrics.h"
#include "flotilla/trace/standard_metrics.h"
#include "ps/server_state.h"

namespace flotilla::ps {

namespace {
std::mutex mu;
std::set<const PsServer::State*> watched;  // guarded by mu

void Collect(trace::MetricsRegistry&) {
  std::lock_guard<std::mutex> lock(mu);
  for (const PsServer::State* s : watched) {
    for (const auto& [name, table] : s->sparse) {
      trace::SetTableRows(trace::Intern(name), table->size());
    }
  }
}
}  // namespace

void WatchTables(const PsServer::State* state) {
  static std::once_flag once;
  std::call_once(once, [] { trace::MetricsRegistry::Global().AddCollector(Collect); });
  std::lock_guard<std::mutex> lock(mu);
  watched.insert(state);
}

void UnwatchTables(const PsServer::State* state) {
  std::lock_guard<std::mutex> lock(mu);
  watched.erase(state);
}

}  // namespace flotilla::ps
