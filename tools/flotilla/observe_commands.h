// The observability subcommands:
//   flotilla doctor LOG_DIR                 what hung or failed, and where
//   flotilla dashboard LOG_DIR [--port P]   the job's dashboard, after the job
//   flotilla timeline OUT LOG_DIR|FILE...   merge per-process timelines
#pragma once

#include <CLI/CLI.hpp>

namespace flotilla::tools {

// Adds the three subcommands; each runs from its callback and sets
// *exit_code.
void AddObserveCommands(CLI::App& app, int* exit_code);

}  // namespace flotilla::tools
