// The process-wide parameter-server context of a trainer. fleet::init_worker
// (or the transpiled startup program) installs it; the framework's send,
// recv and distributed lookup ops find the client and communicators here;
// Executor::close() / fleet::stop_worker() call FinishTrainerRuntime().
#pragma once

#include <memory>
#include <string>

#include "flotilla/ps/client.h"
#include "flotilla/ps/communicator.h"
#include "flotilla/ps/geo_communicator.h"
#include "flotilla/ps/server.h"

namespace flotilla::ps {

struct TrainerRuntime {
  PsMode mode = PsMode::kSync;
  std::shared_ptr<PsClient> client;            // always set
  std::shared_ptr<AsyncCommunicator> async;    // async mode, when used
  std::shared_ptr<GeoCommunicator> geo;        // GEO mode, when used
};

// Replaces the installed runtime (nullptr uninstalls). Thread-safe.
void InstallTrainerRuntime(std::shared_ptr<TrainerRuntime> runtime);
// The installed runtime, or nullptr.
std::shared_ptr<TrainerRuntime> CurrentTrainerRuntime();
// The installed runtime; throws NotFound naming `who` ("op 'send'") when
// none is installed.
std::shared_ptr<TrainerRuntime> RequireTrainerRuntime(const std::string& who);
// Stops the async communicator (flushing queued gradients), pushes the last
// GEO delta, tells every server this trainer has finished and uninstalls
// the runtime. Without a runtime it does nothing; calling it twice is fine.
// Errors (an unreachable server) propagate after the runtime is uninstalled.
void FinishTrainerRuntime();

}  // namespace flotilla::ps
