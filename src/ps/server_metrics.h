// What a parameter server adds to its process's /metrics: the rows of each
// sparse table, read at scrape time from every server alive in the process.
// Private to ps.
#pragma once

#include "flotilla/ps/server.h"

namespace flotilla::ps {

// Between Start() and the state's destruction. Thread-safe.
void WatchTables(const PsServer::State* state);
void UnwatchTables(const PsServer::State* state);

}  // namespace flotilla::ps
