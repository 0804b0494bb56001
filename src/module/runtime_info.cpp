// Build and runtime information for the report: build configuration, CUDA, every device.
#include "module/runtime_info.hpp"

#include "build_config.hpp"
#include "ops/cpu/cpu_features.hpp"
#include "ops/cpu/parallel.hpp"

#include <arrayport/device.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/version.h>

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace arrayport::ext {

nb::dict build_info() {
  nb::dict d;
  d["version"] = ARRAYPORT_VERSION_STRING;
  d["cuda"] = runtime::compiled_with_cuda();
#if ARRAYPORT_HAS_CUDA
  d["cuda_runtime_compiled"] = CUDART_VERSION;
  d["cudart"] = "static";
  d["cuda_architectures"] = ARRAYPORT_BUILD_CUDA_ARCHITECTURES;
  d["cuda_compiler"] = ARRAYPORT_BUILD_CUDA_COMPILER;
#else
  d["cuda_runtime_compiled"] = 0;
  d["cudart"] = "none";
  d["cuda_architectures"] = "";
  d["cuda_compiler"] = "";
#endif
  d["cxx_compiler"] = ARRAYPORT_BUILD_CXX_COMPILER;
  return d;
}

nb::dict runtime_info() {
  const runtime::availability& a = runtime::probe();
  nb::dict d;
  d["cuda_available"] = a.device_count > 0;
  d["device_count"] = a.device_count;
  d["reason"] = a.reason;
  d["probe_status"] = a.status;
  d["runtime_version"] = runtime::runtime_version();
  d["driver_version"] = runtime::driver_version();
#ifdef ARRAYPORT_OPS_AVX2
  d["cpu_kernels"] = ops::cpu::has_avx512() ? "AVX2, AVX-512 vector math"
                     : ops::cpu::has_avx2() ? "AVX2"
                                            : "SSE2 (no AVX2: the flat loops unvectorised)";
#else
  d["cpu_kernels"] = "the compiler's baseline";
#endif
  d["cpu_threads"] = ops::cpu::thread_count();
  return d;
}

nb::list devices() {
  nb::list out;
  for (int i = 0; i < runtime::device_count(); ++i) {
    runtime::device_properties p = runtime::get_device_properties(i);
    auto [free_bytes, total_bytes] = runtime::mem_get_info(i);
    nb::dict d;
    d["index"] = p.index;
    d["name"] = p.name;
    d["compute_capability"] = nb::make_tuple(p.major, p.minor);
    d["total_memory"] = p.total_memory;
    d["free_memory"] = free_bytes;
    (void)total_bytes;
    d["multiprocessor_count"] = p.multiprocessor_count;
    d["pci_bus_id"] = p.pci_bus_id;
    d["uuid"] = p.uuid;
    d["managed_memory"] = p.managed_memory;
    d["concurrent_managed_access"] = p.concurrent_managed_access;
    d["memory_pools"] = p.memory_pools;
    out.append(d);
  }
  return out;
}

}  // namespace arrayport::ext
