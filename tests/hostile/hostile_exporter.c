// A buffer-protocol exporter that misbehaves on request, for
// tests/python/bridge/test_hostile_producers.py:
// bf_getbuffer fails with or without an exception (or returns 1), or "succeeds" with a Py_buffer
// that no consumer may trust. It counts its exports and releases, so that a test can see each
// successful export released exactly once. ctypes cannot make a bf_getbuffer: hence C.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <string.h>

static const char* const mode_names[] = {
    "ok",                 // a well-formed 1-d float64 buffer of 4 items
    "fail_with_error",    // -1 with a BufferError set (what exporters should do)
    "fail_silently",      // -1 with no exception set
    "fail_positive",      // 1: neither success (0) nor failure (-1), no exception
    "ok_with_error",      // a well-formed buffer, and an exception set
    "null_buf",           // buf NULL, 4 items
    "negative_ndim",      // ndim -1
    "huge_ndim",          // ndim 65 (shape and strides hold 2 entries)
    "int_max_ndim",       // ndim INT_MAX
    "null_shape_2d",      // ndim 2, shape NULL
    "null_shape_bad_len", // ndim 1, shape NULL, len not a multiple of itemsize
    "zero_itemsize",      // itemsize 0, format "d"
    "negative_itemsize",  // itemsize -8, format "d"
    "null_format",        // format NULL ("B") with itemsize 8
    "bad_format",         // format "T{d:x:}"
    "negative_len",       // strides NULL, len -8
    "len_mismatch",       // strides NULL, shape (4,), len 16
    "negative_shape",     // shape (-4,)
    "suboffsets",         // suboffsets (0,)
    "unaligned_stride",   // strides (4,) for 8-byte items
    "huge_stride",        // strides (2^62,)
    "null_obj",           // well-formed, but view->obj left NULL (no release will come)
    NULL};

typedef struct {
  PyObject_HEAD
  int mode;
  double storage[4];
  Py_ssize_t shape[2], strides[2], suboffsets[2];
  Py_ssize_t exports, releases;
} Exporter;

static int exporter_init(PyObject* self, PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"mode", NULL};
  const char* mode = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s", keywords, &mode)) return -1;
  Exporter* e = (Exporter*)self;
  for (int i = 0; mode_names[i]; ++i)
    if (strcmp(mode_names[i], mode) == 0) {
      e->mode = i;
      for (int k = 0; k < 4; ++k) e->storage[k] = k + 1.0;
      return 0;
    }
  PyErr_Format(PyExc_ValueError, "Exporter: unknown mode '%s'", mode);
  return -1;
}

static int exporter_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  (void)flags;
  Exporter* e = (Exporter*)self;
  const char* mode = mode_names[e->mode];
  if (strcmp(mode, "fail_with_error") == 0) {
    PyErr_SetString(PyExc_BufferError, "Exporter: refused on purpose");
    view->obj = NULL;
    return -1;
  }
  if (strcmp(mode, "fail_silently") == 0) {
    view->obj = NULL;
    return -1;
  }
  if (strcmp(mode, "fail_positive") == 0) {
    view->obj = NULL;
    return 1;
  }
  e->shape[0] = 4;
  e->shape[1] = 1;
  e->strides[0] = 8;
  e->strides[1] = 8;
  e->suboffsets[0] = e->suboffsets[1] = 0;
  Py_INCREF(self);
  view->obj = self;
  view->buf = e->storage;
  view->len = (Py_ssize_t)sizeof e->storage;
  view->itemsize = 8;
  view->readonly = 0;
  view->ndim = 1;
  view->format = "d";
  view->shape = e->shape;
  view->strides = e->strides;
  view->suboffsets = NULL;
  view->internal = NULL;
  if (strcmp(mode, "ok_with_error") == 0) PyErr_SetString(PyExc_RuntimeError, "Exporter: set on purpose");
  else if (strcmp(mode, "null_buf") == 0) view->buf = NULL;
  else if (strcmp(mode, "negative_ndim") == 0) view->ndim = -1;
  else if (strcmp(mode, "huge_ndim") == 0) view->ndim = 65;
  else if (strcmp(mode, "int_max_ndim") == 0) view->ndim = 0x7fffffff;
  else if (strcmp(mode, "null_shape_2d") == 0) view->ndim = 2, view->shape = NULL, view->strides = NULL;
  else if (strcmp(mode, "null_shape_bad_len") == 0) view->shape = NULL, view->strides = NULL, view->len = 12;
  else if (strcmp(mode, "zero_itemsize") == 0) view->itemsize = 0;
  else if (strcmp(mode, "negative_itemsize") == 0) view->itemsize = -8;
  else if (strcmp(mode, "null_format") == 0) view->format = NULL;
  else if (strcmp(mode, "bad_format") == 0) view->format = "T{d:x:}";
  else if (strcmp(mode, "negative_len") == 0) view->strides = NULL, view->len = -8;
  else if (strcmp(mode, "len_mismatch") == 0) view->strides = NULL, view->len = 16;
  else if (strcmp(mode, "negative_shape") == 0) e->shape[0] = -4;
  else if (strcmp(mode, "suboffsets") == 0) view->suboffsets = e->suboffsets;
  else if (strcmp(mode, "unaligned_stride") == 0) e->strides[0] = 4;
  else if (strcmp(mode, "huge_stride") == 0) e->strides[0] = (Py_ssize_t)1 << 62;
  else if (strcmp(mode, "null_obj") == 0) Py_CLEAR(view->obj);
  ++e->exports;
  return 0;
}

static void exporter_releasebuffer(PyObject* self, Py_buffer* view) {
  (void)view;
  ++((Exporter*)self)->releases;
}

static PyMemberDef exporter_members[] = {
    {"exports", T_PYSSIZET, offsetof(Exporter, exports), READONLY, "successful getbuffer calls"},
    {"releases", T_PYSSIZET, offsetof(Exporter, releases), READONLY, "releasebuffer calls"},
    {NULL, 0, 0, 0, NULL}};

static PyType_Slot exporter_slots[] = {
    {Py_tp_init, (void*)exporter_init},
    {Py_tp_new, (void*)PyType_GenericNew},
    {Py_tp_members, exporter_members},
    {Py_bf_getbuffer, (void*)exporter_getbuffer},
    {Py_bf_releasebuffer, (void*)exporter_releasebuffer},
    {0, NULL}};

static PyType_Spec exporter_spec = {"hostile_exporter.Exporter", sizeof(Exporter), 0,
                                    Py_TPFLAGS_DEFAULT, exporter_slots};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "hostile_exporter", NULL, -1,
                                        NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_hostile_exporter(void) {
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return NULL;
  PyObject* type = PyType_FromSpec(&exporter_spec);
  if (!type || PyModule_AddObject(m, "Exporter", type) != 0) {
    Py_XDECREF(type);
    Py_DECREF(m);
    return NULL;
  }
  PyObject* modes = PyTuple_New(0);
  for (Py_ssize_t i = 0; modes && mode_names[i]; ++i) {
    PyObject* name = PyUnicode_FromString(mode_names[i]);
    if (!name || _PyTuple_Resize(&modes, i + 1) != 0) {
      Py_XDECREF(name);
      Py_XDECREF(modes);
      modes = NULL;
      break;
    }
    PyTuple_SET_ITEM(modes, i, name);
  }
  if (!modes || PyModule_AddObject(m, "MODES", modes) != 0) {
    Py_XDECREF(modes);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
