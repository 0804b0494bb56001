// One conversion loop per (from, to) dtype pair; the contiguous case a loop GCC vectorises.
#include "ops/cpu/convert_run.hpp"

#include "ops/elementwise.hpp"

namespace arrayport::ops::cpu {
namespace {

template <class To, class From>
void convert_loop(To* out, const char* p, std::int64_t stride, std::int64_t n) {
  if (stride == std::int64_t(sizeof(From))) {
    const From* q = reinterpret_cast<const From*>(p);
    for (std::int64_t j = 0; j < n; ++j) out[j] = convert<To>(load_direct(q + j));
  } else {
    for (std::int64_t j = 0; j < n; ++j)
      out[j] = convert<To>(load_direct(reinterpret_cast<const From*>(p + j * stride)));
  }
}

}  // namespace

void convert_run(type_id to, void* out, const char* p, std::int64_t stride, std::int64_t n,
                 type_id from) noexcept {
  visit_storage(
      to,
      [&](auto to_tag) {
        using To = typename decltype(to_tag)::type;
        To* o = static_cast<To*>(out);
        const bool done = visit_storage(
            from,
            [&](auto from_tag) {
              convert_loop<To, typename decltype(from_tag)::type>(o, p, stride, n);
              return true;
            },
            false);
        if (!done)  // a dtype outside the kernels' ten (uint64): the general load
          for (std::int64_t j = 0; j < n; ++j) o[j] = load_as<To>(p + j * stride, from);
        return true;
      },
      false);
}

}  // namespace arrayport::ops::cpu
