// fork(): a child of a process that initialised CUDA refuses CUDA with a cuda_error naming fork()
// and the 'spawn' start method, and keeps host memory. Without a GPU, note_cuda_initialised()
// stands in for the probe's initialisation. Each check runs in a child process, so the test
// process itself is left as it was.
#include <arrayport/buffer.hpp>
#include <arrayport/error.hpp>
#include <arrayport/memory_resource.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/stream.hpp>

#include <gtest/gtest.h>

#include <string>

#if ARRAYPORT_HAS_FORK
#include <sys/wait.h>
#include <unistd.h>

namespace rt = arrayport::runtime;

namespace {

bool mentions_fork_and_spawn(const std::string& s) {
  return s.find("fork()") != std::string::npos && s.find("'spawn'") != std::string::npos;
}

// The checks of a child that must refuse CUDA: 0 when all pass, else the number of the first
// that failed (the exit status says which).
int refuses_cuda_but_keeps_the_host() {
  if (!rt::forked_after_cuda_init()) return 11;
  if (rt::is_available() || rt::device_count() != 0) return 12;
  if (!mentions_fork_and_spawn(rt::probe().reason) || rt::probe().status != 3) return 13;
  try {
    rt::require_device("the test");
    return 14;
  } catch (const arrayport::cuda_error& e) {
    if (e.status() != 3 || e.status_name() != "cudaErrorInitializationError" ||
        !mentions_fork_and_spawn(e.what()) || e.api() != "the test")
      return 15;
  }
  try {
    arrayport::buffer b(64, arrayport::memory_kind::device);
    return 16;
  } catch (const arrayport::cuda_error&) {
  }
  try {
    arrayport::stream s;
    return 17;
  } catch (const arrayport::cuda_error&) {
  }
  // Host memory, and managed memory's host fallback, are as on a machine without a GPU.
  arrayport::buffer host(64, arrayport::memory_kind::host);
  arrayport::buffer managed(64, arrayport::memory_kind::managed);
  if (!host.data() || managed.kind() != arrayport::memory_kind::host) return 18;
  return 0;
}

// Forks; the child runs `body` and exits with its result. Returns the child's exit status.
template <class Body>
int in_child(Body body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST(Fork, AChildOfAProcessThatInitialisedCudaRefusesCudaNamingForkAndSpawn) {
  const int status = in_child([] {
    rt::detail::note_cuda_initialised();  // what the probe records on a GPU machine
    return in_child(refuses_cuda_but_keeps_the_host);
  });
  EXPECT_EQ(status, 0) << "the check that failed is numbered in test_fork.cpp";
  EXPECT_FALSE(rt::forked_after_cuda_init());
}

TEST(Fork, AGrandchildIsMarkedToo) {
  const int status = in_child([] {
    rt::detail::note_cuda_initialised();
    return in_child([] { return in_child(refuses_cuda_but_keeps_the_host); });
  });
  EXPECT_EQ(status, 0);
}

TEST(Fork, AChildIsMarkedOnlyWhenItsParentInitialisedCuda) {
  // A CPU-only build never initialises CUDA; on a GPU the probe has (or has not) by now.
  const bool parent_initialised = rt::detail::fork_state().cuda_initialised.load();
  const int status = in_child([] { return rt::forked_after_cuda_init() ? 1 : 0; });
  EXPECT_EQ(status, parent_initialised ? 1 : 0);
  if (!rt::compiled_with_cuda()) {
    EXPECT_FALSE(parent_initialised);
  }
}

#endif  // ARRAYPORT_HAS_FORK
