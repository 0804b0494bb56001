// The functions both casters' test modules bind: each returns what its view saw, as
// (data address, shape, strides in elements), for the tests to compare with the general path.
#pragma once

#include <arrayport/view.hpp>

#include <cstdint>
#include <tuple>
#include <vector>

namespace casters {

using seen = std::tuple<std::uintptr_t, std::vector<std::int64_t>, std::vector<std::int64_t>>;

template <class T, std::size_t Rank, class Space>
seen describe(const arrayport::view<T, Rank, Space>& v) {
  std::vector<std::int64_t> shape, strides;
  for (std::size_t r = 0; r != Rank; ++r) {
    shape.push_back(v.extent(r));
    strides.push_back(v.stride(r));
  }
  return {reinterpret_cast<std::uintptr_t>(v.data()), shape, strides};
}

inline seen describe(const arrayport::strided_view& v) {
  std::vector<std::int64_t> shape, strides;
  for (int r = 0; r != v.ndim(); ++r) {
    shape.push_back(v.extent(r));
    strides.push_back(v.stride(r));
  }
  return {reinterpret_cast<std::uintptr_t>(v.data()), shape, strides};
}

}  // namespace casters

namespace casters::types {
using f32_1d = arrayport::view<float, 1>;
using cf32_1d = arrayport::view<const float, 1>;
using f32_2d = arrayport::view<float, 2>;
using cf64_3d = arrayport::view<const double, 3>;
using i64_0d = arrayport::view<std::int64_t, 0>;
using cbool_1d = arrayport::view<const bool, 1>;
using host_f32_1d = arrayport::host_view<float, 1>;
using device_cf32_1d = arrayport::device_view<const float, 1>;
}  // namespace casters::types

// The typed parameters the tests call, by name (both modules bind the same).
#define CASTERS_TYPED(X) \
  X(f32_1d) X(cf32_1d) X(f32_2d) X(cf64_3d) X(i64_0d) X(cbool_1d) X(host_f32_1d) X(device_cf32_1d)
