#include "fleet/ps/table_spec.h"

#include <nlohmann/json.hpp>

#include "flotilla/common/enforce.h"
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

void AddTables(ps::PsServer& server, const std::vector<PsTableInfo>& tables,
               int64_t min_block_size) {
  for (const auto& t : tables) {
    auto rule = ps::MakeUpdateRule(RuleConfig(t));
    if (t.sparse) {
      server.AddSparseTable({.name = t.name, .dim = RowWidth(t.dims), .rule = rule,
                             .initializer = InitConfig(t)});
    } else {
      server.AddDenseTable({.name = t.name, .numel = Numel(t.dims), .row_width = RowWidth(t.dims),
                            .rule = rule, .min_block_size = min_block_size});
    }
  }
}

}  // namespace flotilla::fleet
