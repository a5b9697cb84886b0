#include "ps/trainer_barrier.h"

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::ps {

TrainerBarrier::TrainerBarrier(int num_trainers, OnComplete on_complete)
    : num_trainers_(num_trainers), on_complete_(std::move(on_complete)) {
  FLOTILLA_ENFORCE_GE(num_trainers, 1, "parameter server trainer count");
}

void TrainerBarrier::CheckTrainer(int trainer_id) const {
  FLOTILLA_ENFORCE(trainer_id >= 0 && trainer_id < num_trainers_, "trainer id ", trainer_id,
                   " is outside [0, ", num_trainers_, ")");
}

std::string TrainerBarrier::MissingTrainers() const {
  std::vector<std::string> missing;
  for (int t = 0; t < num_trainers_; ++t) {
    if (!arrived_.count(t) && !finished_.count(t)) missing.push_back(std::to_string(t));
  }
  return StrCat("[", Join(missing, ","), "]");
}

void TrainerBarrier::CompleteIfReady() {
  const int live = num_trainers_ - static_cast<int>(finished_.size());
  if (arrived_.empty() || static_cast<int>(arrived_.size()) < live) return;
  on_complete_(live);
  arrived_.clear();
  ++generation_;
  cv_.notify_all();
}

void TrainerBarrier::Arrive(int trainer_id, std::chrono::milliseconds timeout) {
  CheckTrainer(trainer_id);
  std::unique_lock<std::mutex> lock(mu_);
  FLOTILLA_CHECK(cancelled_.empty(), Unavailable, cancelled_);
  FLOTILLA_ENFORCE(!finished_.count(trainer_id), "trainer ", trainer_id,
                   " called Barrier after it finished");
  const long my_generation = generation_;
  arrived_.insert(trainer_id);
  CompleteIfReady();
  const bool released = cv_.wait_for(lock, timeout, [&] {
    return generation_ != my_generation || !cancelled_.empty();
  });
  if (generation_ != my_generation) return;
  FLOTILLA_CHECK(cancelled_.empty(), Unavailable, cancelled_);
  if (!released) {
    std::string missing = MissingTrainers();
    arrived_.erase(trainer_id);
    FLOTILLA_THROW(DeadlineExceeded, "barrier: trainers ", missing, " did not arrive within ",
                   timeout.count(), " ms");
  }
}

bool TrainerBarrier::Finish(int trainer_id) {
  CheckTrainer(trainer_id);
  std::lock_guard<std::mutex> lock(mu_);
  finished_.insert(trainer_id);
  arrived_.erase(trainer_id);
  CompleteIfReady();
  return static_cast<int>(finished_.size()) == num_trainers_;
}

void TrainerBarrier::Cancel(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = reason;
  cv_.notify_all();
}

std::vector<int> TrainerBarrier::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {finished_.begin(), finished_.end()};
}

}  // namespace flotilla::ps
