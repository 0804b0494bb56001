// The reductions of arrayport.ops (sum, mean, min, max, dot): axis= and keepdims= parsing,
// out= checks, and the call handed to the dispatcher.
#pragma once

#include "ops/reduce.hpp"

#include <nanobind/nanobind.h>

namespace arrayport::ext {

/// sum, mean, min or max of x over `axis` (None: all), on the current stream.
nanobind::object reduce(ops::reduce_op op, nanobind::handle x, nanobind::handle axis,
                        nanobind::handle keepdims, nanobind::handle out);

/// sum(x * y) over `axis`, x and y broadcast together: the inner product (no conjugation) of
/// 1-d arrays, and along axes of n-d ones (np.vecdot's product without its conjugation; not
/// np.dot's matrix product).
nanobind::object dot(nanobind::handle x, nanobind::handle y, nanobind::handle axis,
                     nanobind::handle keepdims, nanobind::handle out);

/// The Python name of a reduction ("sum", ...).
const char* reduce_name(ops::reduce_op op) noexcept;

}  // namespace arrayport::ext
