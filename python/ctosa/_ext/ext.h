/* ext.h - shared declarations of the ctosa CPython extension (_ctosa).
 *
 * The extension uses the CPython C API only (no numpy headers): tensor data
 * crosses the boundary through the buffer protocol (PEP 3118), and numpy
 * arrays are made at run time with numpy.frombuffer over small exporter
 * objects that keep the owning graph alive. */
#ifndef CTOSA_PY_EXT_H
#define CTOSA_PY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include "ctosa/ctosa.h"

/* ------------------------------------------------------------- errors */

/* Raises the Python exception for e (class chosen by its code) and frees
 * e. file (may be NULL) is attached as the exception's `file`. Returns
 * NULL so callers can `return cx_raise(e, path);`. */
PyObject *cx_raise(ctosa_error *e, const char *file);
/* Raises the exception class of code with a formatted message. */
PyObject *cx_raise_code(ctosa_code code, const char *fmt, ...);

/* ----------------------------------------------------------- helpers */

/* dtype from a str ("int8", "INT8", numpy names "float32"...), an int
 * (file value) or an object with a `name` attribute (numpy.dtype). */
int cx_dtype_from_obj(PyObject *o, ctosa_dtype *out);
/* numpy dtype string of a dtype in the host encoding (ctosa/interp.h),
 * NULL if none. */
const char *cx_host_np_dtype(ctosa_dtype t);
/* Spec from a str or any object whose str() is a spec string. */
int cx_spec_from_obj(PyObject *o, ctosa_spec *out);
/* Version from "1.0", "1.1", (major, minor[, patch[, draft]]) or None (1.0). */
int cx_version_from_obj(PyObject *o, ctosa_version *out);
PyObject *cx_version_to_obj(ctosa_version v);
/* Tuple of str from a C string array (NULL entries become None). */
PyObject *cx_str_tuple(const char *const *v, uint32_t n);
PyObject *cx_str_or_none(const char *s);
PyObject *cx_numpy(void); /* borrowed reference to the numpy module, or NULL + error */

/* ------------------------------------------------------------- graphs */

typedef struct GraphObject {
    PyObject_HEAD ctosa_graph *g;
    PyObject *owner; /* non-NULL: g belongs to owner (a lower result) */
    Py_buffer *bufs; /* buffers whose memory the graph borrows */
    Py_ssize_t n_bufs, cap_bufs;
    int busy;                /* GIL-released operations in flight */
    int readonly;            /* builder calls refused */
    PyThread_type_lock lock; /* serialises GIL-released work on g */
    PyObject *weakrefs;
} GraphObject;

extern PyTypeObject cx_Graph_Type, cx_Region_Type, cx_Block_Type, cx_Tensor_Type, cx_Operator_Type,
    cx_DataView_Type;

/* A new graph object over g. owner NULL: the object frees g. */
PyObject *cx_graph_wrap(ctosa_graph *g, PyObject *owner, int readonly);
int cx_graph_check(PyObject *o, GraphObject **out); /* TypeError when not a graph */
/* Brackets GIL-free work on a graph: call begin with the GIL held; it
 * releases the GIL, takes the graph lock and returns the thread state to
 * hand to end, which unlocks and re-takes the GIL. */
PyThreadState *cx_graph_begin(GraphObject *go);
void cx_graph_end(GraphObject *go, PyThreadState *ts);
/* Keeps a buffer alive as long as the graph (steals view). */
int cx_graph_keep_buffer(GraphObject *go, Py_buffer *view);

int cx_graph_types_ready(PyObject *m);
int cx_lower_types_ready(PyObject *m);

/* Custom-operator registries (lower.c). */
typedef struct CustomOpsObject {
    PyObject_HEAD ctosa_custom_registry *reg;
    PyObject *keep; /* (infer, kernel) tuples of Python registrations */
} CustomOpsObject;
extern PyTypeObject cx_CustomOps_Type;

/* Module functions defined outside module.c. */
PyObject *cx_read(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cx_lower(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cx_quantize(PyObject *self, PyObject *args, PyObject *kw);
/* The partitioned-model runtime (runtime.c). */
int cx_runtime_types_ready(PyObject *m);
PyObject *cx_verify_compare(PyObject *self, PyObject *args);

#endif
