// Flight-recorder dumps: this process's records, identity, current op and
// step as JSON in FLOTILLA_FLIGHT_DIR/<label>.flight.json (written
// atomically), which `flotilla doctor` reads.
//
// Dumps happen on a stall (a record pending longer than
// FLOTILLA_STALL_TIMEOUT, or the comm stall monitor), on a failed record, on
// SIGUSR1 (flotilla launch sends it to every process before stopping a
// job), and at exit. A stall also leaves <label>.stalled holding one line
// saying what is pending, which the launcher watches.
#pragma once

#include <string>
#include <string_view>

namespace flotilla::trace {

// Asks the trace thread to dump soon (returns at once). Thread-safe; not
// for signal handlers (SIGUSR1 has its own path).
void RequestDump(std::string_view reason);
// Dumps now on the calling thread; returns the file written, "" when no
// dump directory is set. Thread-safe.
std::string DumpFlight(std::string_view reason);
// Reports a stall seen elsewhere (the comm stall monitor): dumps and writes
// the .stalled marker with `what`. Thread-safe.
void ReportStall(std::string_view what);

// The dump file of a process label inside `dir`.
std::string FlightDumpPath(const std::string& dir, const std::string& label);
std::string StallMarkerPath(const std::string& dir, const std::string& label);

}  // namespace flotilla::trace
