// Reading the operands of arrayport.ops calls: Arrays, Python scalars and bridged arrays.
#include "bind/operands.hpp"

#include "array/array.hpp"
#include "array/array_internal.hpp"
#include "bridge/consume.hpp"
#include "common/arguments.hpp"
#include "common/gil.hpp"
#include "common/scalars.hpp"

#include <arrayport/layout.hpp>
#include <arrayport/runtime.hpp>

#include <Python.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

using ops::ops_arg;
using ops::weak_kind;

// "<op_name>: argument '<name>'" into `out` without touching the heap, a piece at a time.
void write_label(char (&out)[96], const char* op_name, const char* name) {
  std::size_t at = 0;
  auto put = [&](const char* text, std::size_t n) {
    n = std::min(n, sizeof out - 1 - at);
    std::memcpy(out + at, text, n);
    at += n;
  };
  constexpr char middle[] = ": argument '";
  put(op_name, std::strlen(op_name));
  put(middle, sizeof middle - 1);
  put(name, std::strlen(name));
  put("'", 1);
  out[at] = '\0';
}

// The label of (op_name, name), the bridge's name for an operand that is not an Array or a
// scalar, made once a pair and kept for the process (at most label_slots of them; nullptr past
// that): writing it each call took 160 instructions an operand, 4 % of a small op's call. The
// names are static strings (operands.hpp), so their addresses identify them.
constexpr std::size_t label_slots = 512;
struct label_slot {
  std::atomic<const char*> op{nullptr}, arg{nullptr}, label{nullptr};  // label: set last
};
label_slot label_table[label_slots];
std::mutex label_mutex;

const char* cached_label(const char* op_name, const char* name) {
  const auto key =
      reinterpret_cast<std::uintptr_t>(op_name) * 31 + reinterpret_cast<std::uintptr_t>(name);
  const std::size_t first = (key >> 4) % label_slots;
  for (int pass = 0; pass < 2; ++pass) {  // lock-free, then under the lock to add the pair
    std::unique_lock<std::mutex> lock(label_mutex, std::defer_lock);
    if (pass) lock.lock();
    for (std::size_t n = 0, i = first; n < label_slots; ++n, i = (i + 1) % label_slots) {
      label_slot& e = label_table[i];
      const char* label = e.label.load(std::memory_order_acquire);
      if (!label) {
        if (!pass) break;
        char text[96];
        write_label(text, op_name, name);
        const std::size_t size = std::strlen(text) + 1;
        char* kept = new char[size];
        std::memcpy(kept, text, size);
        e.op.store(op_name, std::memory_order_relaxed);
        e.arg.store(name, std::memory_order_relaxed);
        e.label.store(kept, std::memory_order_release);
        return kept;
      }
      if (e.op.load(std::memory_order_relaxed) == op_name &&
          e.arg.load(std::memory_order_relaxed) == name)
        return label;
    }
  }
  return nullptr;
}

// GPU memory without a usable device (a view of a foreign claim) never reaches a CPU kernel.
void require_reachable(const ops_arg& arg, const char* op_name, const char* name, PyObject* o) {
  const memory_kind kind = arg.view.kind();
  if (runtime::is_reachable(kind)) return;
  char label[96];
  write_label(label, op_name, name);
  throw no_device_error(std::string(label) +
                        ": expected memory the CPU can read (this machine has no usable CUDA "
                        "device: " +
                        runtime::probe().reason + "), got " + std::string(to_string(kind)) +
                        " memory (from " + python::detail::type_name(o) + ")");
}

// NEP 50: bool, int, float and complex themselves are weak. NumPy's scalars are 0-d arrays
// (np.float64 is a float subclass): the buffer protocol takes them, strong. Other subclasses (an
// IntEnum) are strong too, of their kind's default dtype, as in NumPy 2.
bool read_scalar(PyObject* o, input_holder& h, ops_arg& arg) {
  weak_kind k = weak_kind::none;
  bool strong = false;
  if (PyBool_Check(o))
    k = weak_kind::bool_;
  else if (PyLong_CheckExact(o))
    k = weak_kind::int_;
  else if (PyFloat_CheckExact(o))
    k = weak_kind::float_;
  else if (PyComplex_CheckExact(o))
    k = weak_kind::complex_;
  else if (!PyObject_CheckBuffer(o)) {
    strong = true;
    if (PyLong_Check(o))
      k = weak_kind::int_;
    else if (PyFloat_Check(o))
      k = weak_kind::float_;
    else if (PyComplex_Check(o))
      k = weak_kind::complex_;
  }
  if (k == weak_kind::none) return false;
  arg.kind = k;
  arg.strong = strong;
  h.scalar = o;
  return true;
}

}  // namespace

void read_operand(const operand& in, const char* op_name, stream_handle stream, input_holder& h,
                  ops_arg& arg, bool allow_scalar) {
  arg.name = in.name;
  arg.kind = weak_kind::none;
  arg.strong = arg.ordered = false;
  PyObject* o = in.obj.ptr();
  if (is_array(o)) {
    // Read directly: the bridge would take the same view, at the price of a type lookup and a
    // reference. Its data is ready on its own stream, which the op orders itself after.
    arg.view = strided_view(reinterpret_cast<array_object*>(o)->view);
    require_reachable(arg, op_name, in.name, o);
    arg.ordered = true;
    return;
  }
  if (allow_scalar && read_scalar(o, h, arg)) return;
  // Any other array through the bridge (its checks and messages), ordered before `stream`.
  char written[96];
  const char* label = cached_label(op_name, in.name);
  if (!label) write_label(written, op_name, in.name), label = written;
  python::constraints c;
  c.name = label;
  python::acquire_options opts;
  opts.stream = stream;
  opts.stream_given = true;
  opts.call_scoped = true;  // released before the op returns to Python
  try {
    h.held.emplace(bridge::acquire_here(o, c, opts));
  } catch (const python::not_an_array&) {
    throw type_error(std::string(label) +
                     ": expected an arrayport.Array, any array (buffer protocol, __dlpack__ or "
                     "__cuda_array_interface__)" +
                     (allow_scalar ? " or a Python scalar" : "") + ", got " +
                     python::detail::type_name(o));
  }
  arg.view = h.held->view();
  require_reachable(arg, op_name, in.name, o);
}

void scalar_operand(PyObject* value, dtype dt, unsigned char* out, const char* op_name,
                    const char* arg) {
  try {
    scalar_to_bytes(value, dt, out);
  } catch (nb::python_error& e) {
    // Built only on failure: this runs for every scalar operand.
    std::string msg = nb::str(e.value()).c_str();
    if (msg.rfind("value: ", 0) == 0) msg.erase(0, 7);
    const std::string what =
        std::string(op_name) + (arg ? std::string(": argument '") + arg + "'" : ": zero_value");
    const nb::object type = nb::borrow(e.type());
    PyErr_SetString(type.ptr(), (what + ": " + msg).c_str());
    throw nb::python_error();
  }
}

void wait_before_release(ops::span<const input_holder> holders, const ops::placement& where,
                         stream_handle stream) {
  // Their producer (CuPy's or PyTorch's caching allocator) could hand the memory out again
  // meanwhile, as assignments from foreign arrays also guard against.
  if (!where.on_gpu) return;
  for (const input_holder& h : holders)
    if (h.held) {
      // While a CUDA graph is captured nothing runs yet (and a synchronisation would end the
      // capture): the graph's inputs are its user's to keep, as in PyTorch.
      if (runtime::stream_capturing(stream)) return;
      gil_release unlocked;
      runtime::stream_synchronize(stream);
      return;
    }
}

namespace {

// The bytes [lo, hi) a view touches; false when it has no element. Not measure_layout: its
// overflow checks cost 100 instructions a view, and acquire checked these spans already.
bool byte_range(const strided_view& v, std::uintptr_t& lo, std::uintptr_t& hi) {
  const auto item = static_cast<std::int64_t>(v.dtype().itemsize());
  auto low = reinterpret_cast<std::intptr_t>(v.data()), high = low;
  for (int d = 0; d < v.ndim(); ++d) {
    const std::int64_t e = v.extent(d);
    if (e == 0) return false;
    const std::int64_t step = (e - 1) * v.stride(d) * item;
    (step > 0 ? high : low) += static_cast<std::intptr_t>(step);
  }
  lo = static_cast<std::uintptr_t>(low);
  hi = static_cast<std::uintptr_t>(high) + static_cast<std::uintptr_t>(item);
  return true;
}

}  // namespace

bool overlaps(const strided_view& a, const strided_view& b) {
  std::uintptr_t alo, ahi, blo, bhi;
  return byte_range(a, alo, ahi) && byte_range(b, blo, bhi) && alo < bhi && blo < ahi;
}

bool same_elements(const strided_view& in, const strided_view& out) {
  // The same data pointer and dtype size, and in's strides (broadcast dimensions: 0) equal to
  // out's wherever out has more than one element.
  if (in.data() != out.data() || in.dtype().itemsize() != out.dtype().itemsize()) return false;
  const int off = out.ndim() - in.ndim();
  if (off < 0) return false;
  for (int d = 0; d < out.ndim(); ++d) {
    if (out.extent(d) == 1) continue;
    const std::int64_t s = d < off || in.extent(d - off) == 1 ? 0 : in.stride(d - off);
    if (s != out.stride(d)) return false;
  }
  return true;
}

void require_distinct_out_elements(const char* op_name, const strided_view& out, const char* why) {
  const arrayport_view_t& c = out.c_view();
  if (strides_nest(c.shape, c.strides, c.ndim)) return;
  throw value_error(std::string(op_name) +
                    ": out: expected an array whose elements are distinct, got one where several "
                    "share memory (a zero or overlapping stride): " +
                    why);
}

bool c_contiguous(const strided_view& v) {
  return is_contiguous(v.c_view().shape, v.c_view().strides, v.ndim(), true);
}

dtype parse_astype_dtype(nb::handle d) {
  if (d.is_none())
    throw type_error(
        "astype: dtype: expected a dtype name, a NumPy dtype or a Python number "
        "type, got None");
  try {
    return parse_dtype(d);
  } catch (const type_error& e) {
    throw type_error(std::string("astype: ") + e.what());
  } catch (const value_error& e) {
    throw value_error(std::string("astype: ") + e.what());
  }
}

}  // namespace arrayport::ext
