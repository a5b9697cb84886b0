// The `env` subcommand: what the role-resolution chain makes of this
// environment (include/flotilla/roles/role_env.h).
//
//   flotilla env              rank=3, world_size=4, ... as NAME=value lines
//   flotilla env --explain    each value with the variable and family it came
//                             from, and the lower claims it agrees with or
//                             overrides; then the CPU's vector extensions and
//                             the GEMM kernels a Flotilla process runs here
#pragma once

#include <CLI/CLI.hpp>

namespace flotilla::tools {

struct EnvCommand {
  bool explain = false;
  int rank = -1;
  int world_size = 0;
  int nnodes = 0;
  std::string master;
  std::string job_id;
};

CLI::App* AddEnvCommand(CLI::App& app, EnvCommand& command);

// Prints the resolution to stdout; returns the exit code (2 with the error
// on stderr when the sources conflict or a variable is malformed).
int RunEnvCommand(const EnvCommand& command);

}  // namespace flotilla::tools
