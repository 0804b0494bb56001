// Releasing the GIL around long C++ work (kernels, copies, waits), safely at interpreter shutdown:
// CPython (before 3.14) unwinds a thread that takes the GIL back during finalisation, which
// nanobind's noexcept guards turn into std::terminate; this guard parks such a thread instead.
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
