// Filling memory of any kind with a repeated element, without a kernel.
#pragma once

#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace arrayport::detail {

/// Writes `count` copies of the `itemsize`-byte `value` at `dst`. Pageable and pinned host memory
/// is filled by the CPU; device and managed memory by one element copied in and then the filled
/// prefix doubled with device-side copies on `stream` (log2(count) copies, no kernel, and managed
/// pages are not pulled to the host). Returns once `value` has been read.
inline void fill_pattern(void* dst, const void* value, std::size_t itemsize, std::size_t count,
                         memory_kind kind, stream_handle stream) {
  if (count == 0 || itemsize == 0) return;
  auto* out = static_cast<unsigned char*>(dst);
  if (kind == memory_kind::host || kind == memory_kind::pinned || !runtime::is_available()) {
    runtime::stream_synchronize(stream);  // earlier device work on this memory comes first
    bool all_zero = std::all_of(static_cast<const unsigned char*>(value),
                                static_cast<const unsigned char*>(value) + itemsize,
                                [](unsigned char b) { return b == 0; });
    if (all_zero) {
      std::memset(out, 0, itemsize * count);
      return;
    }
    for (std::size_t i = 0; i < count; ++i) std::memcpy(out + i * itemsize, value, itemsize);
    return;
  }
  runtime::memcpy_async(out, value, itemsize, stream);
  for (std::size_t done = 1; done < count;) {
    std::size_t n = std::min(done, count - done);
    runtime::memcpy_async(out + done * itemsize, out, n * itemsize, stream);
    done += n;
  }
  runtime::stream_synchronize(stream);  // `value` is the caller's, possibly on its stack
}

}  // namespace arrayport::detail
