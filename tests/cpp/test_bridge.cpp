// The consume bridge across the C API: the versioned request of acquire_view (C API 1.2), the
// status that tells refusals from non-arrays, and the inline fast path that exact arrayport.Array
// and numpy.ndarray arguments take without calling into arrayport._core. An embedded interpreter
// imports the installed arrayport, as an extension's would.
#include <arrayport/python/acquire.hpp>
#include <arrayport/python/parameter.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace ap = arrayport;
namespace py = arrayport::python;

namespace {

PyObject* eval(const char* expression) {
  PyObject* globals = PyModule_GetDict(PyImport_AddModule("__main__"));
  PyObject* r = PyRun_String(expression, Py_eval_input, globals, globals);
  if (!r) PyErr_Print();
  return r;
}

// The Python error's class and message, cleared.
std::string take_error(PyObject* expected) {
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  std::string text = type == expected ? "" : "unexpected class: ";
  PyObject* s = value ? PyObject_Str(value) : nullptr;
  text += s ? PyUnicode_AsUTF8(s) : "no error";
  Py_XDECREF(s);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  return text;
}

class Interpreter : public ::testing::Environment {
 public:
  void SetUp() override {
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    // The test's Python (a virtual environment's included): its site-packages hold arrayport.
    PyConfig_SetBytesString(&config, &config.program_name, ARRAYPORT_TEST_PYTHON);
    config.install_signal_handlers = 0;
    const PyStatus status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    ASSERT_FALSE(PyStatus_Exception(status));
    ASSERT_EQ(PyRun_SimpleString("import numpy, arrayport"), 0);
  }
};

const ::testing::Environment* const interpreter =
    ::testing::AddGlobalTestEnvironment(new Interpreter);

// The engine's table, with acquire_view counted: the inline path must not reach it.
const arrayport_python_api_t* real = nullptr;
int engine_calls = 0;
int counted_acquire_view(PyObject* obj, const arrayport_acquire_request_t* r,
                         arrayport_acquired_t* out) {
  ++engine_calls;
  return real->acquire_view(obj, r, out);
}

class Bridge : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Py_IsInitialized());
    real = &py::import_api();
    ASSERT_GE(real->abi_minor, 2u);
    // The engine meets numpy.ndarray once: from then on exact ndarrays are read inline.
    PyObject* prime = eval("numpy.zeros(1)");
    arrayport_acquire_request_t r{};
    r.size = sizeof r;
    r.ndim = -1;
    arrayport_acquired_t out{};
    ASSERT_EQ(real->acquire_view(prime, &r, &out), ARRAYPORT_ACQUIRE_OK);
    real->release(out.handle);
    Py_DECREF(prime);
    counted = *real;
    counted.acquire_view = counted_acquire_view;
    py::detail::api_slot() = &counted;
    engine_calls = 0;
  }
  void TearDown() override { py::detail::api_slot() = real; }

  int request(PyObject* obj, const void* r, arrayport_acquired_t& out) {
    return real->acquire_view(obj, static_cast<const arrayport_acquire_request_t*>(r), &out);
  }

  arrayport_python_api_t counted{};
};

TEST_F(Bridge, RequestShorterThanVersion1_2IsRefused) {
  PyObject* a = eval("numpy.zeros(3)");
  arrayport_acquire_request_t r{};
  r.size = 8;
  arrayport_acquired_t out{};
  EXPECT_EQ(request(a, &r, out), ARRAYPORT_ACQUIRE_FAILED);
  EXPECT_EQ(take_error(PyExc_ValueError),
            "acquire_view: expected a request of at least 56 bytes, got 8 bytes");
  EXPECT_EQ(ARRAYPORT_ACQUIRE_REQUEST_SIZE_1_2, sizeof(arrayport_acquire_request_t));
  Py_DECREF(a);
}

TEST_F(Bridge, LongerRequestReadsZeroTailAsDefaultsAndRefusesTheRest) {
  struct {
    arrayport_acquire_request_t base;
    std::uint64_t newer_option;  // a field a newer arrayport would append
  } r{};
  r.base.size = sizeof r;
  r.base.ndim = -1;
  PyObject* a = eval("numpy.arange(6.0)");
  arrayport_acquired_t out{};
  ASSERT_EQ(request(a, &r, out), ARRAYPORT_ACQUIRE_OK);
  EXPECT_EQ(out.protocol, ARRAYPORT_PROTOCOL_BUFFER);
  EXPECT_EQ(out.view.ndim, 1);
  EXPECT_EQ(out.view.shape[0], 6);
  real->release(out.handle);
  r.newer_option = 1;
  EXPECT_EQ(request(a, &r, out), ARRAYPORT_ACQUIRE_FAILED);
  const std::string version = "(C API " + std::to_string(ARRAYPORT_PYTHON_API_MAJOR) + "." +
                              std::to_string(ARRAYPORT_PYTHON_API_MINOR);
  EXPECT_NE(take_error(PyExc_ValueError).find("asks for options this arrayport._core " + version),
            std::string::npos);
  Py_DECREF(a);
}

TEST_F(Bridge, StatusTellsRefusalsFromNonArrays) {
  arrayport_acquire_request_t r{};
  r.size = sizeof r;
  r.ndim = -1;
  r.name = "x";
  r.flags = ARRAYPORT_ACQUIRE_WRITABLE;
  arrayport_acquired_t out{};
  PyObject* bytes = eval("b'abc'");
  EXPECT_EQ(request(bytes, &r, out), ARRAYPORT_ACQUIRE_REFUSED);
  EXPECT_EQ(out.handle, nullptr);
  EXPECT_EQ(take_error(PyExc_BufferError),
            "x: expected a writable array, got a read-only one (from bytes)");
  PyObject* plain = eval("object()");
  EXPECT_EQ(request(plain, &r, out), ARRAYPORT_ACQUIRE_NOT_AN_ARRAY);
  EXPECT_NE(take_error(PyExc_TypeError).find("x: expected an array, got object"),
            std::string::npos);
  r.protocols = ARRAYPORT_PROTOCOL_DLPACK;  // bytes offer only the buffer protocol
  r.flags = 0;
  EXPECT_EQ(request(bytes, &r, out), ARRAYPORT_ACQUIRE_NOT_AN_ARRAY);
  EXPECT_NE(take_error(PyExc_TypeError).find("none of the protocols allowed here"),
            std::string::npos);
  Py_DECREF(bytes);
  Py_DECREF(plain);
}

TEST_F(Bridge, ExactNumPyAndArrayAreReadInline) {
  PyObject* n = eval("numpy.arange(12, dtype=numpy.float32).reshape(3, 4)[:, ::2]");
  PyObject* a = eval("arrayport.zeros((5,), 'int16', memory='host')");
  {
    const py::acquired from_numpy = py::acquire(n);
    const py::acquired from_array = py::acquire(a);
    EXPECT_EQ(engine_calls, 0);
    EXPECT_EQ(from_numpy.protocol_used(), py::protocol_buffer);
    EXPECT_EQ(from_array.protocol_used(), py::protocol_array);
    // The inline view is the engine's, field for field.
    arrayport_acquire_request_t r{};
    r.size = sizeof r;
    r.ndim = -1;
    arrayport_acquired_t engine{};
    ASSERT_EQ(request(n, &r, engine), ARRAYPORT_ACQUIRE_OK);
    const arrayport_view_t& v = from_numpy.c_view();
    EXPECT_EQ(v.data, engine.view.data);
    EXPECT_EQ(v.ndim, 2);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(v.shape[i], engine.view.shape[i]);
      EXPECT_EQ(v.strides[i], engine.view.strides[i]);
    }
    EXPECT_EQ(v.strides[0], 4);
    EXPECT_EQ(v.strides[1], 2);
    EXPECT_EQ(std::memcmp(&v.dtype, &engine.view.dtype, sizeof v.dtype), 0);
    EXPECT_EQ(v.flags, engine.view.flags);
    EXPECT_EQ(v.memory_kind, engine.view.memory_kind);
    real->release(engine.handle);
  }
  ap::view<const float, 2> typed;
  EXPECT_TRUE(py::detail::typed_view_fast(n, typed));
  EXPECT_EQ(typed.extent(1), 2);
  EXPECT_EQ(engine_calls, 0);
  Py_DECREF(n);
  Py_DECREF(a);
}

TEST_F(Bridge, EverythingElseReachesTheEngine) {
  PyObject* sub = eval("type('Sub', (numpy.ndarray,), {})(3)");  // a subclass: not the public ABI
  PyObject* mv = eval("memoryview(b'abcd')");
  ap::view<const double, 1> typed;
  EXPECT_FALSE(py::detail::typed_view_fast(sub, typed));
  const py::acquired a = py::acquire(sub);
  const py::acquired b = py::acquire(mv);
  EXPECT_EQ(engine_calls, 2);
  EXPECT_EQ(b.c_view().shape[0], 4);
  Py_DECREF(sub);
  Py_DECREF(mv);
}

TEST_F(Bridge, ViolationsCarryTheEnginesMessageAndClass) {
  PyObject* n = eval("numpy.zeros(3)");
  const ap::dtype f32 = ap::dtypes::float32;
  py::constraints c;
  c.name = "x";
  c.dtypes = &f32;
  c.n_dtypes = 1;
  try {
    py::acquire(n, c);
    FAIL() << "a float64 array met a float32 constraint";
  } catch (const ap::type_error& e) {
    EXPECT_STREQ(e.what(), "x: expected dtype float32, got float64 (from numpy.ndarray)");
  }
  EXPECT_EQ(engine_calls, 1);  // the inline path declined, and the engine said why
  EXPECT_FALSE(PyErr_Occurred());
  PyObject* plain = eval("object()");
  EXPECT_THROW(py::acquire(plain, c), py::not_an_array);
  EXPECT_FALSE(PyErr_Occurred());
  Py_DECREF(n);
  Py_DECREF(plain);
}

TEST_F(Bridge, ReleaseDropsTheProducerAndMovesKeepTheView) {
  PyObject* n = eval("numpy.arange(4.0)");
  PyObject* mv = eval("memoryview(bytearray(8))");
  const Py_ssize_t n_refs = Py_REFCNT(n), mv_refs = Py_REFCNT(mv);
  {
    py::acquired inline_held = py::acquire(n);
    py::acquired engine_held = py::acquire(mv);
    EXPECT_EQ(Py_REFCNT(n), n_refs + 1);
    EXPECT_GT(Py_REFCNT(mv), mv_refs);
    py::acquired moved = std::move(inline_held);  // its extents move with it
    EXPECT_FALSE(inline_held);
    EXPECT_EQ(moved.c_view().shape[0], 4);
    EXPECT_EQ(moved.c_view().strides[0], 1);
    moved.release();
    EXPECT_EQ(Py_REFCNT(n), n_refs);
  }
  EXPECT_EQ(Py_REFCNT(mv), mv_refs);
  Py_DECREF(n);
  Py_DECREF(mv);
}

TEST_F(Bridge, ProducerStreamIsRefusedBesideAGivenStream) {
  PyObject* a = eval("numpy.zeros(3)");
  arrayport_acquire_request_t r{};
  r.size = sizeof r;
  r.ndim = -1;
  r.options = ARRAYPORT_REQUEST_STREAM | ARRAYPORT_REQUEST_PRODUCER_STREAM;
  arrayport_acquired_t out{};
  EXPECT_EQ(request(a, &r, out), ARRAYPORT_ACQUIRE_FAILED);
  EXPECT_EQ(take_error(PyExc_ValueError),
            "acquire_view: options ask for both a given stream and the producer's");
  py::acquire_options o;
  o.stream_given = o.producer_stream = true;
  EXPECT_THROW(py::acquire(a, {}, o), py::error_already_set);  // the inline path leaves it
  EXPECT_EQ(take_error(PyExc_ValueError),
            "acquire_view: options ask for both a given stream and the producer's");
  Py_DECREF(a);
}

// Producers that state no stream of theirs (NumPy, buffers, Arrays) are on arrayport's current
// stream, inline and in the engine alike, borrowed or held.
TEST_F(Bridge, ProducerStreamOfHostProducersIsTheCurrentStream) {
  PyObject* n = eval("numpy.arange(4, dtype=numpy.float32)");
  PyObject* a = eval("arrayport.zeros((4,), 'float32', memory='host')");
  PyObject* mv = eval("memoryview(bytearray(16)).cast('f')");
  const ap::stream_handle current = py::current_stream();
  const auto marker = reinterpret_cast<ap::stream_handle>(std::uintptr_t{0x1234});
  for (PyObject* obj : {n, a, mv}) {
    ap::view<float, 1> typed;
    ap::stream_handle s = marker;
    const bool inline_read = py::detail::typed_view_fast(obj, typed, &s);
    EXPECT_EQ(inline_read, obj != mv);
    if (inline_read) {
      EXPECT_EQ(s, current);
    }
    py::acquire_options o;
    o.producer_stream = true;
    const py::acquired held = py::acquire(obj, {}, o);
    EXPECT_EQ(held.c_view().stream, current);
    arrayport_acquire_request_t r{};
    r.size = sizeof r;
    r.ndim = -1;
    r.options = ARRAYPORT_REQUEST_PRODUCER_STREAM;
    arrayport_acquired_t out{};
    out.view.stream = marker;
    ASSERT_EQ(request(obj, &r, out), ARRAYPORT_ACQUIRE_OK);
    EXPECT_EQ(out.view.stream, current);
    real->release(out.handle);
  }
  EXPECT_EQ(engine_calls, 1);  // the memoryview's
  Py_DECREF(n);
  Py_DECREF(a);
  Py_DECREF(mv);
}

}  // namespace
