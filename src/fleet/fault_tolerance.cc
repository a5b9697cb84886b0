// Fault tolerance without restarts (DistributedStrategy.fault_tolerance
// "step"): transactional steps and the in-process re-form of the workers'
// groups after a lost peer. See Fleet::run_step and docs/elastic.md.
//
// Store keys, under "flotilla/ft/" of the job's store:
//   lost/<id>                   written by the launcher when worker <id> died
//   init<I>/gen/<G>/alive/<id>  a survivor of generation G-1: its committed step
//   init<I>/gen/<G>/proposer    counter: the first survivor to see every member
//                               alive or lost proposes the members
//   init<I>/gen/<G>/members     "id,id,...": generation G's members by old id
//   faults, steps_lost          counters the launcher reports at the end
// Ids are the workers' ranks at init; members keep their old order, so new
// ranks are 0..N-1 in that order.
#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "fleet/ops/collective_ops.h"
#include "fleet/ring_registry.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"
#include "flotilla/fleet/fleet.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla::fleet {

namespace {

using Clock = std::chrono::steady_clock;

// How long survivors wait for the launcher to name a lost rank, and for
// every other member to arrive, before the failure counts as one that is not
// a lost peer.
constexpr std::chrono::seconds kReformTimeout{20};
// Generations tried for one dropped step before its failure is rethrown.
constexpr int kReformAttempts = 3;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::string IdList(const std::vector<int>& ids) {
  std::vector<std::string> parts;
  for (int id : ids) parts.push_back(std::to_string(id));
  return Join(parts, ",");
}

std::vector<int> ParseIds(const std::string& text) {
  std::vector<int> ids;
  for (const std::string& part : Split(text, ',')) {
    if (!part.empty()) ids.push_back(std::stoi(part));
  }
  return ids;
}

// A collective's failure: a peer died, its connection closed, or it never
// arrived. Other errors are the program's and are rethrown.
bool IsPeerFailure(const Error& e) {
  return e.code() == ErrorCode::kUnavailable || e.code() == ErrorCode::kDeadlineExceeded;
}

// A collective op, or the conditional block gradient merge and LocalSGD run
// their collectives in: what the ops before it wrote (accumulators, the
// step gate's counter, LocalSGD's locally updated parameters) is restored
// when the step fails.
bool IsCollective(const OpDesc& op) {
  return op.HasAttr(kRingIdAttr) || op.type == "c_conditional_block";
}

}  // namespace

const std::vector<std::string>& Fleet::PreCommitWrites(const Program& program) {
  if (pre_commit_ && pre_commit_->program == program.id() && pre_commit_->version == program.version()) {
    return pre_commit_->names;
  }
  const Block& block = program.global_block();
  size_t last = 0;
  for (size_t i = 0; i < block.op_size(); ++i) {
    if (IsCollective(block.op(i))) last = i;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < last; ++i) {
    for (const std::string& out : block.op(i).OutputArgumentNames()) {
      const VarDesc* v = block.FindVar(out);
      if (v != nullptr && v->persistable && v->type == VarType::kDenseTensor) names.insert(out);
    }
  }
  pre_commit_ = PreCommit{program.id(), program.version(), {names.begin(), names.end()}};
  return pre_commit_->names;
}

std::optional<std::vector<Tensor>> Fleet::run_step(Executor& exe, const Program& program,
                                                   const FeedMap& feed,
                                                   const std::vector<std::string>& fetch_list,
                                                   StepState& state, int64_t samples_per_rank,
                                                   Scope* scope) {
  CheckInit("run_step");
  if (!fault_tolerant_ || group_ == nullptr) {
    auto out = exe.run(program, feed, fetch_list, scope);
    ++state.step;
    state.position += samples_per_rank * role_->worker_num;
    return out;
  }
  // What the forward and backward ops write before the commit point (the
  // last collective) is copied, so a dropped step leaves it as it was.
  Scope& s = scope != nullptr ? *scope : global_scope();
  std::vector<std::pair<ScopeVar*, Tensor>> saved;
  for (const std::string& name : PreCommitWrites(program)) {
    ScopeVar* v = s.FindVar(name);
    if (v != nullptr && v->IsTensor() && v->IsInitialized()) saved.emplace_back(v, v->GetTensor().Clone());
  }
  try {
    auto out = exe.run(program, feed, fetch_list, &s);
    ++state.step;
    state.position += samples_per_rank * role_->worker_num;
    if (failure_seen_) {
      fault_stats_.last_recovery_ms = MsSince(*failure_seen_);
      failure_seen_.reset();
      log::Info("fleet: fault tolerance: step {} committed in world {} (generation {}), "
                "{:.1f} ms after the failure was seen",
                state.step - 1, role_->worker_num, fault_stats_.generation,
                fault_stats_.last_recovery_ms);
    }
    return out;
  } catch (const Error& e) {
    if (!IsPeerFailure(e)) throw;
    if (!failure_seen_) failure_seen_ = Clock::now();
    for (auto& [v, t] : saved) v->GetMutableTensor()->CopyFrom(t);
    log::Warn("fleet: step {} dropped (rank {} of {}): {}", state.step, role_->worker_index,
              role_->worker_num, e.what());
    ++fault_stats_.steps_lost;
    // A member lost while the others build the new groups fails that
    // generation; the survivors then agree on the next one.
    std::string failure = e.what();
    for (int attempt = 1;; ++attempt) {
      const int generation = fault_stats_.generation;
      try {
        Reform(exe, program, scope, state, failure);
        break;
      } catch (const Error& again) {
        const bool agreed = fault_stats_.generation > generation;
        if (!IsPeerFailure(again) || !agreed || attempt == kReformAttempts) throw;
        log::Warn("fleet: fault tolerance: generation {} failed while forming ({}); re-forming again",
                  fault_stats_.generation, again.what());
        failure = again.what();
      }
    }
    return std::nullopt;
  }
}

std::vector<int> Fleet::AgreeOnMembers(int generation, const StepState& state,
                                       const std::string& failure) {
  const std::string gen = StrCat("init", inits_, "/gen/", generation, "/");
  ft_store_->setString(gen + "alive/" + std::to_string(ft_id_), std::to_string(state.step));
  const auto deadline = Clock::now() + kReformTimeout;
  while (!ft_store_->check({gen + "members"})) {
    std::vector<int> alive, lost;
    for (int id : ft_members_) {
      if (ft_store_->check({StrCat("lost/", id)})) {
        lost.push_back(id);
      } else if (ft_store_->check({gen + "alive/" + std::to_string(id)})) {
        alive.push_back(id);
      }
    }
    if (!lost.empty() && alive.size() + lost.size() == ft_members_.size()) {
      if (ft_store_->add(gen + "proposer", 1) == 1) {
        ft_store_->setString(gen + "members", IdList(alive));
        ft_store_->add("faults", static_cast<int64_t>(lost.size()));
        ft_store_->add("steps_lost", 1);
      }
      break;
    }
    FLOTILLA_CHECK(Clock::now() < deadline, Unavailable, "fleet: fault tolerance: no peer of ",
                   "worker ", ft_id_, " was reported lost (and not every other one re-joined) ",
                   "within ", kReformTimeout.count(), " s of this failure, so it is not a lost peer: ",
                   failure);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ft_store_->wait({gen + "members"}, kReformTimeout);
  return ParseIds(ft_store_->getString(gen + "members"));
}

void Fleet::SyncState(const Program& program, Scope* scope, StepState& state, int root) {
  Scope& s = scope != nullptr ? *scope : global_scope();
  std::vector<std::string> names;
  for (const VarDesc* v : program.global_block().AllVars()) {
    if (v->persistable && v->type == VarType::kDenseTensor) names.push_back(v->name);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    ScopeVar* v = s.FindVar(name);
    if (v == nullptr || !v->IsTensor() || !v->IsInitialized()) continue;
    group_->broadcast(*v->GetMutableTensor(), root);
  }
  int64_t st[2] = {state.step, state.position};
  group_->broadcast(st, 2, DType::kInt64, root);
  state.step = st[0];
  state.position = st[1];
}

void Fleet::Reform(Executor& exe, const Program& program, Scope* scope, StepState& state,
                   const std::string& failure) {
  const auto start = Clock::now();
  // The step's pending all-reduces and its temporaries go; then the failed
  // groups (their connections close, so peers still waiting in them fail too).
  exe.DropLocalScope(program, scope);
  for (int ring : rings_) ReplaceRing(ring, nullptr);
  training_group_.reset();
  group_.reset();

  const double teardown_ms = MsSince(start);
  const int generation = fault_stats_.generation + 1;
  const std::vector<int> old_members = ft_members_;
  const std::vector<int> members = AgreeOnMembers(generation, state, failure);
  const double agreed_ms = MsSince(start);
  auto me = std::find(members.begin(), members.end(), ft_id_);
  FLOTILLA_CHECK(me != members.end(), Unavailable, "fleet: fault tolerance: worker ", ft_id_,
                 " is not in generation ", generation, "'s members [", IdList(members),
                 "]; the failure was: ", failure);
  fault_stats_.generation = generation;  // from here on a failure re-forms as generation + 1
  // The member that committed the most steps (the first of them) holds the
  // state every other adopts.
  const std::string gen = StrCat("init", inits_, "/gen/", generation, "/");
  // When every member committed the same steps their variables are
  // bit-identical already (each applied the same all-reduced gradients), and
  // nothing is sent.
  int root = 0;
  int64_t best = -1;
  bool same_step = true;
  for (size_t i = 0; i < members.size(); ++i) {
    int64_t step = std::stoll(ft_store_->getString(gen + "alive/" + std::to_string(members[i])));
    same_step &= i == 0 || step == best;
    if (step > best) best = step, root = static_cast<int>(i);
  }
  std::vector<int> lost;
  for (int id : old_members) {
    if (std::find(members.begin(), members.end(), id) == members.end()) lost.push_back(id);
  }
  fault_stats_.faults += static_cast<int>(lost.size());
  const int old_rank = role_->worker_index, old_size = role_->worker_num;
  ft_members_ = members;
  role_->worker_index = static_cast<int>(me - members.begin());
  role_->worker_num = static_cast<int>(members.size());
  if (role_->worker_endpoints.size() == old_members.size()) {
    std::vector<std::string> endpoints;
    for (int id : members) {
      size_t at = std::find(old_members.begin(), old_members.end(), id) - old_members.begin();
      endpoints.push_back(role_->worker_endpoints[at]);
    }
    role_->worker_endpoints = std::move(endpoints);
  }
  comm::ProcessGroupOptions pg = default_group_options_;
  pg.name = StrCat("fleet_ft", generation);
  group_ = comm::NewProcessGroup(store_, role_->worker_index, role_->worker_num, pg);
  if (training_group_options_) {
    comm::ProcessGroupOptions tpg = *training_group_options_;
    tpg.name = StrCat("fleet_dp_ft", generation);
    training_group_ = comm::NewProcessGroup(store_, role_->worker_index, role_->worker_num, tpg);
  } else {
    training_group_ = group_;
  }
  ReplaceRing(rings_.front(), group_);
  for (size_t i = 1; i < rings_.size(); ++i) ReplaceRing(rings_[i], training_group_);
  const double built_ms = MsSince(start);
  if (!same_step) SyncState(program, scope, state, root);

  fault_stats_.last_reform_ms = MsSince(start);
  log::Warn("fleet: fault tolerance: generation {}: lost worker(s) [{}]; world {} -> {}, rank {} "
            "-> {}; re-formed in {:.1f} ms (old groups closed {:.1f}, members agreed {:.1f}, "
            "groups built {:.1f}, state {} {:.1f}); resuming at step {} (state from rank {})",
            generation, IdList(lost), old_size, role_->worker_num, old_rank,
            role_->worker_index, fault_stats_.last_reform_ms, teardown_ms, agreed_ms, built_ms,
            same_step ? "alike" : "synced", fault_stats_.last_reform_ms, state.step, root);
}

std::optional<std::vector<Tensor>> run_step(Executor& exe, const Program& program,
                                            const FeedMap& feed,
                                            const std::vector<std::string>& fetch_list,
                                            StepState& state, int64_t samples_per_rank,
                                            Scope* scope) {
  return default_fleet().run_step(exe, program, feed, fetch_list, state, samples_per_rank, scope);
}

}  // namespace flotilla::fleet
