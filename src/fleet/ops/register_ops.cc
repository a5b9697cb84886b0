#include "flotilla/fleet/ops.h"

#include "fleet/ops/collective_ops.h"
#include "fleet/ps/ps_ops.h"

namespace flotilla::fleet {

void RegisterOps() {
  RegisterCollectiveOps();
  RegisterPsOps();
}

}  // namespace flotilla::fleet
