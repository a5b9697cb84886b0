#include "fleet/ps/table_spec.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "flotilla/ps/update_rule.h"

namespace flotilla::fleet {

namespace {

nlohmann::json ToJson(const PsTableInfo& t) {
  return {{"name", t.name},         {"sparse", t.sparse},      {"distributed", t.distributed},
          {"dims", t.dims},         {"grad", t.grad},          {"optimizer", t.optimizer},
          {"lr", t.learning_rate},  {"beta1", t.beta1},        {"beta2", t.beta2},
          {"epsilon", t.epsilon},   {"momentum", t.momentum},  {"use_nesterov", t.use_nesterov},
          {"init_kind", t.init_kind}, {"init_a", t.init_a},
          {"init_b", t.init_b},     {"init_seed", t.init_seed}};
}

PsTableInfo FromJson(const nlohmann::json& j) {
  PsTableInfo t;
  t.name = j.at("name").get<std::string>();
  t.sparse = j.at("sparse").get<bool>();
  t.distributed = j.at("distributed").get<bool>();
  t.dims = j.at("dims").get<Dims>();
  t.grad = j.at("grad").get<std::string>();
  t.optimizer = j.at("optimizer").get<std::string>();
  t.learning_rate = j.at("lr").get<float>();
  t.beta1 = j.at("beta1").get<float>();
  t.beta2 = j.at("beta2").get<float>();
  t.epsilon = j.at("epsilon").get<float>();
  t.momentum = j.at("momentum").get<float>();
  t.use_nesterov = j.at("use_nesterov").get<bool>();
  t.init_kind = j.at("init_kind").get<std::string>();
  t.init_a = j.at("init_a").get<float>();
  t.init_b = j.at("init_b").get<float>();
  t.init_seed = j.at("init_seed").get<uint64_t>();
  return t;
}

}  // namespace

std::string TablesToJson(const std::vector<PsTableInfo>& tables) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& t : tables) list.push_back(ToJson(t));
  return list.dump();
}

std::vector<PsTableInfo> TablesFromJson(const std::string& text, const std::string& what) {
  try {
    std::vector<PsTableInfo> out;
    for (const auto& j : nlohmann::json::parse(text)) out.push_back(FromJson(j));
    return out;
  } catch (const nlohmann::json::exception& e) {
    FLOTILLA_THROW(Corruption, what, ": table list is malformed: ", e.what());
  }
}

int64_t RowWidth(const Dims& dims) {
  int64_t w = 1;
  for (size_t i = 1; i < dims.size(); ++i) w *= dims[i];
  return w;
}

int64_t Numel(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

ps::UpdateRuleConfig RuleConfig(const PsTableInfo& t) {
  if (t.optimizer == "sgd") return ps::UpdateRuleConfig::Sgd(t.learning_rate);
  if (t.optimizer == "momentum") {
    return ps::UpdateRuleConfig::Momentum(t.learning_rate, t.momentum, t.use_nesterov);
  }
  if (t.optimizer == "adagrad") return ps::UpdateRuleConfig::Adagrad(t.learning_rate, t.epsilon);
  if (t.optimizer == "adam") {
    return ps::UpdateRuleConfig::Adam(t.learning_rate, t.beta1, t.beta2, t.epsilon);
  }
  FLOTILLA_THROW(Unimplemented, "parameter '", t.name, "': optimizer '", t.optimizer,
                 "' cannot run on parameter servers (sgd, momentum, adagrad, adam can)");
}

ps::InitializerConfig InitConfig(const PsTableInfo& t) {
  if (t.init_kind == "uniform") return ps::InitializerConfig::Uniform(t.init_a, t.init_b, t.init_seed);
  if (t.init_kind == "normal") return ps::InitializerConfig::Normal(t.init_a, t.init_b, t.init_seed);
  return ps::InitializerConfig::Constant(t.init_a);
}

std::string SparseSettingsToJson(const SparseTableSettings& s) {
  const ps::SparseAccessorConfig& a = s.accessor;
  return nlohmann::json{{"table_class", s.table_class},
                        {"memory_budget_mb", s.memory_budget_mb},
                        {"ssd_path", s.ssd_path},
                        {"click_var", s.click_var},
                        {"admit_count", a.admit_count},
                        {"admit_probability", a.admit_probability},
                        {"delete_after_unseen_passes", a.delete_after_unseen_passes},
                        {"delete_threshold", a.delete_threshold},
                        {"show_click_decay_rate", a.show_click_decay_rate},
                        {"nonclk_coeff", a.nonclk_coeff},
                        {"click_coeff", a.click_coeff}}
      .dump();
}

SparseTableSettings SparseSettingsFromJson(const std::string& text, const std::string& what) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    SparseTableSettings s;
    s.table_class = j.at("table_class").get<std::string>();
    s.memory_budget_mb = j.at("memory_budget_mb").get<int64_t>();
    s.ssd_path = j.at("ssd_path").get<std::string>();
    s.click_var = j.at("click_var").get<std::string>();
    ps::SparseAccessorConfig& a = s.accessor;
    a.admit_count = j.at("admit_count").get<int>();
    a.admit_probability = j.at("admit_probability").get<float>();
    a.delete_after_unseen_passes = j.at("delete_after_unseen_passes").get<int>();
    a.delete_threshold = j.at("delete_threshold").get<float>();
    a.show_click_decay_rate = j.at("show_click_decay_rate").get<float>();
    a.nonclk_coeff = j.at("nonclk_coeff").get<float>();
    a.click_coeff = j.at("click_coeff").get<float>();
    return s;
  } catch (const nlohmann::json::exception& e) {
    FLOTILLA_THROW(Corruption, what, ": sparse table settings are malformed: ", e.what());
  }
}

namespace {

// Where ssd tables keep their databases: the configured path, else
// FLOTILLA_PS_SSD_DIR, else the temporary directory.
std::string SsdBase(const SparseTableSettings& s) {
  if (!s.ssd_path.empty()) return s.ssd_path;
  if (const char* dir = std::getenv("FLOTILLA_PS_SSD_DIR"); dir != nullptr && *dir) return dir;
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/flotilla-ps-ssd";
}

// The bytes of one row of a table's in memory (values, rule state, key and
// index), for sharing a server's budget among its tables.
int64_t RowCost(const PsTableInfo& t) {
  const int64_t dim = RowWidth(t.dims);
  return (dim + ps::MakeUpdateRule(RuleConfig(t))->StateSize(dim) + 5) * 4 + 76;
}

}  // namespace

std::string SsdServerDir(const SparseTableSettings& settings, int server_index) {
  return StrCat(SsdBase(settings), "/server", server_index, "-", getpid());
}

void RemoveStaleSsdDirs(const SparseTableSettings& settings) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(SsdBase(settings), ec)) {
    const std::string name = entry.path().filename().string();
    const size_t dash = name.rfind('-');
    if (name.rfind("server", 0) != 0 || dash == std::string::npos) continue;
    const std::string pid = name.substr(dash + 1);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (fs::exists("/proc/" + pid)) continue;  // its server still runs
    fs::remove_all(entry.path(), ec);
  }
}

void AddTables(ps::PsServer& server, const std::vector<PsTableInfo>& tables,
               int64_t min_block_size, const SparseTableSettings& sparse) {
  const auto table_class = ps::ParseSparseTableClass(sparse.table_class);
  int64_t total_cost = 0;
  for (const auto& t : tables) total_cost += t.sparse ? RowCost(t) : 0;
  for (const auto& t : tables) {
    auto rule = ps::MakeUpdateRule(RuleConfig(t));
    if (t.sparse) {
      ps::SparseTableConfig c{.name = t.name, .dim = RowWidth(t.dims), .rule = rule,
                              .initializer = InitConfig(t), .accessor = sparse.accessor,
                              .table_class = table_class};
      if (table_class == ps::SparseTableClass::kSsd) {
        FLOTILLA_CHECK(sparse.memory_budget_mb > 0, InvalidArgument, "sparse table '", t.name,
                       "': table_class ssd needs memory_budget_mb > 0");
        c.ssd_path = SsdServerDir(sparse, server.options().server_index) + "/" + t.name;
        c.memory_budget_bytes = (sparse.memory_budget_mb << 20) * RowCost(t) / total_cost;
      }
      server.AddSparseTable(std::move(c));
    } else {
      server.AddDenseTable({.name = t.name, .numel = Numel(t.dims), .row_width = RowWidth(t.dims),
                            .rule = rule, .min_block_size = min_block_size});
    }
  }
}

}  // namespace flotilla::fleet
