// flotilla._core: the C++ core as a Python extension module. The pure-Python
// package (python/flotilla) gives it Paddle's names; this module stays a
// thin, typed mirror of the C++ API.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "flotilla/fleet/ops.h"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  m.doc() = "Flotilla's C++ core (programs, executor, layers, fleet, launcher).";
  flotilla::fleet::RegisterOps();
  flotilla::python::BindErrors(m);
  flotilla::python::BindTensor(m);
  flotilla::python::BindFramework(m);
  flotilla::python::BindExecutor(m);
  flotilla::python::BindLayers(m);
  flotilla::python::BindOptimizers(m);
  flotilla::python::BindIo(m);
  flotilla::python::BindFleet(m);
  flotilla::python::BindNnLayers(m);
  flotilla::python::BindVision(m);
  flotilla::python::BindFleetUtil(m);
}
