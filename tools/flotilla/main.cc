// flotilla: the command-line entry point. Subcommands:
//   flotilla launch [options] program [args...]     collective or ps job
//   flotilla launch_ps [options] program [args...]  parameter-server job
//   flotilla env [--explain]                         this process's role, and where it came from
//   flotilla doctor LOG_DIR                          what hung or failed
//   flotilla dashboard LOG_DIR                       a job's dashboard
//   flotilla timeline OUT INPUTS...                  merge timelines
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "env_command.h"
#include "flotilla/common/error.h"
#include "flotilla/common/logging.h"
#include "flotilla/launch/launcher.h"
#include "flotilla/launch/signals.h"
#include "launch_command.h"
#include "observe_commands.h"

int main(int argc, char** argv) {
  // Before anything can start a thread (see signals.h).
  flotilla::launch::BlockLauncherSignals();
  // The launcher's own messages go to stderr; stdout carries rank 0's output.
  spdlog::set_default_logger(spdlog::stderr_color_mt("flotilla"));
  flotilla::log::InitFromEnv();
  CLI::App app{"Flotilla: distributed training"};
  app.require_subcommand(1);
  flotilla::launch::LaunchOptions options;
  CLI::App* launch = flotilla::tools::AddLaunchCommand(app, "launch", false, options);
  CLI::App* launch_ps = flotilla::tools::AddLaunchCommand(app, "launch_ps", true, options);
  flotilla::tools::EnvCommand env_options;
  CLI::App* env = flotilla::tools::AddEnvCommand(app, env_options);
  int observe_code = 0;
  flotilla::tools::AddObserveCommands(app, &observe_code);
  CLI11_PARSE(app, argc, argv);
  if (env->parsed()) return flotilla::tools::RunEnvCommand(env_options);
  if (!launch->parsed() && !launch_ps->parsed()) return observe_code;
  const bool ps_only = launch_ps->parsed();
  try {
    flotilla::tools::FinishLaunchOptions(ps_only ? *launch_ps : *launch, ps_only, options);
    // The FLOTILLA_* trace settings describe traced children, not the launcher.
    flotilla::launch::ClearLauncherTraceEnv();
    if (!options.log_level.empty()) spdlog::set_level(spdlog::level::from_str(options.log_level));
    return flotilla::launch::Launch(std::move(options));
  } catch (const flotilla::Error& e) {
    // what() already starts with the error's kind ("Unavailable: ...").
    std::cerr << "flotilla " << (ps_only ? "launch_ps" : "launch") << ": " << e.what() << "\n";
    return 2;
  }
}
