// Clean-up of Flotilla's shared-memory segments: what a launcher (or any
// process) removes when a job's processes are gone.
//
// A name says which job owns the segment and whether that job still lives:
//   /flotilla.<job>.<owner pid>.<owner start>.<creator pid>.<random>
// The owner is the launcher that started the job (it exports the prefix
// "<job>.<pid>.<start>" to its processes as FLOTILLA_SHM_JOB), or the
// creating process itself when no launcher did. <owner start> is the owner's
// start time (clock ticks after boot, /proc/PID/stat field 22), so a pid
// reused by another process does not keep a dead job's segments alive.
//
// Segments normally lose their names as soon as every rank has mapped them
// (ShmSegment). A process killed during setup cannot unlink; the launcher
// removes its job's names when it exits, however the job ended, and every
// launcher and segment creator removes the names of owners that are gone.
#pragma once

#include <string>
#include <vector>

namespace flotilla::comm::shm {

// The directory where POSIX shared memory names live on Linux.
inline constexpr const char* kShmDir = "/dev/shm";

// "<job>.<pid>.<start>" for this process as a job's owner; `job` is reduced
// to at most 32 of [A-Za-z0-9_-] ("job" when empty). A launcher exports it to
// the processes it starts as FLOTILLA_SHM_JOB.
std::string JobKeyOfThisProcess(const std::string& job);

// Unlinks every Flotilla segment in `dir` whose owner process is gone;
// returns the names removed. Names it cannot parse are left alone.
std::vector<std::string> RemoveStaleSegments(const std::string& dir = kShmDir);

// Unlinks every segment of job key `key` (see JobKeyOfThisProcess) in `dir`;
// returns the names removed.
std::vector<std::string> RemoveJobSegments(const std::string& key,
                                           const std::string& dir = kShmDir);

}  // namespace flotilla::comm::shm
