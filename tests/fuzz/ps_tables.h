// The tables the parameter-server fuzz targets serve and load: dense "w"
// (10 floats, SGD) and "m" (6 floats in rows of 3, Adam); sparse "emb" (rows
// of 4, Adagrad, created at once) and "ctr" (rows of 2, SGD, created at the
// second sighting, dropped after a pass unseen).
#pragma once

#include <string>
#include <vector>

#include "flotilla/ps/dense_table.h"
#include "flotilla/ps/server.h"
#include "flotilla/ps/sparse_table.h"
#include "flotilla/ps/update_rule.h"

namespace flotilla::fuzz {

inline const std::vector<std::string> kFuzzDenseTables = {"w", "m"};
inline const std::vector<std::string> kFuzzSparseTables = {"emb", "ctr"};

inline ps::DenseTableConfig FuzzDenseConfig(const std::string& name) {
  ps::DenseTableConfig c;
  c.name = name;
  c.numel = name == "w" ? 10 : 6;
  c.row_width = name == "w" ? 1 : 3;
  c.rule = ps::MakeUpdateRule(name == "w" ? ps::UpdateRuleConfig::Sgd(0.1f)
                                          : ps::UpdateRuleConfig::Adam(0.01f));
  return c;
}

inline ps::SparseTableConfig FuzzSparseConfig(const std::string& name) {
  ps::SparseTableConfig c;
  c.name = name;
  c.dim = name == "emb" ? 4 : 2;
  c.num_shards = 2;
  c.rule = ps::MakeUpdateRule(name == "emb" ? ps::UpdateRuleConfig::Adagrad(0.1f)
                                            : ps::UpdateRuleConfig::Sgd(0.1f));
  if (name != "emb") {
    c.accessor.admit_count = 2;
    c.accessor.delete_after_unseen_passes = 1;
  }
  return c;
}

// A server (not started) holding the four tables, with rows pushed to
// "emb" and "m".
inline std::unique_ptr<ps::PsServer> FuzzServerWithRows(ps::PsServerOptions options = {}) {
  auto server = std::make_unique<ps::PsServer>(std::move(options));
  for (const auto& name : kFuzzDenseTables) server->AddDenseTable(FuzzDenseConfig(name));
  for (const auto& name : kFuzzSparseTables) server->AddSparseTable(FuzzSparseConfig(name));
  const std::vector<int64_t> keys = {3, 17, -5};
  const std::vector<float> grads(12, 0.25f);
  server->sparse("emb").Push(keys, grads, std::nullopt);
  for (const auto& b : server->dense("m").blocks()) {
    server->dense("m").Push(b.id, std::vector<float>(b.length, 0.5f), std::nullopt);
  }
  return server;
}

}  // namespace flotilla::fuzz
