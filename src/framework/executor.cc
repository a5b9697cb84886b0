#include "flotilla/framework/executor.h"

#include <chrono>
#include <mutex>
#include <optional>
#include <set>

#include "flotilla/common/interrupt.h"
#include "flotilla/common/strings.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/trace/activity.h"
#include "flotilla/trace/standard_metrics.h"
#include "flotilla/trace/trace.h"

namespace flotilla {

namespace {

struct PreparedOp {
  const OpDesc* op = nullptr;
  const KernelFn* kernel = nullptr;
  RuntimeContext rt;
  trace::NameId type = trace::kNoName;    // op type, interned for traces
  trace::NameId output = trace::kNoName;  // its first output
};

// One op as traces and the flight recorder see it: a span with the op type
// and its first output, and the process's "current op" while it runs.
class OpScope {
 public:
  explicit OpScope(const PreparedOp& op) : span_(trace::Category::kOp, op.type) {
    span_.ArgName("output", op.output);
    trace::EnterOp(op.type, op.output);
  }
  ~OpScope() { trace::LeaveOp(); }

 private:
  trace::Span span_;
};

// One Run: a step when this program is the one run most (the training
// program), which then feeds the step metrics: wall time, samples (first
// dimension of the first feed) and the time blocked on communication. A
// program's first run without a feed (a startup program) is not a step.
class RunScope {
 public:
  RunScope(int64_t run, const FeedMap& feed)
      : run_(run), start_ns_(trace::MonoNs()), blocked_ns_(trace::ThreadBlockedNs()) {
    trace::SetStep(run);  // first: it may open a --timeline_steps window
    span_.emplace(trace::Category::kStep, FLOTILLA_TRACE_NAME("run"));
    span_->Arg("run", run);
    const bool batched = !feed.empty() && !feed.begin()->second.dims().empty();
    samples_ = batched ? feed.begin()->second.dims()[0] : 0;
  }
  ~RunScope() {
    if (run_ < trace::Step()) return;  // test and sub-programs
    if (run_ == 1 && samples_ == 0) return;  // startup programs
    const double secs = static_cast<double>(trace::MonoNs() - start_ns_) / 1e9;
    const double comm = static_cast<double>(trace::ThreadBlockedNs() - blocked_ns_) / 1e9;
    trace::RecordStep(secs, samples_, comm);
  }

 private:
  int64_t run_;
  int64_t start_ns_;
  int64_t blocked_ns_;
  int64_t samples_ = 0;
  std::optional<trace::Span> span_;
};

// The first fetched float scalar is taken for the loss.
void RecordFetchedLoss(const std::vector<Tensor>& fetched) {
  for (const Tensor& t : fetched) {
    if (t.numel() != 1) continue;
    if (t.dtype() == DType::kFloat32) trace::RecordLoss(t.data<float>()[0]);
    if (t.dtype() == DType::kFloat64) trace::RecordLoss(t.data<double>()[0]);
    return;
  }
}

std::mutex close_hooks_mu;
std::vector<std::function<void()>>& CloseHooks() {
  static auto* hooks = new std::vector<std::function<void()>>();
  return *hooks;
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct Executor::Prepared {
  uint64_t version = ~0ull;
  int64_t runs = 0;
  std::unique_ptr<Scope> local;
  std::vector<PreparedOp> ops;
  std::vector<std::string> data_inputs;  // data variables the ops read
};

Executor::Executor(Place place) : place_(place) { trace::InitProcess(); }

Executor::~Executor() = default;

namespace {

const KernelFn& FindKernel(const OpInfo& info, const Place& place) {
  auto it = info.kernels.find(place.kind());
  // Device slots on a CPU-only build run the CPU kernels.
  if (it == info.kernels.end()) it = info.kernels.find(Place::Kind::kCPU);
  if (it == info.kernels.end()) {
    FLOTILLA_THROW(Unimplemented, "op '", info.type, "' has no kernel for ", place.ToString());
  }
  return it->second;
}

void Resolve(const VarNameMap& slots, Scope& local, std::map<std::string, std::vector<ScopeVar*>>* out) {
  for (const auto& [slot, names] : slots) {
    auto& vars = (*out)[slot];
    for (const auto& n : names) {
      if (n == kEmptyVarName || n.empty()) {
        vars.push_back(nullptr);
        continue;
      }
      ScopeVar* v = local.FindVar(n);
      vars.push_back(v != nullptr ? v : local.Var(n));
    }
  }
}

std::vector<std::string> DataInputs(const Block& block) {
  std::set<std::string> produced;
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const auto& op : block.ops()) {
    for (const auto& in : op->InputArgumentNames()) {
      const VarDesc* v = block.FindVar(in);
      if (v && v->is_data && !produced.count(in) && seen.insert(in).second) out.push_back(in);
    }
    for (const auto& o : op->OutputArgumentNames()) produced.insert(o);
  }
  return out;
}

}  // namespace

Executor::Prepared& Executor::Prepare(const Program& program, Scope& scope) {
  auto& slot = cache_[{program.id(), scope.id()}];
  if (slot && slot->version == program.version()) return *slot;
  if (!slot) {
    slot = std::make_unique<Prepared>();
    slot->local = std::make_unique<Scope>(&scope);
  }
  Prepared& p = *slot;
  const Block& block = program.global_block();
  for (const VarDesc* v : block.AllVars()) {
    if (v->persistable) {
      scope.Var(v->name);
    } else {
      p.local->Var(v->name);
    }
  }
  p.ops.clear();
  for (const auto& op : block.ops()) {
    PreparedOp prepared;
    prepared.op = op.get();
    prepared.kernel = &FindKernel(OpRegistry::Global().Get(op->type), place_);
    prepared.type = trace::Intern(op->type);
    const auto outputs = op->OutputArgumentNames();
    prepared.output = outputs.empty() ? trace::kNoName : trace::Intern(outputs.front());
    Resolve(op->inputs, *p.local, &prepared.rt.inputs);
    Resolve(op->outputs, *p.local, &prepared.rt.outputs);
    p.ops.push_back(std::move(prepared));
  }
  p.data_inputs = DataInputs(block);
  p.version = program.version();
  return p;
}

namespace {

void CheckFeed(const Block& block, const std::string& name, const Tensor& value) {
  const VarDesc* v = block.FindVar(name);
  if (v == nullptr) FLOTILLA_THROW(NotFound, "feed '", name, "' is not a variable of the program");
  FLOTILLA_ENFORCE(value.initialized(), "feed '", name, "' is an empty tensor");
  FLOTILLA_ENFORCE(v->dtype == value.dtype(), "feed '", name, "' has dtype ",
                   DTypeName(value.dtype()), " (shape ", DimsToString(value.dims()),
                   ") but the program declares ", DTypeName(v->dtype), " (shape ",
                   DimsToString(v->shape), ")");
  FLOTILLA_ENFORCE(DimsCompatible(v->shape, value.dims()), "feed '", name, "' has shape ",
                   DimsToString(value.dims()), " but the program declares ",
                   DimsToString(v->shape), " (-1 matches any size)");
  if (value.has_lod()) CheckLoD(value.lod(), value.rank() ? value.dim(0) : -1, "feed '" + name + "'");
}

void CheckFeedsPresent(const std::vector<std::string>& data_inputs, const FeedMap& feed) {
  for (const auto& name : data_inputs) {
    if (feed.count(name)) continue;
    std::vector<std::string> given;
    for (const auto& [n, t] : feed) given.push_back(n);
    FLOTILLA_THROW(InvalidArgument, "data variable '", name,
                   "' is read by the program but was not fed (fed: [", Join(given, ", "), "])");
  }
}

Tensor FetchValue(const ScopeVar* v, const std::string& name) {
  FLOTILLA_ENFORCE(v != nullptr && v->IsInitialized(), "fetch '", name,
                   "' has no value after the run");
  if (v->IsSelectedRows()) return v->GetSelectedRows().ToDense();
  return v->GetTensor().Clone();
}

}  // namespace

std::vector<Tensor> Executor::Run(const Program& program, const FeedMap& feed,
                                  const std::vector<std::string>& fetch_list, Scope* scope) {
  Scope& s = scope != nullptr ? *scope : global_scope();
  const RunSettings& settings = program.run_settings();
  if (settings.iterations == 1 && settings.drop_scope_every == 0) return RunOnce(program, feed, fetch_list, s);
  return RunIterations(program, [&feed](int) -> const FeedMap& { return feed; }, fetch_list, s);
}

std::vector<Tensor> Executor::RunFrom(const Program& program, const FeedSource& next_feed,
                                      const std::vector<std::string>& fetch_list, Scope* scope) {
  FeedMap feed;
  return RunIterations(
      program,
      [&](int) -> const FeedMap& {
        feed = next_feed();
        return feed;
      },
      fetch_list, scope != nullptr ? *scope : global_scope());
}

namespace {

void CheckFetches(const Block& block, const std::vector<std::string>& fetch_list) {
  for (const auto& name : fetch_list) {
    if (!block.FindVar(name)) FLOTILLA_THROW(NotFound, "fetch '", name, "' is not a variable of the program");
  }
}

}  // namespace

std::vector<Tensor> Executor::RunIterations(const Program& program,
                                            const std::function<const FeedMap&(int)>& feed_for,
                                            const std::vector<std::string>& fetch_list, Scope& scope) {
  const RunSettings settings = program.run_settings();
  CheckFetches(program.global_block(), fetch_list);  // before any run changes the parameters
  std::vector<Tensor> out;
  for (int i = 0; i < settings.iterations; ++i) {
    const bool last = i + 1 == settings.iterations;
    out = RunOnce(program, feed_for(i), last ? fetch_list : std::vector<std::string>{}, scope);
    const int64_t runs = cache_.at({program.id(), scope.id()})->runs;
    if (settings.drop_scope_every > 0 && runs % settings.drop_scope_every == 0) DropLocalScope(program, &scope);
  }
  return out;
}

std::vector<Tensor> Executor::RunOnce(const Program& program, const FeedMap& feed,
                                      const std::vector<std::string>& fetch_list, Scope& s) {
  const Block& block = program.global_block();
  for (const auto& [name, value] : feed) CheckFeed(block, name, value);
  CheckFetches(block, fetch_list);
  Prepared& p = Prepare(program, s);
  CheckFeedsPresent(p.data_inputs, feed);
  for (const auto& [name, value] : feed) p.local->FindVar(name)->GetMutableTensor()->ShareDataWith(value);
  RunScope run(++p.runs, feed);
  for (PreparedOp& op : p.ops) {
    CheckInterrupt();
    ExecutionContext ctx(*op.op, op.rt, *p.local, place_);
    OpScope traced(op);
    int64_t start = observer_ ? NowNanos() : 0;
    (*op.kernel)(ctx);
    if (observer_) observer_(*op.op, start, NowNanos());
  }
  std::vector<Tensor> out;
  out.reserve(fetch_list.size());
  for (const auto& name : fetch_list) out.push_back(FetchValue(p.local->FindVar(name), name));
  RecordFetchedLoss(out);
  return out;
}

Scope* Executor::local_scope(const Program& program, const Scope* scope) const {
  const Scope& s = scope != nullptr ? *scope : global_scope();
  auto it = cache_.find({program.id(), s.id()});
  return it == cache_.end() ? nullptr : it->second->local.get();
}

void Executor::DropLocalScope(const Program& program, Scope* scope) {
  Scope& s = scope != nullptr ? *scope : global_scope();
  auto it = cache_.find({program.id(), s.id()});
  if (it == cache_.end()) return;
  Prepared& p = *it->second;
  p.ops.clear();  // they point into the old scope
  p.local = std::make_unique<Scope>(&s);
  p.version = ~0ull;
}

void Executor::Close() {
  if (closed_) return;
  closed_ = true;
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(close_hooks_mu);
    hooks = CloseHooks();
  }
  for (auto& hook : hooks) hook();
}

void Executor::AddCloseHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(close_hooks_mu);
  CloseHooks().push_back(std::move(hook));
}

}  // namespace flotilla
