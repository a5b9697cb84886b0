#include "flotilla/core/place.h"

namespace flotilla {

std::string Place::ToString() const {
  return is_cpu() ? "CPUPlace" : "DevicePlace(" + std::to_string(device_id_) + ")";
}

}  // namespace flotilla
