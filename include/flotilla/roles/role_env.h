// The role-resolution chain: where a process (or a launcher) learns its
// place in a job from whatever started it — flotilla launch, Paddle's
// launcher or cluster platforms, torchrun or a PyTorchJob, a Kubernetes
// Indexed Job, Slurm, or mpirun.
//
// Every family of variables is read into claims ("rank = 3, from
// SLURM_PROCID"); for each field the claim of the highest family wins:
//
//   explicit flags > Flotilla > Paddle > PyTorch > Kubernetes > Slurm > Open MPI/PMIx
//
// Identity fields (rank, world size, local rank and size, node rank, node
// count) must agree across every family that gives them: two that disagree
// are an error naming both variables, because a silent winner would start
// two processes that both believe they are rank 0. Derived fields (the
// master, the job id, the node list) are overridden silently by a higher
// family — a MASTER_ADDR set in a batch script replaces Slurm's "first
// host". Flags override everything without a check. docs/env.md has the
// table of every variable read.
//
// Plain values; reading never touches the network.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace flotilla::roles {

enum class EnvFamily { kFlag, kFlotilla, kPaddle, kPyTorch, kKubernetes, kSlurm, kMpi };

// "flag", "Flotilla", "Paddle", "PyTorch", "Kubernetes", "Slurm", "Open MPI".
const char* EnvFamilyName(EnvFamily family);

enum class RoleField {
  kRank,            // this process's rank among the job's processes
  kWorldSize,       // processes in the job
  kLocalRank,       // index among the processes on this node
  kLocalWorldSize,  // processes on this node
  kNodeRank,        // this node's index
  kNnodes,          // nodes in the job
  kMaster,          // host:port of the job's rendezvous store
  kJobId,           // the job's name (keys in the store, etcd)
  kNodes,           // every node's host, comma list, node order
};

// "rank", "world_size", ... as printed by `flotilla env`.
const char* RoleFieldName(RoleField field);

// One family's statement about one field.
struct Claim {
  RoleField field;
  std::string value;
  EnvFamily family;
  std::string origin;  // what it came from: "SLURM_PROCID", "SLURM_JOB_NODELIST (first host)"
};

// How to read a variable: nullopt when unset. Tests pass a map.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
// The process's environment.
EnvLookup ProcessEnv();

class RoleEnvironment {
 public:
  // Reads every family through `lookup`; `flags` are claims of the command
  // line (family kFlag). Throws InvalidArgument when two families disagree
  // on an identity field (naming both variables and values) or a variable
  // is malformed (naming it: a non-integer SLURM_PROCID, a bad hostlist).
  static RoleEnvironment Read(const EnvLookup& lookup, std::vector<Claim> flags = {});

  // The winning claim of `field`, or nullptr when no family gives it.
  const Claim* Get(RoleField field) const;
  std::optional<std::string> Value(RoleField field) const;
  std::optional<int> Int(RoleField field) const;
  // True when some family names this process's rank (a job started it).
  bool HasRank() const { return Get(RoleField::kRank) != nullptr; }
  // Every claim read, winners first within a field, fields in enum order.
  const std::vector<Claim>& claims() const { return claims_; }

  // `flotilla env --explain`: for each field, the value, the variable it
  // came from and its family, and the lower claims it shadows (agreeing or
  // overridden).
  std::string Explain() const;
  // `flotilla env`: NAME=value lines of the resolved fields.
  std::string Summary() const;

 private:
  std::vector<Claim> claims_;
};

// Variables that describe the task an engine started (Slurm's, PyTorch's,
// Kubernetes', Open MPI's task-level identity, and Slurm's node numbering,
// since a Flotilla node is one launcher). A launcher started as such a task
// drops them from its children's environment: they describe the launcher,
// not the children, and would contradict the children's ranks.
const std::vector<std::string>& EngineTaskVariableNames();

// Slurm's per-node task counts ("2(x3),1" → 2,2,2,1). Throws
// InvalidArgument naming `var` when malformed.
std::vector<int> ExpandTasksPerNode(const std::string& text, const std::string& var);

}  // namespace flotilla::roles
