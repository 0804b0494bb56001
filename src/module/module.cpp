// arrayport._core: the compiled module behind the arrayport package.
#include "array/array.hpp"
#include "array/from_foreign.hpp"
#include "bind/ops.hpp"
#include "cuda/cuda.hpp"
#include "common/errors.hpp"
#include "module/runtime_info.hpp"

#include <arrayport/error.hpp>
#include <arrayport/memory_resource.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/version.h>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

namespace nb = nanobind;

NB_MODULE(_core, m) {
  m.doc() = "arrayport's compiled core (private: use the arrayport package)";
  m.attr("__version__") = ARRAYPORT_VERSION_STRING;

  arrayport::ext::register_errors(m);
  arrayport::ext::register_cuda(m);
  arrayport::ext::register_array(m);
  arrayport::ext::register_consume(m);
  arrayport::ext::register_ops(m);

  m.def("build_info", &arrayport::ext::build_info,
        "How this build was configured: version, CUDA, architectures, compilers.");
  m.def("runtime_info", &arrayport::ext::runtime_info,
        "What the CUDA probe found: availability, device count, why not, runtime/driver versions.");
  m.def("devices", &arrayport::ext::devices, "Properties and memory of every CUDA device.");
  m.def("release_cached_memory", &arrayport::release_cached_memory,
        "Return the memory cached by arrayport's pools (and the host blocks this thread keeps) "
        "to the system.");

  // fork(): whether this process is the child of one that had initialised CUDA, and a test hook
  // that records "CUDA initialised" without a GPU, so that a CPU-only build can show what such a
  // child does (tests/python/cuda/test_faults.py).
  m.def("_forked_after_cuda_init", &arrayport::runtime::forked_after_cuda_init);
  m.def("_simulate_cuda_initialised", &arrayport::runtime::detail::note_cuda_initialised,
        "Test hook: make fork() children of this process behave as children of a process that "
        "initialised CUDA (it cannot be undone).");

  // Raises the Python exception that each C++ exception type maps to (tests the translation).
  m.def("_raise", [](const std::string& kind) {
    using namespace arrayport;
    if (kind == "type") throw type_error("type message");
    if (kind == "value") throw value_error("value message");
    if (kind == "buffer") throw buffer_error("buffer message");
    if (kind == "no_device") throw no_device_error("no device message");
    if (kind == "cuda")
      throw cuda_error(700, "cudaErrorIllegalAddress", "an illegal memory access was encountered",
                       "cudaMemcpy(...)", "file.cu", 12);
    if (kind == "oom")
      throw out_of_memory(2, "cudaErrorMemoryAllocation", "out of memory", "cudaMalloc(...)",
                          "file.cu", 34);
    throw value_error("_raise: unknown kind '" + kind + "'");
  });
}
