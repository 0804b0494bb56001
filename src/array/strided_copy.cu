// The strided-copy and strided-fill kernels: one thread per word (1 to 16 bytes), grid-stride,
// offsets from the linear index; rank fixed at compile time up to 2 and 4 axes (unrolled, 32-bit
// indices where they fit), any rank otherwise. A fill's element is a kernel parameter: no wait.
#include "array/strided_copy.hpp"

#include <arrayport/runtime.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace arrayport::ext {
namespace {

template <int Rank>
struct fixed_layout {
  std::int64_t shape[Rank], dst_strides[Rank], src_strides[Rank];
  char* dst;
  const char* src;
};

template <class Word, int Rank, class Index>
__global__ void copy_fixed_rank(fixed_layout<Rank> l, Index count) {
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    Index rest = i;
    std::int64_t d = 0, s = 0;
#pragma unroll
    for (int a = Rank - 1; a > 0; --a) {
      const Index n = static_cast<Index>(l.shape[a]);
      const auto idx = static_cast<std::int64_t>(rest % n);
      rest /= n;
      d += idx * l.dst_strides[a];
      s += idx * l.src_strides[a];
    }
    d += static_cast<std::int64_t>(rest) * l.dst_strides[0];
    s += static_cast<std::int64_t>(rest) * l.src_strides[0];
    *reinterpret_cast<Word*>(l.dst + d) = *reinterpret_cast<const Word*>(l.src + s);
  }
}

// The byte offsets of element i in the destination and the source, for any rank.
__device__ inline void offsets_of(const ::arrayport::detail::copy_layout& l, std::uint64_t i,
                                  std::int64_t& d, std::int64_t& s) {
  d = 0;
  s = 0;
  for (int a = l.ndim - 1; a > 0; --a) {
    const auto n = static_cast<std::uint64_t>(l.shape[a]);
    const auto idx = static_cast<std::int64_t>(i % n);
    i /= n;
    d += idx * l.dst_strides[a];
    s += idx * l.src_strides[a];
  }
  d += static_cast<std::int64_t>(i) * l.dst_strides[0];
  s += static_cast<std::int64_t>(i) * l.src_strides[0];
}

template <class Word>
__global__ void copy_any_rank(::arrayport::detail::copy_layout l) {
  const std::uint64_t count = static_cast<std::uint64_t>(l.count);
  const std::uint64_t step = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += step) {
    std::int64_t d, s;
    offsets_of(l, i, d, s);
    *reinterpret_cast<Word*>(l.dst + d) = *reinterpret_cast<const Word*>(l.src + s);
  }
}

constexpr unsigned block_size = 256;
// Enough blocks to fill any current GPU several times over (an H100 holds ~1000 such blocks);
// the grid-stride loop covers larger counts.
constexpr std::int64_t max_blocks = 8192;

unsigned grid_for(std::int64_t count) {
  return static_cast<unsigned>(
      std::min<std::int64_t>((count + block_size - 1) / block_size, max_blocks));
}

template <int Rank>
fixed_layout<Rank> to_fixed(const ::arrayport::detail::copy_layout& l) {
  fixed_layout<Rank> f{};
  const int pad = Rank - l.ndim;  // leading axes of extent 1
  for (int a = 0; a < Rank; ++a) {
    f.shape[a] = a < pad ? 1 : l.shape[a - pad];
    f.dst_strides[a] = a < pad ? 0 : l.dst_strides[a - pad];
    f.src_strides[a] = a < pad ? 0 : l.src_strides[a - pad];
  }
  f.dst = l.dst;
  f.src = l.src;
  return f;
}

template <class Word, int Rank>
void launch_fixed(const ::arrayport::detail::copy_layout& l, cudaStream_t stream) {
  const fixed_layout<Rank> f = to_fixed<Rank>(l);
  if (l.count <= INT32_MAX)
    copy_fixed_rank<Word, Rank, std::uint32_t>
        <<<grid_for(l.count), block_size, 0, stream>>>(f, static_cast<std::uint32_t>(l.count));
  else
    copy_fixed_rank<Word, Rank, std::uint64_t>
        <<<grid_for(l.count), block_size, 0, stream>>>(f, static_cast<std::uint64_t>(l.count));
}

template <class Word>
void launch_word(const ::arrayport::detail::copy_layout& l, cudaStream_t stream) {
  if (l.ndim <= 2)
    launch_fixed<Word, 2>(l, stream);
  else if (l.ndim <= 4)
    launch_fixed<Word, 4>(l, stream);
  else
    copy_any_rank<Word><<<grid_for(l.count), block_size, 0, stream>>>(l);
}

// ---- fills ----------------------------------------------------------------------------------

// Every word the same (the element is one word): a contiguous run, the commonest fill.
template <class Word>
__global__ void fill_contiguous(Word* dst, std::uint64_t count, Word value) {
  const std::uint64_t step = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += step)
    dst[i] = value;
}

// Every word the same, strided destination (a[::2] = 1.0, a column).
template <class Word, int Rank>
__global__ void fill_fixed_rank(fixed_layout<Rank> l, std::uint32_t count, Word value) {
  const std::uint32_t step = gridDim.x * blockDim.x;
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
    std::uint32_t rest = i;
    std::int64_t d = 0;
#pragma unroll
    for (int a = Rank - 1; a > 0; --a) {
      const auto n = static_cast<std::uint32_t>(l.shape[a]);
      d += static_cast<std::int64_t>(rest % n) * l.dst_strides[a];
      rest /= n;
    }
    d += static_cast<std::int64_t>(rest) * l.dst_strides[0];
    *reinterpret_cast<Word*>(l.dst + d) = value;
  }
}

// Anything else: any rank, and elements written in several words (a destination aligned to less
// than the element), whose source offsets step within `value`.
template <class Word>
__global__ void fill_any_rank(::arrayport::detail::copy_layout l,
                              ::arrayport::detail::fill_value value) {
  const std::uint64_t count = static_cast<std::uint64_t>(l.count);
  const std::uint64_t step = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  const auto base = reinterpret_cast<std::uintptr_t>(l.src);  // an offset into value.bytes
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += step) {
    std::int64_t d, s;
    offsets_of(l, i, d, s);
    *reinterpret_cast<Word*>(l.dst + d) =
        *reinterpret_cast<const Word*>(value.bytes + base + static_cast<std::uint64_t>(s));
  }
}

template <class Word>
void fill_word(const ::arrayport::detail::copy_layout& l, const ::arrayport::detail::fill_value& v,
               cudaStream_t stream) {
  // One word per element and the source never moves: every word is the element.
  bool uniform = reinterpret_cast<std::uintptr_t>(l.src) == 0;
  for (int a = 0; a < l.ndim; ++a)
    if (l.shape[a] != 1 && l.src_strides[a] != 0) uniform = false;
  if (!uniform) {
    fill_any_rank<Word><<<grid_for(l.count), block_size, 0, stream>>>(l, v);
    return;
  }
  Word w;
  std::memcpy(&w, v.bytes, sizeof(Word));
  if (::arrayport::detail::side_is_contiguous(l, true))
    fill_contiguous<Word><<<grid_for(l.count), block_size, 0, stream>>>(
        reinterpret_cast<Word*>(l.dst), static_cast<std::uint64_t>(l.count), w);
  else if (l.ndim <= 2 && l.count <= INT32_MAX)
    fill_fixed_rank<Word, 2><<<grid_for(l.count), block_size, 0, stream>>>(
        to_fixed<2>(l), static_cast<std::uint32_t>(l.count), w);
  else if (l.ndim <= 4 && l.count <= INT32_MAX)
    fill_fixed_rank<Word, 4><<<grid_for(l.count), block_size, 0, stream>>>(
        to_fixed<4>(l), static_cast<std::uint32_t>(l.count), w);
  else
    fill_any_rank<Word><<<grid_for(l.count), block_size, 0, stream>>>(l, v);
}

}  // namespace

void launch_strided_fill(const ::arrayport::detail::copy_layout& l,
                         const ::arrayport::detail::fill_value& value, stream_handle stream) {
  if (l.count == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  switch (l.word) {
    case 16: fill_word<uint4>(l, value, s); break;
    case 8: fill_word<unsigned long long>(l, value, s); break;
    case 4: fill_word<unsigned int>(l, value, s); break;
    case 2: fill_word<unsigned short>(l, value, s); break;
    default: fill_word<unsigned char>(l, value, s); break;
  }
  runtime::check_launch("strided fill kernel <<<...>>>");
}

void launch_strided_copy(const ::arrayport::detail::copy_layout& l, stream_handle stream) {
  if (l.count == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  switch (l.word) {
    case 16: launch_word<uint4>(l, s); break;
    case 8: launch_word<unsigned long long>(l, s); break;
    case 4: launch_word<unsigned int>(l, s); break;
    case 2: launch_word<unsigned short>(l, s); break;
    default: launch_word<unsigned char>(l, s); break;
  }
  runtime::check_launch("strided copy kernel <<<...>>>");
}

}  // namespace arrayport::ext
