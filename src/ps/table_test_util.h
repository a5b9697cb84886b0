// Table configurations shared by the dense and sparse table tests: a dense
// parameter "w" initialised to 1, and an embedding "emb" of 4 shards
// initialised uniformly in [-1, 1) with seed 9; both SGD at 0.5 unless told.
#pragma once

#include <cstdint>

#include "flotilla/ps/dense_table.h"
#include "flotilla/ps/sparse_table.h"

namespace flotilla::ps::table_testing {

inline DenseTableConfig DenseConfig(int64_t numel, UpdateRuleConfig rule = UpdateRuleConfig::Sgd(0.5f)) {
  DenseTableConfig c;
  c.name = "w";
  c.numel = numel;
  c.rule = MakeUpdateRule(rule);
  c.initializer = InitializerConfig::Constant(1.0f);
  return c;
}

inline SparseTableConfig SparseConfig(int64_t dim, UpdateRuleConfig rule = UpdateRuleConfig::Sgd(0.5f)) {
  SparseTableConfig c;
  c.name = "emb";
  c.dim = dim;
  c.rule = MakeUpdateRule(rule);
  c.initializer = InitializerConfig::Uniform(-1.0f, 1.0f, 9);
  c.num_shards = 4;
  return c;
}

}  // namespace flotilla::ps::table_testing
