/* The example kernel through SWIG: arrayport's typemaps turn any float32 vector into
 * (float* x, int64_t n, int64_t stride). */
%module scale_swig

%include "stdint.i"
%include "arrayport/bind/swig/arrayport.i"

%{
#include "scale_c.h"
#include <stdexcept>

/* SWIG-facing wrapper: raises instead of returning an error code. */
static void scale(float* x, int64_t n, int64_t stride, float f) {
  char error[512];
  void* stream = NULL;
  int device = -1;
  arrayport_swig_api()->current_stream(&stream, &device);
  if (example_scale(x, n, stride, f, stream, error, sizeof error) != 0) throw std::runtime_error(error);
}
%}

%exception {
  try {
    $action
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    SWIG_fail;
  }
}

%apply (float* ARRAYPORT_INOUT, int64_t ARRAYPORT_N, int64_t ARRAYPORT_STRIDE) { (float* x, int64_t n, int64_t stride) };
void scale(float* x, int64_t n, int64_t stride, float f);

/* A const host vector, overloaded by element type: SWIG dispatches on the array's dtype, and a
 * read-only array is taken (ARRAYPORT_HOST_IN: memory the CPU can read). */
%apply (const float* ARRAYPORT_HOST_IN, int64_t ARRAYPORT_N, int64_t ARRAYPORT_STRIDE) { (const float* x, int64_t n, int64_t stride) };
%apply (const double* ARRAYPORT_HOST_IN, int64_t ARRAYPORT_N, int64_t ARRAYPORT_STRIDE) { (const double* x, int64_t n, int64_t stride) };
%inline %{
double total(const float* x, int64_t n, int64_t stride) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i * stride];
  return s;
}
double total(const double* x, int64_t n, int64_t stride) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i * stride];
  return s;
}
%}
