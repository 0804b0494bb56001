// fork(): a child of a process that has initialised the CUDA driver cannot use CUDA (the driver's
// state does not survive fork(); its calls fail or hang). The probe notes when it initialised the
// driver, and a pthread_atfork handler marks the child of such a process. There arrayport behaves
// as on a machine without a usable device (host work goes on) and whatever needs a device throws
// cuda_error naming fork() and the 'spawn' start method. The flags are per shared object: an
// extension that never probed does not know that another one did. No CUDA call here.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/error.hpp>

#include <atomic>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#define ARRAYPORT_HAS_FORK 1
#else
#define ARRAYPORT_HAS_FORK 0
#endif

namespace arrayport::runtime {

namespace detail {

struct fork_flags {
  std::atomic<bool> cuda_initialised{false};  ///< this process initialised the CUDA driver
  std::atomic<bool> forked_child{false};      ///< a fork() child of a process that had
};

inline fork_flags& fork_state() noexcept {
  static fork_flags flags;
  return flags;
}

/// The atfork child handler: async-signal-safe (two atomics).
inline void mark_fork_child() noexcept {
  fork_flags& f = fork_state();
  if (f.cuda_initialised.load(std::memory_order_relaxed))
    f.forked_child.store(true, std::memory_order_relaxed);
}

/// Records that this process initialised the CUDA driver, so that its fork() children refuse
/// CUDA. The probe calls it; tests call it to simulate a CUDA parent in a CPU-only build.
inline void note_cuda_initialised() noexcept {
#if ARRAYPORT_HAS_FORK
  static const bool registered = pthread_atfork(nullptr, nullptr, &mark_fork_child) == 0;
  (void)registered;
#endif
  fork_state().cuda_initialised.store(true, std::memory_order_relaxed);
}

inline const char* forked_reason() noexcept {
  return "CUDA cannot be used in this process: it is a fork() child of a process that had "
         "initialised CUDA, and the driver's state does not survive fork(). Start worker "
         "processes with the 'spawn' (or 'forkserver') start method instead: "
         "multiprocessing.set_start_method('spawn'), or "
         "multiprocessing.get_context('spawn') for a Pool or an executor";
}

}  // namespace detail

/// True in a fork() child of a process where arrayport had initialised CUDA: no device is
/// available here, and whatever needs one throws cuda_error naming fork().
inline bool forked_after_cuda_init() noexcept {
  return detail::fork_state().forked_child.load(std::memory_order_relaxed);
}

/// Throws cuda_error (cudaErrorInitializationError) for `what` in such a child.
inline void check_not_forked(const char* what) {
  if (!forked_after_cuda_init()) return;
  // 3 is cudaErrorInitializationError, what the runtime itself reports at best; a CPU-only build
  // has no cuda_runtime_api.h to name it from.
  throw cuda_error(3, "cudaErrorInitializationError", detail::forked_reason(), what, __FILE__,
                   __LINE__);
}

}  // namespace arrayport::runtime
