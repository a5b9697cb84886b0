// bench_ps_ssd: a sparse table larger than its server's memory budget.
//
// wide_and_deep (1 server, 1 worker, sync, Adagrad, embeddings of dim 16)
// over a feature space of --rows ids per table, on an ssd table class with
// --budget_mb of memory for the server's rows. Three jobs under `flotilla
// launch`, each started here and ended by its pid:
//   fixed      memory tables, no prefill, a few steps: the server's peak RSS
//              without rows (binary, gRPC, dense tables) — the fixed
//              overhead (the ssd class's index, database buffers and spill
//              filter are inside the budget, so they are not counted here);
//   through    worker 0 first pulls ids [0, rows) of both tables (a table of
//              --rows rows), trains, saves after --save_at_step;
//   restarted  a new job loads that save and trains the remaining steps.
// Prints the server's peak RSS against budget + fixed overhead, and the
// restarted job's losses against the uninterrupted job's at the same steps.
//
//   bench_ps_ssd [--rows 20000000] [--budget_mb 1024] [--train_samples 64000]
//                [--save_at_step 500] [--dir /tmp/...] [--bin_dir build/bin]
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "bench_process.h"

namespace {

using namespace flotilla::bench;

struct Args {
  int64_t rows = 20'000'000, budget_mb = 1024, train_samples = 64000, save_at_step = 500;
  std::string dir;  // default: a fresh /tmp directory, removed afterwards
  std::string bin_dir = std::string(FLOTILLA_BUILD_DIR) + "/bin";  // flotilla and wide_and_deep
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The JSON after `tag` on each line of a log that has it.
std::vector<nlohmann::json> Tagged(const std::string& log, const std::string& tag) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find(tag);
    if (at != std::string::npos) out.push_back(nlohmann::json::parse(line.substr(at + tag.size()), nullptr, false));
  }
  return out;
}

std::map<int, double> Losses(const std::string& log) {
  std::map<int, double> out;
  const std::regex re(R"(worker 0 step (\d+) loss (\S+))");
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, re)) out[std::stoi(m[1])] = std::stod(m[2]);
  }
  return out;
}

struct Job {
  int code = 0;
  double seconds = 0;
  std::string log_dir;
  nlohmann::json worker;  // worker 0's last JSON line
};

// `ssd`: the ssd table class under the budget; otherwise memory tables.
Job RunJob(const Args& a, const std::string& name, bool ssd, std::vector<std::string> flags) {
  const int64_t vocab = (a.rows + 25) / 26;
  std::vector<std::string> argv = {a.bin_dir + "/flotilla", "launch", "--server_num", "1", "--worker_num", "1",
                                   "--log_dir", a.dir + "/" + name, a.bin_dir + "/wide_and_deep",
                                   "--mode", "sync", "--optimizer", "adagrad", "--embedding_dim", "16",
                                   "--hidden_size", "64", "--vocab_per_slot", std::to_string(vocab),
                                   "--test_samples", "5000", "--log_every", "50"};
  if (ssd) {
    argv.insert(argv.end(), {"--table_class", "ssd", "--memory_budget_mb", std::to_string(a.budget_mb),
                             "--ssd_path", a.dir + "/db"});
  }
  argv.insert(argv.end(), flags.begin(), flags.end());
  const auto start = std::chrono::steady_clock::now();
  // The servers save and load under the bench's directory (their model root).
  auto p = Spawn(argv, {"FLOTILLA_PS_MODEL_DIR=" + a.dir}, a.dir + "/" + name + ".out");
  Job j;
  j.code = WaitOrKill(p, std::chrono::seconds(7200));
  j.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  j.log_dir = a.dir + "/" + name;
  j.worker = LastJson(j.log_dir + "/workerlog.0");
  return j;
}

double PeakRss(const Job& j) {
  for (const auto& m : Tagged(ReadAll(j.log_dir + "/serverlog.0"), "pserver memory ")) {
    if (m.is_object()) return m["peak_rss_mb"].get<double>();
  }
  return -1;
}

nlohmann::json TableCounters(const Job& j, const std::string& table) {
  for (const auto& t : Tagged(ReadAll(j.log_dir + "/serverlog.0"), "pserver table ")) {
    if (t.is_object() && t["table"] == table) return t;
  }
  return nullptr;
}

void Print(const nlohmann::json& j) { std::cout << j.dump() << std::endl; }

int Main(const Args& in) {
  Args a = in;
  const bool own_dir = a.dir.empty();
  if (own_dir) a.dir = TempDir("bench_ps_ssd");
  std::filesystem::create_directories(a.dir);
  // The fixed overhead: a server with memory tables and (almost) no rows —
  // the budget covers the ssd class's index, buffers and filter.
  Job fixed = RunJob(a, "fixed", false, {"--train_samples", "640"});
  const double fixed_mb = PeakRss(fixed);
  Print({{"bench", "ps_ssd"}, {"phase", "fixed"}, {"exit", fixed.code}, {"peak_rss_mb", fixed_mb}});

  const std::string save = a.dir + "/save";
  Job through = RunJob(a, "through", true, {"--prefill_rows", std::to_string(a.rows), "--train_samples",
                                      std::to_string(a.train_samples), "--save_dir", save,
                                      "--save_at_step", std::to_string(a.save_at_step)});
  const double peak = PeakRss(through);
  const nlohmann::json deep = TableCounters(through, "deep_emb"), wide = TableCounters(through, "wide_w");
  const nlohmann::json prefill = LastJson(through.log_dir + "/workerlog.0");
  Print({{"bench", "ps_ssd"}, {"phase", "through"}, {"exit", through.code}, {"rows_per_table", a.rows},
         {"dim", 16}, {"rule", "adagrad"}, {"memory_budget_mb", a.budget_mb}, {"peak_rss_mb", peak},
         {"fixed_overhead_mb", fixed_mb}, {"seconds", through.seconds}, {"worker", through.worker},
         {"deep_emb", deep}, {"wide_w", wide}});
  const double bound = static_cast<double>(a.budget_mb) + fixed_mb;
  Print({{"bench", "ps_ssd"}, {"overhead", "peak_rss/(budget+fixed)"}, {"value", peak / bound},
         {"goal", "<= 1.0"}, {"met", peak > 0 && peak <= bound}});

  const int64_t skip = a.save_at_step * 64;  // wide_and_deep's batch size
  Job restarted = RunJob(a, "restarted", true, {"--train_samples", std::to_string(a.train_samples - skip),
                                          "--load_dir", save, "--skip_samples", std::to_string(skip)});
  const auto whole = Losses(ReadAll(through.log_dir + "/workerlog.0"));
  const auto after = Losses(ReadAll(restarted.log_dir + "/workerlog.0"));
  double max_diff = after.empty() ? INFINITY : 0;
  for (const auto& [step, loss] : after) {
    auto it = whole.find(step + static_cast<int>(a.save_at_step));
    max_diff = std::max(max_diff, it == whole.end() ? INFINITY : std::abs(it->second - loss));
  }
  Print({{"bench", "ps_ssd_restart"}, {"exit", restarted.code}, {"peak_rss_mb", PeakRss(restarted)},
         {"steps_compared", after.size()}, {"max_abs_loss_diff", max_diff},
         {"auc_through", through.worker["auc"]}, {"auc_restarted", restarted.worker["auc"]},
         {"goal", "same losses as without the restart"}, {"met", max_diff <= 1e-6}});
  if (own_dir) std::filesystem::remove_all(a.dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i], v = argv[i + 1];
    if (f == "--rows") a.rows = std::stoll(v);
    else if (f == "--budget_mb") a.budget_mb = std::stoll(v);
    else if (f == "--train_samples") a.train_samples = std::stoll(v);
    else if (f == "--save_at_step") a.save_at_step = std::stoll(v);
    else if (f == "--dir") a.dir = v;
    else if (f == "--bin_dir") a.bin_dir = v;
    else {
      std::cerr << "bench_ps_ssd: unknown flag " << f
                << " (expected --rows, --budget_mb, --train_samples, --save_at_step, --dir, --bin_dir)"
                << std::endl;
      return 2;
    }
  }
  return Main(a);
}
