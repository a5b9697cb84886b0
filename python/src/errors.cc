// C++ errors → Python exceptions, and Ctrl-C → KeyboardInterrupt.
//
// flotilla::Error subclasses map to the classes of flotilla.errors (defined
// in Python so that InvalidArgumentError can be both a flotilla error and a
// ValueError); the message is the C++ message, unchanged. A Cancelled error
// means the interrupt check below saw a signal: the Python exception that
// the signal's handler raised (KeyboardInterrupt for SIGINT) is already set
// and propagates as is.
#include <thread>

#include "bindings.h"
#include "flotilla/common/error.h"
#include "flotilla/common/interrupt.h"

namespace flotilla::python {

namespace {

std::thread::id main_thread;

// Runs Python's signal handlers when called on the main thread; true when
// one raised. Never takes the GIL on other threads, so a thread that a GIL
// holder waits for cannot deadlock here.
bool PythonSignalRaised() {
  if (std::this_thread::get_id() != main_thread || !Py_IsInitialized()) return false;
  py::gil_scoped_acquire gil;
  if (PyErr_Occurred() != nullptr) return true;
  return PyErr_CheckSignals() != 0;
}

const char* ClassName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "InvalidArgumentError";
    case ErrorCode::kNotFound: return "NotFoundError";
    case ErrorCode::kAlreadyExists: return "AlreadyExistsError";
    case ErrorCode::kUnavailable: return "UnavailableError";
    case ErrorCode::kDeadlineExceeded: return "DeadlineExceededError";
    case ErrorCode::kCorruption: return "CorruptionError";
    case ErrorCode::kUnimplemented: return "UnimplementedError";
    case ErrorCode::kInternal: return "InternalError";
  }
  return "Error";
}

void Translate(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const Cancelled& e) {
    if (PyErr_Occurred() == nullptr) PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
  } catch (const Error& e) {
    py::object cls = py::module_::import("flotilla.errors").attr(ClassName(e.code()));
    PyErr_SetString(cls.ptr(), e.what());
  }
}

}  // namespace

void BindErrors(py::module_& m) {
  main_thread = std::this_thread::get_id();
  py::register_exception_translator(&Translate);
  SetInterruptCheck(&PythonSignalRaised);
}

}  // namespace flotilla::python
