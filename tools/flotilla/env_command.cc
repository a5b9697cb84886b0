#include "env_command.h"

#include <iostream>

#include "flotilla/common/error.h"
#include "flotilla/core/blas.h"
#include "flotilla/roles/role_env.h"

namespace flotilla::tools {

using roles::Claim;
using roles::EnvFamily;
using roles::RoleField;

CLI::App* AddEnvCommand(CLI::App& app, EnvCommand& c) {
  CLI::App* env = app.add_subcommand(
      "env", "show this process's place in a job as the role-resolution chain reads it: "
             "flags > Flotilla > Paddle > PyTorch > Kubernetes > Slurm > Open MPI");
  env->add_flag("--explain", c.explain, "say which variable gave each value, and what it "
                "agrees with or overrides; then the CPU's vector extensions and the math kernels in use");
  env->add_option("--rank", c.rank, "as an explicit flag would give it");
  env->add_option("--world_size", c.world_size, "as an explicit flag would give it");
  env->add_option("--nnodes", c.nnodes, "as an explicit flag would give it");
  env->add_option("--master", c.master, "HOST:PORT, as an explicit flag would give it");
  env->add_option("--job_id", c.job_id, "as an explicit flag would give it");
  env->footer("See docs/env.md (the table of every variable read) and docs/deploy.md.");
  return env;
}

namespace {

std::vector<Claim> FlagClaims(const EnvCommand& c) {
  std::vector<Claim> flags;
  auto add = [&](RoleField f, const std::string& v, const char* name) {
    flags.push_back({f, v, EnvFamily::kFlag, name});
  };
  if (c.rank >= 0) add(RoleField::kRank, std::to_string(c.rank), "--rank");
  if (c.world_size > 0) add(RoleField::kWorldSize, std::to_string(c.world_size), "--world_size");
  if (c.nnodes > 0) add(RoleField::kNnodes, std::to_string(c.nnodes), "--nnodes");
  if (!c.master.empty()) add(RoleField::kMaster, c.master, "--master");
  if (!c.job_id.empty()) add(RoleField::kJobId, c.job_id, "--job_id");
  return flags;
}

// The CPU's vector extensions and the GEMM kernels a Flotilla process
// started with this environment runs (FLOTILLA_BLAS_CORETYPE,
// OPENBLAS_NUM_THREADS).
std::string MathExplain() {
  const blas::Kernels k = blas::KernelInfo();
  std::string why = k.chosen_by;
  if (k.chosen_by == "CPU features") why += " (OPENBLAS_CORETYPE, if set, is left to NumPy and PyTorch)";
  return "math kernels:\n"
         "  cpu       " + k.cpu + "\n"
         "  blas      " + k.library + (k.private_instance ? ", Flotilla's own instance" : ", the process's shared instance") + "\n"
         "  kernels   " + k.core + ", chosen by " + why + "\n"
         "  threads   " + std::to_string(k.threads) + " (OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS, else one per core)\n";
}

}  // namespace

int RunEnvCommand(const EnvCommand& c) {
  try {
    const auto roles = roles::RoleEnvironment::Read(roles::ProcessEnv(), FlagClaims(c));
    std::cout << (c.explain ? roles.Explain() : roles.Summary()) << std::flush;
    if (c.explain) std::cout << MathExplain() << std::flush;
    return 0;
  } catch (const Error& e) {
    std::cerr << "flotilla env: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace flotilla::tools
