#include "flotilla/roles/role_env.h"

#include <algorithm>
#include <cstdlib>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "flotilla/roles/hostlist.h"

namespace flotilla::roles {

const char* EnvFamilyName(EnvFamily family) {
  switch (family) {
    case EnvFamily::kFlag: return "flag";
    case EnvFamily::kFlotilla: return "Flotilla";
    case EnvFamily::kPaddle: return "Paddle";
    case EnvFamily::kPyTorch: return "PyTorch";
    case EnvFamily::kKubernetes: return "Kubernetes";
    case EnvFamily::kSlurm: return "Slurm";
    case EnvFamily::kMpi: return "Open MPI";
  }
  return "?";
}

const char* RoleFieldName(RoleField field) {
  switch (field) {
    case RoleField::kRank: return "rank";
    case RoleField::kWorldSize: return "world_size";
    case RoleField::kLocalRank: return "local_rank";
    case RoleField::kLocalWorldSize: return "local_world_size";
    case RoleField::kNodeRank: return "node_rank";
    case RoleField::kNnodes: return "nnodes";
    case RoleField::kMaster: return "master";
    case RoleField::kJobId: return "job_id";
    case RoleField::kNodes: return "nodes";
  }
  return "?";
}

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

namespace {

constexpr RoleField kAllFields[] = {
    RoleField::kRank,   RoleField::kWorldSize, RoleField::kLocalRank, RoleField::kLocalWorldSize,
    RoleField::kNodeRank, RoleField::kNnodes,  RoleField::kMaster,    RoleField::kJobId,
    RoleField::kNodes};

bool IsIdentity(RoleField f) {
  return f == RoleField::kRank || f == RoleField::kWorldSize || f == RoleField::kLocalRank ||
         f == RoleField::kLocalWorldSize || f == RoleField::kNodeRank || f == RoleField::kNnodes;
}

// Reads one family's variables into claims.
class FamilyReader {
 public:
  FamilyReader(const EnvLookup& lookup, EnvFamily family, std::vector<Claim>& out)
      : lookup_(lookup), family_(family), out_(out) {}

  // A non-empty value, or nullopt.
  std::optional<std::string> Var(const std::string& name) const {
    auto v = lookup_(name);
    if (!v || Trim(*v).empty()) return std::nullopt;
    return Trim(*v);
  }

  // The first of `names` that is set, as a non-negative integer claim.
  void Int(RoleField field, std::initializer_list<const char*> names) {
    for (const char* name : names) {
      if (auto v = Var(name)) {
        const int64_t n = ParseIntInRange(*v, StrCat("environment variable ", name), 0,
                                          (int64_t{1} << 31) - 1, "a non-negative count");
        return Add(field, std::to_string(n), name);
      }
    }
  }

  void Text(RoleField field, std::initializer_list<const char*> names) {
    for (const char* name : names) {
      if (auto v = Var(name)) return Add(field, *v, name);
    }
  }

  void Add(RoleField field, std::string value, std::string origin) {
    out_.push_back({field, std::move(value), family_, std::move(origin)});
  }

 private:
  const EnvLookup& lookup_;
  EnvFamily family_;
  std::vector<Claim>& out_;
};

void ReadFlotilla(FamilyReader r) {
  r.Text(RoleField::kMaster, {"FLOTILLA_STORE"});
  r.Text(RoleField::kJobId, {"FLOTILLA_JOB_ID"});
}

void ReadPaddle(FamilyReader r) {
  r.Int(RoleField::kRank, {"PADDLE_TRAINER_ID"});
  r.Int(RoleField::kWorldSize, {"PADDLE_TRAINERS_NUM"});
  r.Int(RoleField::kLocalRank, {"PADDLE_RANK_IN_NODE"});
  r.Int(RoleField::kLocalWorldSize, {"PADDLE_LOCAL_SIZE"});
  r.Int(RoleField::kNnodes, {"PADDLE_NNODES"});
  r.Text(RoleField::kMaster, {"PADDLE_MASTER"});
  r.Text(RoleField::kJobId, {"PADDLE_JOB_ID", "PADDLE_ELASTIC_JOB_ID"});
  // PaddleCloud's node list; the transpiler's PADDLE_TRAINERS is a count instead.
  if (auto nodes = r.Var("PADDLE_TRAINERS"); nodes && nodes->find_first_not_of("0123456789") !=
                                                           std::string::npos) {
    r.Add(RoleField::kNodes, *nodes, "PADDLE_TRAINERS");
  }
}

void ReadPyTorch(FamilyReader r) {
  r.Int(RoleField::kRank, {"RANK"});
  r.Int(RoleField::kWorldSize, {"WORLD_SIZE"});
  r.Int(RoleField::kLocalRank, {"LOCAL_RANK"});
  r.Int(RoleField::kLocalWorldSize, {"LOCAL_WORLD_SIZE"});
  r.Int(RoleField::kNodeRank, {"GROUP_RANK"});
  auto addr = r.Var("MASTER_ADDR");
  auto port = r.Var("MASTER_PORT");
  FLOTILLA_CHECK(addr.has_value() == port.has_value(), InvalidArgument, "environment variable ",
                 addr ? "MASTER_ADDR" : "MASTER_PORT", " is set but ",
                 addr ? "MASTER_PORT" : "MASTER_ADDR", " is not; PyTorch-style jobs need both");
  if (addr) {
    ParseIntInRange(*port, "environment variable MASTER_PORT", 1, kMaxPort);
    r.Add(RoleField::kMaster, StrCat(*addr, ":", *port), "MASTER_ADDR:MASTER_PORT");
  }
}

void ReadKubernetes(FamilyReader r) { r.Int(RoleField::kRank, {"JOB_COMPLETION_INDEX"}); }

// Slurm's store port when none is given: derived from the job id, as other
// Slurm-aware launchers do, so every task computes the same one.
int SlurmPort(const std::string& job_id) {
  const std::string tail = job_id.size() > 4 ? job_id.substr(job_id.size() - 4) : job_id;
  return 15000 + static_cast<int>(ParseInt(tail, "environment variable SLURM_JOB_ID"));
}

// The job's id, its nodes and the master derived from them.
void ReadSlurmJob(FamilyReader& r) {
  const auto job = r.Var("SLURM_JOB_ID");
  if (job) r.Add(RoleField::kJobId, *job, "SLURM_JOB_ID");
  for (const char* var : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    auto list = r.Var(var);
    if (!list) continue;
    const auto hosts = ExpandHostlist(*list);
    r.Add(RoleField::kNodes, Join(hosts, ","), var);
    if (job) {
      r.Add(RoleField::kMaster, StrCat(hosts.front(), ":", SlurmPort(*job)),
            StrCat(var, " (first host), port 15000 + SLURM_JOB_ID's last 4 digits"));
    }
    return;
  }
}

// Tasks on this node: the per-node counts ("2(x3),1") at SLURM_NODEID.
void ReadSlurmLocalSize(FamilyReader& r) {
  const auto node = r.Var("SLURM_NODEID");
  for (const char* var : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    auto text = r.Var(var);
    if (!text || !node) continue;
    const auto counts = ExpandTasksPerNode(*text, var);
    const int64_t index = ParseInt(*node, "environment variable SLURM_NODEID");
    FLOTILLA_CHECK(index >= 0 && index < static_cast<int64_t>(counts.size()), InvalidArgument,
                   "environment variable SLURM_NODEID=", *node, " is outside ", var, "=", *text);
    r.Add(RoleField::kLocalWorldSize, std::to_string(counts[index]), var);
    return;
  }
}

void ReadSlurm(FamilyReader r) {
  ReadSlurmJob(r);
  // Task identity only inside a job step (srun): the batch script itself is
  // not a task, though Slurm gives it SLURM_PROCID=0 and the allocation's
  // counts.
  if (!r.Var("SLURM_STEP_ID") && !r.Var("SLURM_STEPID")) return;
  r.Int(RoleField::kRank, {"SLURM_PROCID"});
  r.Int(RoleField::kWorldSize, {"SLURM_NTASKS", "SLURM_NPROCS"});
  r.Int(RoleField::kLocalRank, {"SLURM_LOCALID"});
  r.Int(RoleField::kNodeRank, {"SLURM_NODEID"});
  r.Int(RoleField::kNnodes, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"});
  ReadSlurmLocalSize(r);
}

void ReadMpi(FamilyReader r) {
  r.Int(RoleField::kRank, {"OMPI_COMM_WORLD_RANK", "PMIX_RANK"});
  r.Int(RoleField::kWorldSize, {"OMPI_COMM_WORLD_SIZE"});
  r.Int(RoleField::kLocalRank, {"OMPI_COMM_WORLD_LOCAL_RANK"});
  r.Int(RoleField::kLocalWorldSize, {"OMPI_COMM_WORLD_LOCAL_SIZE"});
  r.Text(RoleField::kJobId, {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"});
}

std::string Describe(const Claim& c) {
  return StrCat(c.origin, "=", c.value, " (", EnvFamilyName(c.family), ")");
}

// Identity fields: every family that gives one must agree with the winner.
void CheckAgreement(const std::vector<Claim>& claims) {
  for (const Claim& a : claims) {
    if (a.family == EnvFamily::kFlag || !IsIdentity(a.field)) continue;
    for (const Claim& b : claims) {
      if (&b == &a) break;
      if (b.family == EnvFamily::kFlag || b.field != a.field || b.value == a.value) continue;
      FLOTILLA_THROW(InvalidArgument, "conflicting sources for the ", RoleFieldName(a.field),
                     ": ", Describe(b), " but ", Describe(a),
                     "; unset one of them, or make them agree");
    }
  }
}

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

}  // namespace

std::vector<int> ExpandTasksPerNode(const std::string& text, const std::string& var) {
  std::vector<int> out;
  for (const std::string& item : Split(text, ',', /*skip_empty=*/false)) {
    const size_t paren = item.find("(x");
    const std::string what = StrCat("environment variable ", var, "=", text);
    const int64_t count = ParseInt(item.substr(0, paren), what);
    int64_t repeat = 1;
    if (paren != std::string::npos) {
      FLOTILLA_CHECK(EndsWith(item, ")"), InvalidArgument, what, ": '", item,
                     "' should be COUNT or COUNT(xREPEAT)");
      repeat = ParseInt(item.substr(paren + 2, item.size() - paren - 3), what);
    }
    FLOTILLA_CHECK(count >= 0 && repeat >= 1 &&
                       repeat <= static_cast<int64_t>(kMaxHostlistHosts - out.size()),
                   InvalidArgument, what, ": '", item, "' is out of range");
    out.insert(out.end(), static_cast<size_t>(repeat), static_cast<int>(count));
  }
  return out;
}

RoleEnvironment RoleEnvironment::Read(const EnvLookup& lookup, std::vector<Claim> flags) {
  std::vector<Claim> read = std::move(flags);
  for (auto& c : read) c.family = EnvFamily::kFlag;
  ReadFlotilla(FamilyReader(lookup, EnvFamily::kFlotilla, read));
  ReadPaddle(FamilyReader(lookup, EnvFamily::kPaddle, read));
  ReadPyTorch(FamilyReader(lookup, EnvFamily::kPyTorch, read));
  ReadKubernetes(FamilyReader(lookup, EnvFamily::kKubernetes, read));
  ReadSlurm(FamilyReader(lookup, EnvFamily::kSlurm, read));
  ReadMpi(FamilyReader(lookup, EnvFamily::kMpi, read));
  // Families were read in precedence order; a stable sort by field keeps it.
  std::stable_sort(read.begin(), read.end(),
                   [](const Claim& a, const Claim& b) { return a.field < b.field; });
  CheckAgreement(read);
  RoleEnvironment env;
  env.claims_ = std::move(read);
  return env;
}

const Claim* RoleEnvironment::Get(RoleField field) const {
  for (const Claim& c : claims_) {
    if (c.field == field) return &c;
  }
  return nullptr;
}

std::optional<std::string> RoleEnvironment::Value(RoleField field) const {
  const Claim* c = Get(field);
  return c ? std::optional<std::string>(c->value) : std::nullopt;
}

std::optional<int> RoleEnvironment::Int(RoleField field) const {
  const Claim* c = Get(field);
  if (c == nullptr) return std::nullopt;
  return static_cast<int>(ParseInt(c->value, StrCat(c->origin, " (", RoleFieldName(field), ")")));
}

std::string RoleEnvironment::Explain() const {
  std::string out = Pad("field", 18) + Pad("value", 24) + "source\n";
  for (RoleField field : kAllFields) {
    const Claim* winner = Get(field);
    if (winner == nullptr) {
      out += Pad(RoleFieldName(field), 18) + Pad("-", 24) + "(no source)\n";
      continue;
    }
    out += Pad(RoleFieldName(field), 18) + Pad(winner->value, 24) + winner->origin + " (" +
           EnvFamilyName(winner->family) + ")\n";
    for (const Claim& c : claims_) {
      if (c.field != field || &c == winner) continue;
      const bool agrees = c.value == winner->value;
      out += Pad("", 18) + Pad("", 24) + (agrees ? "agrees: " : "overridden: ") + Describe(c) + "\n";
    }
  }
  return out;
}

std::string RoleEnvironment::Summary() const {
  std::string out;
  for (RoleField field : kAllFields) {
    if (const Claim* c = Get(field)) out += StrCat(RoleFieldName(field), "=", c->value, "\n");
  }
  return out;
}

const std::vector<std::string>& EngineTaskVariableNames() {
  static const std::vector<std::string> names = {
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
      "MASTER_PORT", "JOB_COMPLETION_INDEX", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS",
      "SLURM_LOCALID", "SLURM_TASKS_PER_NODE", "SLURM_STEP_TASKS_PER_NODE", "SLURM_NODEID",
      "SLURM_NNODES", "SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES",
      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
      "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_RANK"};
  return names;
}

}  // namespace flotilla::roles
