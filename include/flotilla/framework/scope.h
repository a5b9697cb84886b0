// Scope and ScopeVar: the runtime side of a program. A Scope maps names to
// ScopeVars; a ScopeVar holds a dense Tensor, a SelectedRows, or an opaque
// object. Scopes nest: lookups fall back to the parent, so persistable
// parameters live in an outer scope and per-step temporaries in a kid.
//
// Creating and finding variables is thread-safe; mutating the value a
// ScopeVar holds is the caller's business (ops of one executor run in order).
#pragma once

#include <any>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "flotilla/core/selected_rows.h"
#include "flotilla/core/tensor.h"

namespace flotilla {

class ScopeVar {
 public:
  explicit ScopeVar(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }

  bool IsTensor() const { return std::holds_alternative<Tensor>(value_); }
  bool IsSelectedRows() const { return std::holds_alternative<SelectedRows>(value_); }
  bool IsEmpty() const { return std::holds_alternative<std::monostate>(value_); }
  // True when it holds a tensor with data, or a SelectedRows.
  bool IsInitialized() const;

  // Turns the variable into a tensor (when empty) and returns it. Throws
  // InvalidArgument naming the variable when it holds something else.
  Tensor* GetMutableTensor();
  // The tensor; throws InvalidArgument naming the variable when it is not a
  // tensor or has no data.
  const Tensor& GetTensor() const;
  SelectedRows* GetMutableSelectedRows();
  const SelectedRows& GetSelectedRows() const;
  // Drops whatever it holds and becomes a tensor / SelectedRows.
  Tensor* ResetTensor();
  SelectedRows* ResetSelectedRows();

  // Opaque objects (reader state, communicator handles).
  template <typename T> T* GetMutableObject() {
    if (!std::holds_alternative<std::any>(value_)) value_ = std::any(std::make_shared<T>());
    return std::any_cast<std::shared_ptr<T>&>(std::get<std::any>(value_)).get();
  }

 private:
  std::string name_;
  std::variant<std::monostate, Tensor, SelectedRows, std::any> value_;
};

class Scope {
 public:
  Scope();
  // A scope whose lookups fall back to `parent`, owned by the caller (not by
  // the parent). The caller must not use it after `parent` is destroyed.
  explicit Scope(Scope* parent);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  // Creates `name` in this scope when it is not here (ignores parents).
  ScopeVar* Var(const std::string& name);
  // Finds `name` here or in an ancestor; nullptr when absent.
  ScopeVar* FindVar(const std::string& name) const;
  ScopeVar* FindLocalVar(const std::string& name) const;
  // Like FindVar but throws NotFound naming the variable.
  ScopeVar& GetVar(const std::string& name) const;
  void EraseVars(const std::vector<std::string>& names);
  std::vector<std::string> LocalVarNames() const;

  // A child scope owned by this one.
  Scope& NewScope();
  void DeleteScope(Scope* kid);
  void DropKids();
  const Scope* parent() const { return parent_; }
  // Unique per Scope object for the life of the process (addresses are not).
  uint64_t id() const { return id_; }

 private:
  mutable std::mutex mu_;
  Scope* parent_ = nullptr;
  uint64_t id_;
  std::unordered_map<std::string, std::unique_ptr<ScopeVar>> vars_;  // guarded by mu_
  std::vector<std::unique_ptr<Scope>> kids_;                         // guarded by mu_
};

// The process-wide scope executors use by default.
Scope& global_scope();

}  // namespace flotilla
