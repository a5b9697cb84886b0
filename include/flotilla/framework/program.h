// Program, Block and Variable: the static graph users build with layers and
// passes rewrite (Paddle's fluid.Program).
//
// A Program owns its Blocks; a Block owns its VarDescs and OpDescs. Variable
// is a non-owning handle (block + name), valid while the Program lives and
// the variable is not removed. Programs are not thread-safe: build them on
// one thread, then run them from any number of executors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "flotilla/framework/desc.h"

namespace flotilla {

namespace proto {
class ProgramDesc;
}

class Program;
class Block;

class Variable {
 public:
  Variable() = default;
  Variable(Block* block, std::string name) : block_(block), name_(std::move(name)) {}

  bool valid() const { return block_ != nullptr; }
  const std::string& name() const { return name_; }
  Block* block() const { return block_; }
  VarDesc& desc() const;
  const Dims& shape() const { return desc().shape; }
  DType dtype() const { return desc().dtype; }
  bool persistable() const { return desc().persistable; }
  bool stop_gradient() const { return desc().stop_gradient; }
  Variable& set_stop_gradient(bool v) { desc().stop_gradient = v; return *this; }
  Variable& set_persistable(bool v) { desc().persistable = v; return *this; }

 private:
  Block* block_ = nullptr;
  std::string name_;
};

class Block {
 public:
  Block(Program* program, int idx, int parent_idx);
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  Program* program() const { return program_; }
  int idx() const { return idx_; }
  int parent_idx() const { return parent_idx_; }

  // Creates `name` (or returns the existing one) and returns its desc.
  VarDesc& CreateVar(const std::string& name);
  // Throws NotFound naming the variable and block when absent.
  VarDesc& Var(const std::string& name) const;
  VarDesc* FindVar(const std::string& name) const;
  bool HasVar(const std::string& name) const { return FindVar(name) != nullptr; }
  void RemoveVar(const std::string& name);
  Variable GetVariable(const std::string& name) { Var(name); return Variable(this, name); }
  // Variable names in creation order.
  const std::vector<std::string>& var_names() const { return var_order_; }
  std::vector<VarDesc*> AllVars() const;

  // Appends an op after checking it is registered, filling default attrs and
  // running compile-time shape inference (which may create output vars).
  OpDesc& AppendOp(OpDesc op);
  OpDesc& InsertOp(size_t index, OpDesc op);
  OpDesc& PrependOp(OpDesc op) { return InsertOp(0, std::move(op)); }
  // Appends as is: no registry check, defaults or shape inference. For
  // copying and deserialising programs whose ops were checked before.
  OpDesc& AppendOpRaw(OpDesc op);
  void RemoveOp(size_t index);
  // Removes ops [begin, end).
  void RemoveOps(size_t begin, size_t end);
  size_t op_size() const { return ops_.size(); }
  OpDesc& op(size_t i) const { return *ops_.at(i); }
  const std::vector<std::unique_ptr<OpDesc>>& ops() const { return ops_; }

  // Re-runs shape inference for one op (after a pass edits it).
  void InferShape(const OpDesc& op);

 private:
  friend class Program;
  OpDesc& PrepareOp(OpDesc& op);

  Program* program_;
  int idx_;
  int parent_idx_;
  std::unordered_map<std::string, std::unique_ptr<VarDesc>> vars_;
  std::vector<std::string> var_order_;
  std::vector<std::unique_ptr<OpDesc>> ops_;
};

// How Executor::Run runs a program (Paddle's ExecutionStrategy): each Run
// call runs it `iterations` times (num_iteration_per_run), and its
// temporaries are freed every `drop_scope_every` runs (num_iteration_per_drop_scope;
// 0: kept for the life of the executor).
struct RunSettings {
  int iterations = 1;
  int drop_scope_every = 0;
};

class Program {
 public:
  Program();
  ~Program();
  Program(Program&& other) noexcept;
  Program& operator=(Program&& other) noexcept;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  Block& global_block() const { return *blocks_[0]; }
  Block& block(int i) const { return *blocks_.at(i); }
  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  Block& CreateBlock(int parent_idx);

  // A deep copy. With for_test, ops with the Backward, Optimize or LRSched
  // role are dropped and every op's "is_test" attribute is set, so the copy
  // evaluates the model without training it or advancing its step counter.
  Program Clone(bool for_test = false) const;
  // A copy holding only the ops of block 0 needed to compute `targets`, and
  // only the variables those ops use.
  Program Prune(const std::vector<std::string>& targets) const;

  void ToProto(proto::ProgramDesc* out) const;
  static Program FromProto(const proto::ProgramDesc& in);
  std::string Serialize() const;
  // Throws Corruption naming `what` when the bytes are not a ProgramDesc.
  static Program Parse(const std::string& bytes, const std::string& what = "program");
  // One op per line with inputs, outputs and attributes.
  std::string DebugString() const;

  // Identity and version let executors cache prepared programs: id() is
  // unique per Program object; version() changes whenever it is edited.
  uint64_t id() const { return id_; }
  uint64_t version() const { return version_; }
  void BumpVersion() { ++version_; }

  uint64_t random_seed() const { return random_seed_; }
  void set_random_seed(uint64_t seed) { random_seed_ = seed; BumpVersion(); }

  // What Executor::Run honours for this program (default: one run per
  // call, temporaries kept). Moves carry them; Clone and Prune do not.
  // Throws InvalidArgument naming the field (as ExecutionStrategy spells it)
  // for iterations < 1 or drop_scope_every < 0.
  const RunSettings& run_settings() const { return run_settings_; }
  void set_run_settings(RunSettings settings);

 private:
  void Relink();

  std::vector<std::unique_ptr<Block>> blocks_;
  uint64_t id_;
  uint64_t version_ = 0;
  uint64_t random_seed_ = 0;
  RunSettings run_settings_;
};

// The programs layers append to: the innermost ProgramGuard's, or the
// process-wide defaults. Each thread has its own guard stack, but the two
// defaults used outside any guard are shared by every thread of the process:
// a thread that builds programs concurrently with another must use a guard.
Program& default_main_program();
Program& default_startup_program();

// Makes `main` and `startup` the defaults until destroyed.
class ProgramGuard {
 public:
  ProgramGuard(Program& main, Program& startup);
  explicit ProgramGuard(Program& main);
  ~ProgramGuard();
  ProgramGuard(const ProgramGuard&) = delete;
  ProgramGuard& operator=(const ProgramGuard&) = delete;
};

// "fc" → "fc_0", "fc_1", ... unique within the current UniqueNameGuard.
std::string UniqueName(const std::string& prefix);
// Restarts unique-name counters until destroyed (so two programs built under
// separate guards get the same names — what distributed ranks rely on).
class UniqueNameGuard {
 public:
  UniqueNameGuard();
  ~UniqueNameGuard();
  UniqueNameGuard(const UniqueNameGuard&) = delete;
  UniqueNameGuard& operator=(const UniqueNameGuard&) = delete;

 private:
  std::unordered_map<std::string, int> saved_;
};

}  // namespace flotilla
