// Ctrl-C while the C++ core blocks.
//
// Python's SIGINT handler only trips a flag that the interpreter reads
// between bytecodes, and none run while the executor, a collective or a
// rendezvous holds the thread. From the first Interruptible on, SIGINT also
// sets a flag of Flotilla's (and then runs the handler that was installed —
// Python's), so the core's interrupt check (flotilla/common/interrupt.h)
// sees it within 20 ms without taking the GIL. Only then does the check take
// the GIL and run Python's signal handlers; when one raises (SIGINT's default
// raises KeyboardInterrupt) the core throws Cancelled, which errors.cc turns
// back into that Python exception.
//
// Construct an Interruptible with or without the GIL, on any thread; only
// calls on the interpreter's main thread can be interrupted (Python runs
// signal handlers there alone). Nothing is installed when SIGINT's handler
// is SIG_DFL or SIG_IGN: Ctrl-C then does what the user chose. The handler
// stays installed (re-installing it per call would cost two system calls of
// every exe.run); a handler set over it later is chained to at the next call.
#pragma once

namespace flotilla::python {

class Interruptible {
 public:
  Interruptible();
  ~Interruptible();
  Interruptible(const Interruptible&) = delete;
  Interruptible& operator=(const Interruptible&) = delete;
};

// Installs the core's interrupt check; once, when the module is imported.
void InstallInterruptCheck();

}  // namespace flotilla::python
