// C++ errors → Python exceptions.
//
// flotilla::Error subclasses map to the classes of flotilla.errors (defined
// in Python so that InvalidArgumentError can be both a flotilla error and a
// ValueError); the message is the C++ message, unchanged. A Cancelled error
// means the interrupt check (interrupt.h) ran Python's signal handlers and
// one raised: that exception (KeyboardInterrupt for Ctrl-C) is already set
// and propagates as is.
#include "bindings.h"
#include "flotilla/common/error.h"
#include "flotilla/common/interrupt.h"
#include "interrupt.h"

namespace flotilla::python {

namespace {

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
    case ErrorCode::kCancelled: return "CancelledError";
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
  py::register_exception_translator(&Translate);
  InstallInterruptCheck();
  m.def("_raise", [](const std::string& kind, const std::string& message) {
    if (kind == "InvalidArgument") throw InvalidArgument(message);
    if (kind == "NotFound") throw NotFound(message);
    if (kind == "AlreadyExists") throw AlreadyExists(message);
    if (kind == "Unavailable") throw Unavailable(message);
    if (kind == "DeadlineExceeded") throw DeadlineExceeded(message);
    if (kind == "Corruption") throw Corruption(message);
    if (kind == "Unimplemented") throw Unimplemented(message);
    if (kind == "Internal") throw Internal(message);
    throw std::runtime_error(message);
  }, py::arg("kind"), py::arg("message"), "Throws the C++ error `kind` (tests of the error mapping).");
}

}  // namespace flotilla::python
