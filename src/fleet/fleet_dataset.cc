// Fleet's Dataset calls across workers: global_shuffle and the summed sizes,
// through the job's store.
#include "flotilla/common/enforce.h"
#include "flotilla/fleet/fleet.h"
#include "flotilla/io/dataset.h"

namespace flotilla::fleet {

void Fleet::global_shuffle(io::Dataset& dataset, uint64_t seed) {
  CheckInit("global_shuffle");
  std::shared_ptr<comm::Store> store = WorkersStore();
  const std::string round =
      "dataset/" + std::to_string(inits_) + "/global_shuffle/" + std::to_string(dataset_rounds_++);
  if (!store) return dataset.LocalShuffle(seed);
  dataset.GlobalShuffle(*store, role_->worker_index, role_->worker_num, seed, round);
}

int64_t Fleet::sum_over_workers(int64_t value) {
  CheckInit("sum_over_workers");
  std::shared_ptr<comm::Store> store = WorkersStore();
  const std::string round = "dataset/" + std::to_string(inits_) + "/sum/" + std::to_string(dataset_rounds_++);
  if (!store) return value;
  store->add(round + "/sum", value);
  if (store->add(round + "/arrived", 1) == role_->worker_num) store->setString(round + "/open", "1");
  store->wait({round + "/open"}, options_.timeout);
  return store->add(round + "/sum", 0);
}

}  // namespace flotilla::fleet
