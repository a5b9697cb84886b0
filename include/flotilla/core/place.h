// Where a tensor lives and a kernel runs. Flotilla runs on CPU today; the
// device kind is the seam for an accelerator backend (a kernel registry keyed
// by Place::Kind, a device allocator) without changing user code.
#pragma once

#include <string>

namespace flotilla {

class Place {
 public:
  enum class Kind { kCPU, kDevice };

  Place() = default;
  Place(Kind kind, int device_id) : kind_(kind), device_id_(device_id) {}

  Kind kind() const { return kind_; }
  int device_id() const { return device_id_; }
  bool is_cpu() const { return kind_ == Kind::kCPU; }
  std::string ToString() const;
  bool operator==(const Place& other) const = default;

 private:
  Kind kind_ = Kind::kCPU;
  int device_id_ = 0;
};

inline Place CPUPlace() { return Place(); }
// A device slot. On CPU-only machines a device id names a slot that the
// launcher hands to one process; computation still runs on the CPU.
inline Place DevicePlace(int id) { return Place(Place::Kind::kDevice, id); }

}  // namespace flotilla
