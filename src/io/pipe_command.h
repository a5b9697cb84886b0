// Reading a data file through a Dataset's pipe command, as Paddle does
// (`cat file | command`): the command runs under /bin/sh with the file on
// its stdin, and its stdout is parsed as MultiSlot text.
#pragma once

#include <string>

#include "flotilla/io/multislot.h"

namespace flotilla::io {

// Parses `path` through `command` into `out` (whose specs are the parser's);
// returns the records appended. An empty command or "cat" reads the file
// directly. Blocks until the command has exited. Throws NotFound when the
// file cannot be read, Corruption "<path> (via '<command>'):<line>: ..."
// for a malformed output line (the command is then stopped), and Unavailable
// naming the exit status (or signal) and the tail of stderr when the
// command fails — also when it failed on its own and its cut output then
// failed to parse. Safe to call from several threads at once. `on_chunk`:
// as MultiSlotParser::ParseFd's (streaming records as they are parsed).
int64_t ParseThroughPipe(const MultiSlotParser& parser, const std::string& path, const std::string& command,
                         SlotColumns* out, const MultiSlotParser::ChunkSink& on_chunk = {});

}  // namespace flotilla::io
