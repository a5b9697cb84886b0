// The `launch` and `launch_ps` subcommands: CLI11 bindings of
// flotilla::launch::LaunchOptions (every option, its legacy aliases and its
// environment variable; see docs/cli.md).
#pragma once

#include <CLI/CLI.hpp>

#include "flotilla/launch/options.h"

namespace flotilla::tools {

// Adds the subcommand `name` to `app`, parsing into `options`. `ps_only`
// makes it the parameter-server launcher (launch_ps: run_mode ps).
CLI::App* AddLaunchCommand(CLI::App& app, const std::string& name, bool ps_only,
                           launch::LaunchOptions& options);

// Completes `options` after parsing: the program and its arguments (what
// followed the options), seconds converted, fallbacks from secondary
// environment variables (PADDLE_ELASTIC_JOB_ID; PADDLE_ELASTIC_TTL and
// PADDLE_ELASTIC_TIMEOUT, where the option and Flotilla's variable win).
// Throws InvalidArgument naming a Paddle variable that is not a duration.
void FinishLaunchOptions(CLI::App& command, bool ps_only, launch::LaunchOptions& options);

}  // namespace flotilla::tools
