// The three-argument call of bench/bench_three.py through TVM-FFI: each argument checked as a
// 1-d float32 CUDA tensor (TVM-FFI's TensorView checks nothing itself), as three_nb.cpp's
// arrayport::device_view<float, 1> parameters are.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <cstdint>

namespace ffi = tvm::ffi;

namespace {

std::int64_t checked_length(const ffi::TensorView& t) {
  const DLDataType d = t.dtype();
  if (d.code != kDLFloat || d.bits != 32 || d.lanes != 1 || t.ndim() != 1 ||
      t.device().device_type != kDLCUDA)
    TVM_FFI_THROW(TypeError) << "expected a 1-d float32 CUDA tensor";
  return t.size(0);
}

std::int64_t three(ffi::TensorView a, ffi::TensorView b, ffi::TensorView c) {
  return checked_length(a) + checked_length(b) + checked_length(c) + 1000;
}

// The floor: three integers, which TVM-FFI passes without conversion.
std::int64_t noop3(std::int64_t a, std::int64_t b, std::int64_t c) { return a + b + c + 1000; }

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(three, three);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(noop3, noop3);
