#include "flotilla/trace/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <variant>

#include "flotilla/common/enforce.h"

namespace flotilla::trace {

struct MetricsRegistry::Family {
  std::string help;
  const char* type;
  // Series by their rendered label set ("{a=\"1\"}").
  std::map<std::string, std::pair<Labels, std::variant<std::unique_ptr<Counter>,
                                                       std::unique_ptr<Gauge>,
                                                       std::unique_ptr<Histogram>>>>
      series;
};

namespace {

bool ValidName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

std::string LabelText(const Labels& labels, const std::string& extra = "") {
  if (labels.empty() && extra.empty()) return "";
  std::string out = "{";
  for (const auto& [k, v] : labels) {
    if (out.size() > 1) out += ",";
    out += k + "=\"" + EscapeLabelValue(v) + "\"";
  }
  if (!extra.empty()) out += (out.size() > 1 ? "," : "") + extra;
  return out + "}";
}

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  FLOTILLA_ENFORCE(std::is_sorted(bounds_.begin(), bounds_.end()),
                   "histogram bucket bounds must ascend");
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i] = 0;
}

void Histogram::Observe(double v) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::CumulativeCounts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  uint64_t acc = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) out[i] = acc += buckets_[i].load();
  return out;
}

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> b = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                        0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5,
                                        5,      10,      30,     60};
  return b;
}

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry& MetricsRegistry::Global() {
  static auto* registry = new MetricsRegistry();
  return *registry;
}

MetricsRegistry::Family& MetricsRegistry::GetFamily(std::string_view name, std::string_view help,
                                                    const char* type) {
  FLOTILLA_ENFORCE(ValidName(name), "metric name '", name,
                   "' is not valid (expected [a-zA-Z_:][a-zA-Z0-9_:]*)");
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), std::make_unique<Family>()).first;
    it->second->help = std::string(help);
    it->second->type = type;
  }
  FLOTILLA_ENFORCE(std::string_view(it->second->type) == type, "metric '", name, "' is a ",
                   it->second->type, ", not a ", type);
  return *it->second;
}

Counter& MetricsRegistry::GetCounter(std::string_view name, std::string_view help,
                                     const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = GetFamily(name, help, "counter").series[LabelText(labels)];
  if (slot.second.index() != 0 || !std::get<0>(slot.second)) {
    slot = {labels, std::make_unique<Counter>()};
  }
  return *std::get<0>(slot.second);
}

Gauge& MetricsRegistry::GetGauge(std::string_view name, std::string_view help,
                                 const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = GetFamily(name, help, "gauge").series[LabelText(labels)];
  if (slot.second.index() != 1) slot = {labels, std::make_unique<Gauge>()};
  return *std::get<1>(slot.second);
}

Histogram& MetricsRegistry::GetHistogram(std::string_view name, std::string_view help,
                                         const std::vector<double>& bounds, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = GetFamily(name, help, "histogram").series[LabelText(labels)];
  if (slot.second.index() != 2) slot = {labels, std::make_unique<Histogram>(bounds)};
  return *std::get<2>(slot.second);
}

void MetricsRegistry::AddCollector(std::function<void(MetricsRegistry&)> collect) {
  std::lock_guard<std::mutex> lock(mu_);
  collectors_.push_back(std::move(collect));
}

void MetricsRegistry::Collect() {
  std::vector<std::function<void(MetricsRegistry&)>> collectors;
  {
    std::lock_guard<std::mutex> lock(mu_);
    collectors = collectors_;
  }
  for (auto& c : collectors) c(*this);
}

std::string MetricsRegistry::PrometheusText() {
  Collect();
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + f->help + "\n# TYPE " + name + " " + f->type + "\n";
    for (const auto& [text, entry] : f->series) {
      const Labels& labels = entry.first;
      if (entry.second.index() == 0) {
        out += name + text + " " + Number(std::get<0>(entry.second)->value()) + "\n";
      } else if (entry.second.index() == 1) {
        out += name + text + " " + Number(std::get<1>(entry.second)->value()) + "\n";
      } else {
        const Histogram& h = *std::get<2>(entry.second);
        const auto counts = h.CumulativeCounts();
        for (size_t i = 0; i < counts.size(); ++i) {
          const std::string le = i < h.bounds().size() ? Number(h.bounds()[i]) : "+Inf";
          out += name + "_bucket" + LabelText(labels, "le=\"" + le + "\"") + " " +
                 std::to_string(counts[i]) + "\n";
        }
        out += name + "_sum" + text + " " + Number(h.sum()) + "\n";
        out += name + "_count" + text + " " + std::to_string(counts.back()) + "\n";
      }
    }
  }
  return out;
}

void MetricsRegistry::ForEach(
    const std::function<void(const std::string&, const Labels&, const char*, double)>& fn) {
  Collect();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, f] : families_) {
    for (const auto& [text, entry] : f->series) {
      const Labels& labels = entry.first;
      if (entry.second.index() == 0) fn(name, labels, f->type, std::get<0>(entry.second)->value());
      if (entry.second.index() == 1) fn(name, labels, f->type, std::get<1>(entry.second)->value());
      if (entry.second.index() == 2) {
        const Histogram& h = *std::get<2>(entry.second);
        fn(name + "_count", labels, f->type, static_cast<double>(h.count()));
        fn(name + "_sum", labels, f->type, h.sum());
      }
    }
  }
}

}  // namespace flotilla::trace
