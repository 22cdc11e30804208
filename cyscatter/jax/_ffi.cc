// An XLA FFI handler (CPU) that hands the buffers XLA gives to a Python function as NumPy arrays, without copying:
// the arguments as read-only views, the results as writable views the function fills. jax.pure_callback instead
// copies every operand into a new jax.Array and the function's result into XLA's buffer.
//
// The handler takes one attribute, `key` (int64), and calls dispatch(key, args, rets) with the function set by
// set_dispatch(); a Python exception becomes an XLA error carrying its message.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#ifndef NPY_NO_DEPRECATED_API
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#endif
#include <numpy/arrayobject.h>

#include <cstdint>
#include <string>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

static PyObject* dispatch = nullptr;   // strong reference, set once by set_dispatch

static int numpy_type(ffi::DataType t) {
  switch (t) {
    case ffi::DataType::PRED: return NPY_BOOL;
    case ffi::DataType::S8: return NPY_INT8;
    case ffi::DataType::S16: return NPY_INT16;
    case ffi::DataType::S32: return NPY_INT32;
    case ffi::DataType::S64: return NPY_INT64;
    case ffi::DataType::U8: return NPY_UINT8;
    case ffi::DataType::U16: return NPY_UINT16;
    case ffi::DataType::U32: return NPY_UINT32;
    case ffi::DataType::U64: return NPY_UINT64;
    case ffi::DataType::F16: return NPY_FLOAT16;
    case ffi::DataType::F32: return NPY_FLOAT32;
    case ffi::DataType::F64: return NPY_FLOAT64;
    case ffi::DataType::C64: return NPY_COMPLEX64;
    case ffi::DataType::C128: return NPY_COMPLEX128;
    default: return -1;
  }
}

// A NumPy view of `buf` (nullptr with a Python error set on failure).
static PyObject* view(const ffi::AnyBuffer& buf, bool writable) {
  int typenum = numpy_type(buf.element_type());
  if (typenum < 0) {
    PyErr_Format(PyExc_TypeError, "cyscatter.jax: XLA data type %d has no NumPy dtype",
                 static_cast<int>(buf.element_type()));
    return nullptr;
  }
  auto dims = buf.dimensions();
  npy_intp shape[NPY_MAXDIMS];
  if (dims.size() > NPY_MAXDIMS) {
    PyErr_SetString(PyExc_ValueError, "cyscatter.jax: too many dimensions");
    return nullptr;
  }
  for (size_t i = 0; i < dims.size(); ++i) shape[i] = static_cast<npy_intp>(dims[i]);
  int flags = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | (writable ? NPY_ARRAY_WRITEABLE : 0);
  return PyArray_New(&PyArray_Type, static_cast<int>(dims.size()), shape, typenum, nullptr, buf.untyped_data(), 0,
                     flags, nullptr);
}

static std::string fetch_error() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  std::string message = "cyscatter.jax host call failed";
  if (value != nullptr) {
    PyObject* name = type != nullptr ? PyObject_GetAttrString(type, "__name__") : nullptr;
    PyObject* text = PyObject_Str(value);
    if (name != nullptr && text != nullptr) {
      const char* n = PyUnicode_AsUTF8(name);
      const char* t = PyUnicode_AsUTF8(text);
      if (n != nullptr && t != nullptr) message = std::string(n) + ": " + t;
    }
    Py_XDECREF(name);
    Py_XDECREF(text);
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return message;
}

static ffi::Error call(int64_t key, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  PyGILState_STATE gil = PyGILState_Ensure();
  ffi::Error result = ffi::Error::Success();
  PyObject* a = PyTuple_New(static_cast<Py_ssize_t>(args.size()));
  PyObject* r = PyTuple_New(static_cast<Py_ssize_t>(rets.size()));
  PyObject* k = PyLong_FromLongLong(key);
  bool ok = a != nullptr && r != nullptr && k != nullptr && dispatch != nullptr;
  for (size_t i = 0; ok && i < args.size(); ++i) {
    auto buf = args.get<ffi::AnyBuffer>(i);
    PyObject* v = buf.has_value() ? view(*buf, false) : nullptr;
    if (v == nullptr) ok = false; else PyTuple_SET_ITEM(a, i, v);
  }
  for (size_t i = 0; ok && i < rets.size(); ++i) {
    auto buf = rets.get<ffi::AnyBuffer>(i);
    PyObject* v = buf.has_value() ? view(**buf, true) : nullptr;
    if (v == nullptr) ok = false; else PyTuple_SET_ITEM(r, i, v);
  }
  if (ok) {
    PyObject* out = PyObject_CallFunctionObjArgs(dispatch, k, a, r, nullptr);
    ok = out != nullptr;
    Py_XDECREF(out);
  }
  if (!ok) {
    result = ffi::Error::Internal(PyErr_Occurred() ? fetch_error()
                                                   : std::string("cyscatter.jax: no dispatch function set"));
  }
  Py_XDECREF(a);
  Py_XDECREF(r);
  Py_XDECREF(k);
  PyGILState_Release(gil);
  return result;
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(cyscatter_host_call, call,
                              ffi::Ffi::Bind().Attr<int64_t>("key").RemainingArgs().RemainingRets());

static PyObject* handler(PyObject*, PyObject*) {
  return PyCapsule_New(reinterpret_cast<void*>(cyscatter_host_call), nullptr, nullptr);
}

static PyObject* set_dispatch(PyObject*, PyObject* fn) {
  if (!PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "set_dispatch needs a callable");
    return nullptr;
  }
  Py_INCREF(fn);
  Py_XSETREF(dispatch, fn);
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"handler", handler, METH_NOARGS, "The XLA FFI handler (a PyCapsule) for jax.ffi.register_ffi_target."},
    {"set_dispatch", set_dispatch, METH_O, "Set the function dispatch(key, args, rets) the handler calls."},
    {nullptr, nullptr, 0, nullptr}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ffi", "XLA FFI bridge of cyscatter.jax.", -1, methods};

PyMODINIT_FUNC PyInit__ffi(void) {
  import_array();
  return PyModule_Create(&module);
}
