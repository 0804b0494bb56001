// Releasing the GIL around long C++ work (kernels, copies, waits), safely at interpreter shutdown.
//
// A thread that takes the GIL back once finalisation has begun (a daemon thread still in a kernel
// when the main thread exits) is ended by CPython with PyThread_exit_thread (before 3.14):
// pthread_exit unwinds its C++ frames, and nanobind's gil_scoped_release (a noexcept destructor)
// and its dispatcher's catch (...) turn that into std::terminate, aborting the exiting process.
// This guard parks such a thread instead, as Python 3.14 does; the process exits around it.
#pragma once

#include <Python.h>

#include <chrono>
#include <thread>

#if defined(__GLIBCXX__)
#include <cxxabi.h>
#endif

namespace arrayport::ext {

class gil_release {
 public:
  gil_release() noexcept : m_state(PyEval_SaveThread()) {}
  ~gil_release() {
#if defined(__GLIBCXX__)
    try {
      PyEval_RestoreThread(m_state);
    } catch (abi::__forced_unwind&) {  // CPython ends this thread: the interpreter is going away
      for (;;) std::this_thread::sleep_for(std::chrono::hours(24));  // never leave the handler
    }
#else
    PyEval_RestoreThread(m_state);
#endif
  }
  gil_release(const gil_release&) = delete;
  gil_release& operator=(const gil_release&) = delete;

 private:
  PyThreadState* m_state;
};

}  // namespace arrayport::ext
