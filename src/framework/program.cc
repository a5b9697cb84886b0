#include "flotilla/framework/program.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <sstream>

#include "flotilla/framework/op_registry.h"

namespace flotilla {

// ---------------------------------------------------------------- Variable

VarDesc& Variable::desc() const {
  FLOTILLA_ENFORCE(block_ != nullptr, "use of an empty Variable handle");
  return block_->Var(name_);
}

// ------------------------------------------------------------------- Block

Block::Block(Program* program, int idx, int parent_idx)
    : program_(program), idx_(idx), parent_idx_(parent_idx) {}

VarDesc& Block::CreateVar(const std::string& name) {
  FLOTILLA_ENFORCE(!name.empty() && name != kEmptyVarName, "invalid variable name '", name, "'");
  auto it = vars_.find(name);
  if (it != vars_.end()) return *it->second;
  auto var = std::make_unique<VarDesc>();
  var->name = name;
  VarDesc& ref = *var;
  vars_.emplace(name, std::move(var));
  var_order_.push_back(name);
  program_->BumpVersion();
  return ref;
}

VarDesc* Block::FindVar(const std::string& name) const {
  auto it = vars_.find(name);
  if (it != vars_.end()) return it->second.get();
  if (parent_idx_ >= 0) return program_->block(parent_idx_).FindVar(name);
  return nullptr;
}

VarDesc& Block::Var(const std::string& name) const {
  VarDesc* var = FindVar(name);
  if (var == nullptr) FLOTILLA_THROW(NotFound, "variable '", name, "' is not in block ", idx_);
  return *var;
}

void Block::RemoveVar(const std::string& name) {
  if (vars_.erase(name) == 0) return;
  var_order_.erase(std::remove(var_order_.begin(), var_order_.end(), name), var_order_.end());
  program_->BumpVersion();
}

std::vector<VarDesc*> Block::AllVars() const {
  std::vector<VarDesc*> out;
  out.reserve(var_order_.size());
  for (const auto& name : var_order_) out.push_back(vars_.at(name).get());
  return out;
}

OpDesc& Block::PrepareOp(OpDesc& op) {
  const OpInfo& info = OpRegistry::Global().Get(op.type);
  for (const auto& [name, value] : info.default_attrs) op.attrs.emplace(name, value);
  return op;
}

OpDesc& Block::AppendOp(OpDesc op) { return InsertOp(ops_.size(), std::move(op)); }

OpDesc& Block::InsertOp(size_t index, OpDesc op) {
  FLOTILLA_ENFORCE(index <= ops_.size(), "op index ", index, " out of range (block has ",
                   ops_.size(), " ops)");
  PrepareOp(op);
  auto owned = std::make_unique<OpDesc>(std::move(op));
  OpDesc& ref = *owned;
  InferShape(ref);
  ops_.insert(ops_.begin() + static_cast<std::ptrdiff_t>(index), std::move(owned));
  program_->BumpVersion();
  return ref;
}

void Block::InferShape(const OpDesc& op) {
  const OpInfo& info = OpRegistry::Global().Get(op.type);
  for (const auto& name : op.OutputArgumentNames()) CreateVar(name);
  if (info.infer_shape) {
    InferShapeContext ctx(op, *this);
    info.infer_shape(ctx);
  }
  for (const auto& [in, out] : info.share_lod) {
    if (!op.HasInput(in) || !op.HasOutput(out)) continue;
    VarDesc* x = FindVar(op.Inputs(in)[0]);
    if (x != nullptr) Var(op.Outputs(out)[0]).lod_level = x->lod_level;
  }
}

OpDesc& Block::AppendOpRaw(OpDesc op) {
  ops_.push_back(std::make_unique<OpDesc>(std::move(op)));
  program_->BumpVersion();
  return *ops_.back();
}

void Block::RemoveOp(size_t index) { RemoveOps(index, index + 1); }

void Block::RemoveOps(size_t begin, size_t end) {
  FLOTILLA_ENFORCE(begin <= end && end <= ops_.size(), "cannot remove ops [", begin, ", ", end,
                   ") from a block of ", ops_.size());
  ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(begin),
             ops_.begin() + static_cast<std::ptrdiff_t>(end));
  program_->BumpVersion();
}

// ----------------------------------------------------------------- Program

namespace {
std::atomic<uint64_t> next_program_id{1};
}

Program::Program() : id_(next_program_id++) {
  blocks_.push_back(std::make_unique<Block>(this, 0, -1));
}

Program::~Program() = default;

Program::Program(Program&& other) noexcept
    : blocks_(std::move(other.blocks_)),
      id_(next_program_id++),
      version_(other.version_),
      random_seed_(other.random_seed_),
      run_settings_(other.run_settings_) {
  Relink();
  other.blocks_.push_back(std::make_unique<Block>(&other, 0, -1));
}

Program& Program::operator=(Program&& other) noexcept {
  if (this == &other) return *this;
  blocks_ = std::move(other.blocks_);
  id_ = next_program_id++;
  version_ = other.version_ + 1;
  random_seed_ = other.random_seed_;
  run_settings_ = other.run_settings_;
  Relink();
  other.blocks_.clear();
  other.blocks_.push_back(std::make_unique<Block>(&other, 0, -1));
  return *this;
}

void Program::Relink() {
  for (auto& b : blocks_) b->program_ = this;
}

Block& Program::CreateBlock(int parent_idx) {
  blocks_.push_back(std::make_unique<Block>(this, num_blocks(), parent_idx));
  BumpVersion();
  return *blocks_.back();
}

namespace {

void CopyBlock(const Block& from, Block& to, bool for_test) {
  for (const VarDesc* v : from.AllVars()) to.CreateVar(v->name) = *v;
  for (const auto& op : from.ops()) {
    int32_t role = op->Role();
    if (for_test && (role & (kOpRoleBackward | kOpRoleOptimize | kOpRoleLRSched))) continue;
    OpDesc copy = *op;
    if (for_test && copy.HasAttr("is_test")) copy.attrs["is_test"] = true;
    to.AppendOpRaw(std::move(copy));
  }
}

}  // namespace

void Program::set_run_settings(RunSettings settings) {
  FLOTILLA_CHECK(settings.iterations >= 1, InvalidArgument, "ExecutionStrategy.num_iteration_per_run=",
                 settings.iterations, " must be at least 1");
  FLOTILLA_CHECK(settings.drop_scope_every >= 0, InvalidArgument, "ExecutionStrategy.num_iteration_per_drop_scope=",
                 settings.drop_scope_every, " must be at least 0");
  run_settings_ = settings;
}

Program Program::Clone(bool for_test) const {
  Program copy;
  copy.random_seed_ = random_seed_;
  for (int i = 1; i < num_blocks(); ++i) copy.CreateBlock(block(i).parent_idx());
  for (int i = 0; i < num_blocks(); ++i) CopyBlock(block(i), copy.block(i), for_test);
  if (for_test) {
    // Drop the gradient variables the removed ops produced.
    Block& g = copy.global_block();
    std::vector<std::string> names = g.var_names();
    for (const auto& n : names) {
      if (n.find(kGradSuffix) != std::string::npos) g.RemoveVar(n);
    }
  }
  copy.BumpVersion();
  return copy;
}

Program Program::Prune(const std::vector<std::string>& targets) const {
  const Block& g = global_block();
  for (const auto& t : targets) g.Var(t);
  std::set<std::string> needed(targets.begin(), targets.end());
  std::vector<bool> keep(g.op_size(), false);
  for (size_t i = g.op_size(); i-- > 0;) {
    const OpDesc& op = g.op(i);
    auto outs = op.OutputArgumentNames();
    bool useful = std::any_of(outs.begin(), outs.end(),
                              [&](const std::string& o) { return needed.count(o) > 0; });
    if (!useful) continue;
    keep[i] = true;
    for (const auto& in : op.InputArgumentNames()) needed.insert(in);
  }
  Program pruned;
  pruned.random_seed_ = random_seed_;
  Block& out = pruned.global_block();
  std::set<std::string> used(targets.begin(), targets.end());
  for (size_t i = 0; i < g.op_size(); ++i) {
    if (!keep[i]) continue;
    for (const auto& n : g.op(i).InputArgumentNames()) used.insert(n);
    for (const auto& n : g.op(i).OutputArgumentNames()) used.insert(n);
  }
  for (const VarDesc* v : g.AllVars()) {
    if (used.count(v->name)) out.CreateVar(v->name) = *v;
  }
  for (size_t i = 0; i < g.op_size(); ++i) {
    if (keep[i]) {
      out.AppendOpRaw(g.op(i));
    }
  }
  pruned.BumpVersion();
  return pruned;
}

std::string Program::DebugString() const {
  std::ostringstream out;
  for (int b = 0; b < num_blocks(); ++b) {
    out << "block " << b << ":\n";
    for (const VarDesc* v : block(b).AllVars()) {
      out << "  var " << v->name << " : " << DTypeName(v->dtype) << DimsToString(v->shape)
          << (v->persistable ? " persistable" : "") << "\n";
    }
    for (const auto& op : block(b).ops()) out << "  " << op->DebugString() << "\n";
  }
  return out.str();
}

// ------------------------------------------------- defaults and unique names

namespace {

struct GuardFrame {
  Program* main;
  Program* startup;
};

thread_local std::vector<GuardFrame> guard_stack;
thread_local std::unordered_map<std::string, int> unique_counters;

}  // namespace

Program& default_main_program() {
  static Program main_program;
  if (!guard_stack.empty()) return *guard_stack.back().main;
  return main_program;
}

Program& default_startup_program() {
  static Program startup_program;
  if (!guard_stack.empty() && guard_stack.back().startup != nullptr) {
    return *guard_stack.back().startup;
  }
  return startup_program;
}

ProgramGuard::ProgramGuard(Program& main, Program& startup) {
  guard_stack.push_back({&main, &startup});
}

ProgramGuard::ProgramGuard(Program& main) {
  guard_stack.push_back({&main, &default_startup_program()});
}

ProgramGuard::~ProgramGuard() { guard_stack.pop_back(); }

std::string UniqueName(const std::string& prefix) {
  int n = unique_counters[prefix]++;
  return prefix + "_" + std::to_string(n);
}

UniqueNameGuard::UniqueNameGuard() : saved_(std::move(unique_counters)) { unique_counters.clear(); }

UniqueNameGuard::~UniqueNameGuard() { unique_counters = std::move(saved_); }

}  // namespace flotilla
