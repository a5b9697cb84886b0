#include "fleet/heter_split.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "fleet/ps/table_spec.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::fleet {

namespace {

using Names = std::set<std::string>;
using Strings = std::vector<std::string>;

enum class Side { kSparse, kDense, kBoth };

bool IsForward(const OpDesc& op) {
  return (op.Role() & (kOpRoleBackward | kOpRoleOptimize | kOpRoleRPC)) == 0;
}

bool IsBackward(const OpDesc& op) {
  return (op.Role() & kOpRoleBackward) != 0 && (op.Role() & (kOpRoleOptimize | kOpRoleRPC)) == 0;
}

bool IsSparseLookup(const OpDesc& op) {
  if (op.type == "distributed_lookup_table") return true;
  return IsLookup(op) && (op.AttrOr<bool>("is_sparse", false) || op.AttrOr<bool>("is_distributed", false));
}

bool Contains(const Names& set, const std::string& name) { return set.count(name) > 0; }

void Insert(Names& set, const Strings& names) { set.insert(names.begin(), names.end()); }

// The program's split in progress: one side per op, and what each side computes.
struct Plan {
  std::vector<Side> side;
  Names sparse_fwd_out, dense_fwd_out, sparse_bwd_out, dense_bwd_out;
  Names boundary, boundary_grads;
};

// Automatic boundary: sparse ops are the lookups and the ops reading only
// what sparse ops computed; the boundary is what sparse ops compute and
// dense forward ops read.
Names FindBoundary(const Block& b) {
  Names sparse_out, boundary;
  for (const auto& op : b.ops()) {
    if (!IsForward(*op)) continue;
    const Strings ins = op->InputArgumentNames();
    const bool only_sparse = !ins.empty() && std::all_of(ins.begin(), ins.end(), [&](const auto& n) {
      return Contains(sparse_out, n);
    });
    if (IsSparseLookup(*op) || only_sparse) {
      Insert(sparse_out, op->OutputArgumentNames());
      continue;
    }
    for (const auto& n : ins) {
      if (Contains(sparse_out, n)) boundary.insert(n);
    }
  }
  FLOTILLA_CHECK(!sparse_out.empty(), InvalidArgument, "heter split: the program has no sparse "
                 "lookup (an embedding with is_sparse or is_distributed); nothing runs on the trainers");
  return boundary;
}

// The forward ops the boundary needs: those are the sparse forward.
void ClassifyForward(const Block& b, Plan& plan) {
  Names needed = plan.boundary;
  std::vector<bool> sparse(b.op_size(), false);
  for (size_t i = b.op_size(); i-- > 0;) {
    const OpDesc& op = b.op(i);
    if (!IsForward(op)) continue;
    const Strings outs = op.OutputArgumentNames();
    if (std::none_of(outs.begin(), outs.end(), [&](const auto& n) { return Contains(needed, n); })) continue;
    sparse[i] = true;
    Insert(needed, op.InputArgumentNames());
  }
  for (size_t i = 0; i < b.op_size(); ++i) {
    const OpDesc& op = b.op(i);
    if (!IsForward(op)) continue;
    plan.side[i] = sparse[i] ? Side::kSparse : Side::kDense;
    Insert(sparse[i] ? plan.sparse_fwd_out : plan.dense_fwd_out, op.OutputArgumentNames());
  }
  for (const auto& n : plan.boundary) {
    FLOTILLA_CHECK(Contains(plan.sparse_fwd_out, n), InvalidArgument, "heter split: boundary variable '",
                   n, "' is not computed by the forward pass");
  }
}

// A backward op is sparse when it reads the sparse side and nothing the
// dense side computed (boundary gradients are where the sides meet).
void ClassifyBackward(const Block& b, Plan& plan) {
  for (const auto& n : plan.boundary) plan.boundary_grads.insert(n + kGradSuffix);
  for (size_t i = 0; i < b.op_size(); ++i) {
    const OpDesc& op = b.op(i);
    if (!IsBackward(op)) continue;
    bool reads_sparse = false, reads_dense = false;
    for (const auto& n : op.InputArgumentNames()) {
      const bool at_boundary = Contains(plan.boundary, n) || Contains(plan.boundary_grads, n);
      reads_sparse |= Contains(plan.boundary_grads, n) || Contains(plan.sparse_bwd_out, n) ||
                      (Contains(plan.sparse_fwd_out, n) && !at_boundary);
      reads_dense |= !at_boundary && (Contains(plan.dense_fwd_out, n) || Contains(plan.dense_bwd_out, n));
    }
    const bool sparse = reads_sparse && !reads_dense;
    plan.side[i] = sparse ? Side::kSparse : Side::kDense;
    Insert(sparse ? plan.sparse_bwd_out : plan.dense_bwd_out, op.OutputArgumentNames());
  }
}

// Optimizer and PS ops: with the side computing what they read.
void ClassifyRest(const Block& b, Plan& plan) {
  for (size_t i = 0; i < b.op_size(); ++i) {
    const OpDesc& op = b.op(i);
    if (IsForward(op) || IsBackward(op)) continue;
    if (op.type == "ps_barrier" || op.type == "ps_geo_step") {
      FLOTILLA_THROW(Unimplemented, "heter split: heterogeneous parameter-server training runs in "
                     "async mode (strategy.a_sync = true, k_steps 0); the program has ", op.type);
    }
    if (op.type == "ps_trainer_init" || op.type == "ps_send") {
      plan.side[i] = Side::kBoth;
      continue;
    }
    if (op.type == "ps_prefetch_sparse") {  // for the trainer's lookups
      plan.side[i] = Side::kSparse;
      continue;
    }
    if (op.type == "ps_recv") {
      plan.side[i] = Side::kDense;
      continue;
    }
    const Strings ins = op.InputArgumentNames();
    const bool sparse = std::any_of(ins.begin(), ins.end(), [&](const auto& n) {
      return Contains(plan.sparse_bwd_out, n);
    });
    plan.side[i] = sparse ? Side::kSparse : Side::kDense;
  }
}

// Every value a side reads must be its own, fed, or persistable.
void CheckSides(const Block& b, const Plan& plan) {
  for (size_t i = 0; i < b.op_size(); ++i) {
    const OpDesc& op = b.op(i);
    if (plan.side[i] == Side::kBoth) continue;
    const bool dense = plan.side[i] == Side::kDense;
    for (const auto& n : op.InputArgumentNames()) {
      const bool foreign = dense ? !Contains(plan.boundary, n) && (Contains(plan.sparse_fwd_out, n) ||
                                                                  Contains(plan.sparse_bwd_out, n))
                                 : !Contains(plan.boundary_grads, n) && (Contains(plan.dense_fwd_out, n) ||
                                                                        Contains(plan.dense_bwd_out, n));
      FLOTILLA_CHECK(!foreign, InvalidArgument, "heter split: ", dense ? "dense" : "sparse", " op ",
                     op.type, " reads '", n, "', which the ", dense ? "sparse" : "dense",
                     " side computes; list the variables crossing to the dense side in "
                     "strategy.heter_configs.boundary_vars");
    }
  }
}

// The part of ps_send one side pushes: the sparse tables (trainer) or the
// dense ones (heter).
OpDesc SendPart(const OpDesc& send, bool sparse) {
  OpDesc op = send;
  if (sparse) {
    op.In("Grad", {}).In("LearningRate", {}).Set("dense_names", Strings{}).Set("dense_row_widths",
                                                                              std::vector<int64_t>{});
  } else {
    op.In("SparseGrad", {}).In("SparseLearningRate", {}).Set("sparse_names", Strings{});
  }
  return op;
}

// A copy of the program keeping the ops `keep` selects (ps_send reduced to
// that side's pushes).
Program KeepOps(const Program& program, const std::function<bool(size_t)>& keep,
                std::optional<bool> send_sparse) {
  Program p = program.Clone();
  Block& b = p.global_block();
  for (size_t i = b.op_size(); i-- > 0;) {
    if (!keep(i)) {
      b.RemoveOp(i);
    } else if (b.op(i).type == "ps_send" && send_sparse.has_value()) {
      b.op(i) = SendPart(b.op(i), *send_sparse);
    }
  }
  p.BumpVersion();
  return p;
}

Strings Sorted(const Names& names) { return {names.begin(), names.end()}; }

}  // namespace

HeterSplit SplitHeterProgram(const Program& program, const Strings& boundary) {
  const Block& b = program.global_block();
  Plan plan;
  plan.side.assign(b.op_size(), Side::kDense);
  plan.boundary = boundary.empty() ? FindBoundary(b) : Names(boundary.begin(), boundary.end());
  FLOTILLA_CHECK(!plan.boundary.empty(), InvalidArgument, "heter split: no variable crosses from "
                 "the sparse lookups to the dense part of the program");
  ClassifyForward(b, plan);
  ClassifyBackward(b, plan);
  ClassifyRest(b, plan);
  CheckSides(b, plan);

  HeterSplit s;
  const size_t first_backward = [&] {
    for (size_t i = 0; i < b.op_size(); ++i) {
      const std::string& type = b.op(i).type;
      if (!IsForward(b.op(i)) && type != "ps_trainer_init" && type != "ps_prefetch_sparse") return i;
    }
    return b.op_size();
  }();
  auto is = [&](size_t i, Side side) { return plan.side[i] == side || plan.side[i] == Side::kBoth; };
  s.trainer_forward = KeepOps(program, [&](size_t i) {
    return i < first_backward && is(i, Side::kSparse) && b.op(i).type != "ps_send";
  }, std::nullopt);
  s.heter = KeepOps(program, [&](size_t i) { return is(i, Side::kDense); }, false);
  s.trainer_backward = KeepOps(program, [&](size_t i) {
    return i >= first_backward && is(i, Side::kSparse) && b.op(i).type != "ps_trainer_init";
  }, true);

  s.boundary = Sorted(plan.boundary);
  Names reads_dense, reads_sparse_bwd;
  for (size_t i = 0; i < b.op_size(); ++i) {
    if (plan.side[i] == Side::kBoth) continue;
    if (plan.side[i] == Side::kDense) Insert(reads_dense, b.op(i).InputArgumentNames());
    if (plan.side[i] == Side::kSparse && i >= first_backward) Insert(reads_sparse_bwd, b.op(i).InputArgumentNames());
  }
  for (const auto& n : reads_dense) {
    const VarDesc* v = b.FindVar(n);
    if (v != nullptr && v->is_data) s.heter_feeds.push_back(n);
  }
  for (const auto& g : plan.boundary_grads) {
    if (Contains(plan.dense_bwd_out, g)) s.boundary_grads.push_back(g);
  }
  for (const auto& n : reads_sparse_bwd) {
    const VarDesc* v = b.FindVar(n);
    if (Contains(plan.sparse_fwd_out, n) && (v == nullptr || !v->persistable)) s.kept.push_back(n);
  }
  return s;
}

}  // namespace flotilla::fleet
