#include "flotilla/ps/trainer_runtime.h"

#include <mutex>

#include "flotilla/common/enforce.h"

namespace flotilla::ps {
namespace {

std::mutex& RuntimeMutex() {
  static std::mutex mu;
  return mu;
}

std::shared_ptr<TrainerRuntime>& Installed() {
  static std::shared_ptr<TrainerRuntime> runtime;  // guarded by RuntimeMutex()
  return runtime;
}

}  // namespace

void InstallTrainerRuntime(std::shared_ptr<TrainerRuntime> runtime) {
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  Installed() = std::move(runtime);
}

std::shared_ptr<TrainerRuntime> CurrentTrainerRuntime() {
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  return Installed();
}

std::shared_ptr<TrainerRuntime> RequireTrainerRuntime(const std::string& who) {
  auto runtime = CurrentTrainerRuntime();
  FLOTILLA_CHECK(runtime && runtime->client, NotFound, who,
                 " needs a parameter-server client, but none is installed "
                 "(call fleet::init_worker() or run the transpiled startup program first)");
  return runtime;
}

void FinishTrainerRuntime() {
  std::shared_ptr<TrainerRuntime> runtime;
  {
    std::lock_guard<std::mutex> lock(RuntimeMutex());
    runtime = std::move(Installed());
  }
  if (!runtime) return;
  if (runtime->async) runtime->async->Stop();
  if (runtime->geo) runtime->geo->Sync();
  if (runtime->client) runtime->client->Finish();
}

}  // namespace flotilla::ps
