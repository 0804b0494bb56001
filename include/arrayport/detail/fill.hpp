// Filling memory of any kind and layout with a repeated element.
//
// Host and pinned memory are filled by the CPU once the stream's earlier work is done. GPU memory
// (device, managed) is filled in order on the stream and nothing waits for it: the element travels
// in the calls' arguments (a memset's byte, a kernel's parameter) and is never read from the
// caller's memory afterwards. Memory this process cannot reach is no_device_error (is_reachable).
#pragma once

#include <arrayport/c/view.h>
#include <arrayport/detail/strided_copy.hpp>
#include <arrayport/error.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace arrayport::detail {

/// One element of up to 16 bytes (complex128), as a fill kernel takes it: by value.
struct fill_value {
  alignas(16) unsigned char bytes[16];
};
static_assert(std::is_trivially_copyable_v<fill_value> && sizeof(fill_value) == 16,
              "fill_value is a kernel parameter");

/// Launches the CUDA kernel that runs `layout` as a copy whose source is `value` (in the kernel's
/// parameters) on `stream`: layout.src is the byte offset into value.bytes (as an address, from
/// 0) and its source strides step within the element (0 across elements). nvcc-compiled code
/// supplies it; nullptr where there is none.
using fill_kernel_launcher = void (*)(const copy_layout& layout, const fill_value& value,
                                      stream_handle stream);

/// The byte that every byte of the element equals (a memset writes it), or -1.
inline int uniform_byte(const unsigned char* value, std::size_t itemsize) noexcept {
  for (std::size_t i = 1; i < itemsize; ++i)
    if (value[i] != value[0]) return -1;
  return value[0];
}

/// GPU memory without a fill kernel: `count` contiguous elements at `dst` get the first element
/// from one memset per run of equal bytes, then the filled prefix doubled with device-side copies
/// (log2(count) of them). All in order on `stream`; `value` is not read once this returns.
inline void fill_by_doubling(unsigned char* dst, memory_kind kind, const unsigned char* value,
                             std::size_t itemsize, std::size_t count, stream_handle stream,
                             const char* what) {
  for (std::size_t b = 0; b < itemsize;) {
    std::size_t e = b + 1;
    while (e < itemsize && value[e] == value[b]) ++e;
    runtime::memset_async(dst + b, kind, value[b], e - b, stream, what);
    b = e;
  }
  for (std::size_t done = 1; done < count;) {
    const std::size_t n = std::min(done, count - done);
    runtime::memcpy_async(dst + done * itemsize, kind, dst, kind, n * itemsize, stream, what);
    done += n;
  }
}

/// Writes the `itemsize`-byte `value` at every element of `dst`, which views `shape` (ndim
/// extents), in order on `stream` (the caller orders `stream` after the memory's earlier work).
/// Returns without waiting for GPU memory; `value` may go once it returns. Strided GPU memory needs
/// `kernel` (elements of at most 16 bytes), without which a value_error says so; contiguous GPU
/// memory gets memsets and device-side copies then. GPU memory this process cannot reach is
/// no_device_error naming `what`.
inline void strided_fill(const copy_operand& dst, const std::int64_t* shape, int ndim,
                         const void* value, std::size_t itemsize, stream_handle stream,
                         fill_kernel_launcher kernel, const char* what) {
  runtime::require_reachable(dst.kind, what, "the destination");
  if (itemsize == 0) throw value_error(std::string(what) + ": itemsize must be positive, got 0");
  // The source: the one element, repeated along every axis (stride 0); a kernel's copy of it
  // where it fits one.
  fill_value v{};
  const bool small = itemsize <= sizeof v.bytes;
  if (small) std::memcpy(v.bytes, value, itemsize);
  const auto* element = small ? v.bytes : static_cast<const unsigned char*>(value);
  const std::int64_t repeat[ARRAYPORT_MAX_NDIM] = {};
  copy_layout l =
      make_copy_layout(dst, {const_cast<unsigned char*>(element), repeat, memory_kind::host, -1},
                       shape, ndim, itemsize);
  if (l.count == 0) return;
  const std::size_t bytes = static_cast<std::size_t>(l.count) * static_cast<std::size_t>(l.word);
  const bool contiguous = side_is_contiguous(l, true);  // one run of bytes from l.dst
  const int byte = uniform_byte(element, itemsize);
  if (!is_gpu_resident(dst.kind)) {
    runtime::stream_synchronize(stream);  // earlier device work on this memory comes first
    if (contiguous && byte >= 0)
      std::memset(l.dst, byte, bytes);
    else
      copy_on_host(l);
    return;
  }
  if (contiguous && byte >= 0)
    return runtime::memset_async(l.dst, dst.kind, byte, bytes, stream, what);
  if (kernel && small) {
    l.src = reinterpret_cast<const char*>(
        static_cast<std::uintptr_t>(l.src - reinterpret_cast<const char*>(v.bytes)));
    return kernel(l, v, stream);
  }
  if (contiguous)
    return fill_by_doubling(reinterpret_cast<unsigned char*>(l.dst), dst.kind, element, itemsize,
                            bytes / itemsize, stream, what);
  throw value_error(std::string(what) + ": a strided fill of " + std::string(to_string(dst.kind)) +
                    " memory needs the CUDA fill kernel (and elements of at most 16 bytes), which "
                    "this build does not have");
}

/// The same for `count` contiguous elements at `dst`, memory of `kind` (a vector's range).
inline void fill_pattern(void* dst, const void* value, std::size_t itemsize, std::size_t count,
                         memory_kind kind, stream_handle stream, const char* what = "fill",
                         fill_kernel_launcher kernel = nullptr) {
  runtime::require_reachable(kind, what, "the destination");
  if (count == 0 || itemsize == 0) return;
  const std::int64_t shape[1] = {static_cast<std::int64_t>(count)};
  strided_fill({dst, nullptr, kind, -1}, shape, 1, value, itemsize, stream, kernel, what);
}

}  // namespace arrayport::detail
