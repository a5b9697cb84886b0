#include "flotilla/framework/scope.h"

#include <algorithm>
#include <atomic>

#include "flotilla/common/enforce.h"

namespace flotilla {

// ---------------------------------------------------------------- ScopeVar

bool ScopeVar::IsInitialized() const {
  if (IsSelectedRows()) return true;
  if (IsTensor()) return std::get<Tensor>(value_).initialized();
  return false;
}

Tensor* ScopeVar::GetMutableTensor() {
  if (IsEmpty()) value_ = Tensor();
  FLOTILLA_ENFORCE(IsTensor(), "variable '", name_, "' holds ",
                   IsSelectedRows() ? "SelectedRows" : "an object", ", not a dense tensor");
  return &std::get<Tensor>(value_);
}

const Tensor& ScopeVar::GetTensor() const {
  FLOTILLA_ENFORCE(IsTensor(), "variable '", name_, "' is ",
                   IsEmpty() ? "empty" : (IsSelectedRows() ? "SelectedRows" : "an object"),
                   ", not a dense tensor");
  const Tensor& t = std::get<Tensor>(value_);
  FLOTILLA_ENFORCE(t.initialized(), "variable '", name_, "' has no data (shape ",
                   DimsToString(t.dims()), ")");
  return t;
}

SelectedRows* ScopeVar::GetMutableSelectedRows() {
  if (IsEmpty()) value_ = SelectedRows();
  FLOTILLA_ENFORCE(IsSelectedRows(), "variable '", name_, "' is not SelectedRows");
  return &std::get<SelectedRows>(value_);
}

const SelectedRows& ScopeVar::GetSelectedRows() const {
  FLOTILLA_ENFORCE(IsSelectedRows(), "variable '", name_, "' is not SelectedRows");
  return std::get<SelectedRows>(value_);
}

Tensor* ScopeVar::ResetTensor() {
  if (!IsTensor()) value_ = Tensor();
  return &std::get<Tensor>(value_);
}

SelectedRows* ScopeVar::ResetSelectedRows() {
  value_ = SelectedRows();
  return &std::get<SelectedRows>(value_);
}

// ------------------------------------------------------------------- Scope

namespace {
std::atomic<uint64_t> next_scope_id{1};
}

Scope::Scope() : id_(next_scope_id++) {}

Scope::Scope(Scope* parent) : parent_(parent), id_(next_scope_id++) {}

Scope::~Scope() = default;

ScopeVar* Scope::Var(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = vars_[name];
  if (!slot) slot = std::make_unique<ScopeVar>(name);
  return slot.get();
}

ScopeVar* Scope::FindLocalVar(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : it->second.get();
}

ScopeVar* Scope::FindVar(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_) {
    if (ScopeVar* v = s->FindLocalVar(name)) return v;
  }
  return nullptr;
}

ScopeVar& Scope::GetVar(const std::string& name) const {
  ScopeVar* v = FindVar(name);
  if (v == nullptr) FLOTILLA_THROW(NotFound, "variable '", name, "' is not in the scope");
  return *v;
}

void Scope::EraseVars(const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& n : names) vars_.erase(n);
}

std::vector<std::string> Scope::LocalVarNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, var] : vars_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

Scope& Scope::NewScope() {
  std::lock_guard<std::mutex> lock(mu_);
  kids_.push_back(std::make_unique<Scope>(this));
  return *kids_.back();
}

void Scope::DeleteScope(Scope* kid) {
  std::lock_guard<std::mutex> lock(mu_);
  kids_.erase(std::remove_if(kids_.begin(), kids_.end(),
                             [&](const std::unique_ptr<Scope>& s) { return s.get() == kid; }),
              kids_.end());
}

void Scope::DropKids() {
  std::lock_guard<std::mutex> lock(mu_);
  kids_.clear();
}

Scope& global_scope() {
  static Scope* scope = new Scope();  // never destroyed: ops may outlive main's statics
  return *scope;
}

}  // namespace flotilla
