#include "interrupt.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <mutex>

#include <pybind11/pybind11.h>

#include "flotilla/common/interrupt.h"

namespace flotilla::python {

namespace py = pybind11;

namespace {

std::atomic<bool> pending{false};
unsigned long main_thread = 0;  // Python's ident of its main thread: pthread_self()
std::mutex mu;
int depth = 0;                     // guarded by mu
struct sigaction previous = {};    // guarded by mu; read by the handler while installed

void OnSigint(int sig, siginfo_t* info, void* context) {
  pending.store(true, std::memory_order_relaxed);
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  }
}

// The core's check: cheap until a SIGINT arrived, then Python's handlers run
// on the main thread; true when one raised.
bool PythonSignalRaised() {
  if (!pending.load(std::memory_order_relaxed)) return false;
  if (static_cast<unsigned long>(pthread_self()) != main_thread || !Py_IsInitialized()) return false;
  py::gil_scoped_acquire gil;
  pending.store(false, std::memory_order_relaxed);
  if (PyErr_Occurred() != nullptr) return true;
  return PyErr_CheckSignals() != 0;
}

}  // namespace

// Once installed, the handler stays: between calls it only sets `pending`
// and runs Python's handler, and the next check finds no Python signal
// left to raise. One sigaction() read per outermost call notices a handler
// installed over it since (signal.signal()) and chains to that one instead.
Interruptible::Interruptible() {
  std::lock_guard<std::mutex> lock(mu);
  if (depth++ > 0) return;
  struct sigaction current = {};
  sigaction(SIGINT, nullptr, &current);
  if ((current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == &OnSigint) return;
  bool python_handles = (current.sa_flags & SA_SIGINFO) != 0 ||
                        (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
  if (!python_handles) return;
  previous = current;
  struct sigaction ours = {};
  ours.sa_sigaction = &OnSigint;
  ours.sa_flags = SA_SIGINFO | (current.sa_flags & SA_RESTART);
  sigemptyset(&ours.sa_mask);
  sigaction(SIGINT, &ours, nullptr);
}

Interruptible::~Interruptible() {
  std::lock_guard<std::mutex> lock(mu);
  --depth;
}

void InstallInterruptCheck() {
  main_thread = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  SetInterruptCheck(&PythonSignalRaised);
}

}  // namespace flotilla::python
