/* module.c - the _ctosa module: errors, dtype/spec/version helpers, spec
 * parsing, validation and the reference interpreter entry point. */
#include <stdarg.h>
#include <string.h>

#include "ext.h"

/* Exception classes by ctosa_code, installed by ctosa/__init__.py through
 * _set_error_types() (the classes are plain Python). */
static PyObject *error_types[CTOSA_ERR_INTERNAL + 1];
static PyObject *numpy_module;

static PyObject *error_class(ctosa_code code) {
    if ((unsigned)code <= CTOSA_ERR_INTERNAL && error_types[code]) return error_types[code];
    return PyExc_RuntimeError;
}

static PyObject *raise_text(ctosa_code code, const char *msg, const char *file) {
    PyObject *cls = error_class(code);
    PyObject *args = NULL, *kw = NULL, *exc = NULL;
    if (cls == PyExc_RuntimeError) {
        PyErr_SetString(cls, msg);
        return NULL;
    }
    args = Py_BuildValue("(s)", msg);
    kw = Py_BuildValue("{s:i,s:s}", "code", (int)code, "file", file);
    if (args && kw) exc = PyObject_Call(cls, args, kw);
    if (exc) PyErr_SetObject(cls, exc);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_XDECREF(exc);
    return NULL;
}

PyObject *cx_raise(ctosa_error *e, const char *file) {
    if (!e) {
        PyErr_SetString(PyExc_SystemError, "ctosa: error raised without an error");
        return NULL;
    }
    raise_text(ctosa_error_code(e), ctosa_error_message(e), file);
    ctosa_error_free(e);
    return NULL;
}

PyObject *cx_raise_code(ctosa_code code, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return raise_text(code, buf, NULL);
}

static PyObject *set_error_types(PyObject *self, PyObject *arg) {
    if (!PyDict_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "_set_error_types: expected {code: class}");
        return NULL;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(arg, &pos, &k, &v)) {
        long code = PyLong_AsLong(k);
        if (code == -1 && PyErr_Occurred()) return NULL;
        if (code < 0 || code > CTOSA_ERR_INTERNAL) continue;
        Py_INCREF(v);
        Py_XSETREF(error_types[code], v);
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------ helpers */

PyObject *cx_numpy(void) {
    if (!numpy_module) numpy_module = PyImport_ImportModule("numpy");
    return numpy_module;
}

PyObject *cx_str_or_none(const char *s) {
    if (!s) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}

PyObject *cx_str_tuple(const char *const *v, uint32_t n) {
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        PyObject *s = cx_str_or_none(v[i]);
        if (!s) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

/* numpy dtype names accepted besides the TOSA names. */
static const struct {
    const char *name;
    ctosa_dtype t;
} np_names[] = {
    {"float32", CTOSA_DTYPE_FP32}, {"float16", CTOSA_DTYPE_FP16},  {"bool", CTOSA_DTYPE_BOOL},
    {"int8", CTOSA_DTYPE_INT8},    {"int16", CTOSA_DTYPE_INT16},   {"int32", CTOSA_DTYPE_INT32},
    {"int64", CTOSA_DTYPE_INT64},  {"bfloat16", CTOSA_DTYPE_BF16},
};

int cx_dtype_from_obj(PyObject *o, ctosa_dtype *out) {
    if (PyLong_Check(o)) {
        long v = PyLong_AsLong(o);
        if (v <= 0 || v >= CTOSA_DTYPE_COUNT) {
            cx_raise_code(CTOSA_ERR_USAGE, "unknown dtype value %ld", v);
            return -1;
        }
        *out = (ctosa_dtype)v;
        return 0;
    }
    PyObject *s = NULL;
    if (PyUnicode_Check(o)) {
        s = o;
        Py_INCREF(s);
    } else if (PyType_Check(o) || PyObject_HasAttrString(o, "name")) {
        /* numpy.dtype or a numpy scalar type such as numpy.float32 */
        PyObject *np = cx_numpy();
        if (!np) return -1;
        PyObject *dt = PyObject_CallMethod(np, "dtype", "O", o);
        if (!dt) return -1;
        s = PyObject_GetAttrString(dt, "name");
        Py_DECREF(dt);
        if (!s) return -1;
    } else {
        PyErr_Format(PyExc_TypeError, "dtype must be a str, int or numpy dtype, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    const char *name = PyUnicode_AsUTF8(s);
    if (!name) {
        Py_DECREF(s);
        return -1;
    }
    for (int t = 1; t < CTOSA_DTYPE_COUNT; t++) {
        const char *a = ctosa_dtype_name((ctosa_dtype)t);
        if (a && strcasecmp(a, name) == 0) {
            *out = (ctosa_dtype)t;
            Py_DECREF(s);
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof np_names / sizeof np_names[0]; i++)
        if (strcmp(np_names[i].name, name) == 0) {
            *out = np_names[i].t;
            Py_DECREF(s);
            return 0;
        }
    cx_raise_code(CTOSA_ERR_USAGE,
                  "unknown dtype '%s' (expected a TOSA name such as int8, fp32, "
                  "bf16, or a numpy dtype of the same kind)",
                  name);
    Py_DECREF(s);
    return -1;
}

const char *cx_host_np_dtype(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_BOOL: return "?";
    case CTOSA_DTYPE_INT4:
    case CTOSA_DTYPE_INT8: return "i1";
    case CTOSA_DTYPE_INT16: return "<i2";
    case CTOSA_DTYPE_INT32: return "<i4";
    case CTOSA_DTYPE_INT48:
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE: return "<i8";
    case CTOSA_DTYPE_FP32: return "<f4";
    case CTOSA_DTYPE_FP16: return "<f2";
    case CTOSA_DTYPE_BF16: return "<u2";
    case CTOSA_DTYPE_FP8E4M3:
    case CTOSA_DTYPE_FP8E5M2: return "u1";
    default: return NULL;
    }
}

int cx_spec_from_obj(PyObject *o, ctosa_spec *out) {
    PyObject *s = PyObject_Str(o);
    if (!s) return -1;
    const char *text = PyUnicode_AsUTF8(s);
    ctosa_error *e = text ? ctosa_spec_parse(text, out) : NULL;
    Py_DECREF(s);
    if (!text) return -1;
    if (e) {
        cx_raise(e, NULL);
        return -1;
    }
    return 0;
}

int cx_version_from_obj(PyObject *o, ctosa_version *out) {
    if (!o || o == Py_None) {
        *out = CTOSA_VERSION_1_0;
        return 0;
    }
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        if (!s) return -1;
        if (!strcmp(s, "1.0") || !strcmp(s, "1.0.0")) {
            *out = CTOSA_VERSION_1_0;
            return 0;
        }
        if (!strcmp(s, "1.1") || !strcmp(s, "1.1.0") || !strcmp(s, "1.1-draft")) {
            *out = CTOSA_VERSION_1_1_DRAFT;
            return 0;
        }
        cx_raise_code(CTOSA_ERR_USAGE, "unknown TOSA version '%s' (expected \"1.0\" or \"1.1\")", s);
        return -1;
    }
    if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) >= 2 && PyTuple_GET_SIZE(o) <= 4) {
        long v[3] = {0, 0, 0};
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o) && i < 3; i++) {
            v[i] = PyLong_AsLong(PyTuple_GET_ITEM(o, i));
            if (v[i] == -1 && PyErr_Occurred()) return -1;
        }
        out->major = (int32_t)v[0];
        out->minor = (int32_t)v[1];
        out->patch = (int32_t)v[2];
        out->draft = PyTuple_GET_SIZE(o) == 4 ? PyObject_IsTrue(PyTuple_GET_ITEM(o, 3)) == 1
                                              : (v[0] == 1 && v[1] == 1);
        return 0;
    }
    PyErr_SetString(PyExc_TypeError, "version must be \"1.0\", \"1.1\" or a tuple "
                                     "(major, minor[, patch[, draft]])");
    return -1;
}

PyObject *cx_version_to_obj(ctosa_version v) {
    return Py_BuildValue("(iiiO)", v.major, v.minor, v.patch, v.draft ? Py_True : Py_False);
}

/* --------------------------------------------------------------- spec */

static PyObject *spec_tuple(const ctosa_spec *s) {
    char buf[512];
    ctosa_spec_format(s, buf, sizeof buf);
    PyObject *exts = PyList_New(0);
    if (!exts) return NULL;
    for (int e = 0; e < CTOSA_EXT_COUNT; e++)
        if (s->extensions & (1ull << e)) {
            PyObject *t = PyUnicode_FromString(ctosa_ext_token((ctosa_ext)e));
            if (!t || PyList_Append(exts, t) < 0) {
                Py_XDECREF(t);
                Py_DECREF(exts);
                return NULL;
            }
            Py_DECREF(t);
        }
    PyObject *profiles = PyList_New(0);
    if (!profiles) {
        Py_DECREF(exts);
        return NULL;
    }
    if (s->profiles & CTOSA_PRO_INT) PyList_Append(profiles, PyUnicode_FromString("INT"));
    if (s->profiles & CTOSA_PRO_FP) PyList_Append(profiles, PyUnicode_FromString("FP"));
    /* PyList_Append increfs: drop the temporaries' own references */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(profiles); i++) Py_DECREF(PyList_GET_ITEM(profiles, i));
    return Py_BuildValue("{s:s,s:N,s:N,s:N,s:s,s:O}", "canonical", buf, "version",
                         cx_version_to_obj(s->version), "profiles", profiles, "extensions", exts, "level",
                         s->level == CTOSA_LEVEL_8K ? "8K" : "none", "u55", s->u55 ? Py_True : Py_False);
}

static PyObject *py_spec_parse(PyObject *self, PyObject *arg) {
    const char *text = PyUnicode_AsUTF8(arg);
    if (!text) return NULL;
    ctosa_spec s;
    ctosa_error *e = ctosa_spec_parse(text, &s);
    if (e) return cx_raise(e, NULL);
    return spec_tuple(&s);
}

static PyObject *py_spec_from_target(PyObject *self, PyObject *arg) {
    const char *text = PyUnicode_AsUTF8(arg);
    if (!text) return NULL;
    ctosa_spec s;
    ctosa_error *e = ctosa_spec_from_target(text, &s);
    if (e) return cx_raise(e, NULL);
    return spec_tuple(&s);
}

/* ----------------------------------------------------------- validate */

/* _validate(graph, spec, max_problems=0) -> None or the violation text. */
static PyObject *py_validate(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"graph", "spec", "max_problems", NULL};
    PyObject *gobj, *sobj;
    unsigned int maxp = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|I", kwlist, &gobj, &sobj, &maxp)) return NULL;
    GraphObject *go;
    ctosa_spec spec;
    if (cx_graph_check(gobj, &go) < 0 || cx_spec_from_obj(sobj, &spec) < 0) return NULL;
    ctosa_validate_options vo = {.max_problems = maxp};
    PyThreadState *ts = cx_graph_begin(go);
    ctosa_error *e = ctosa_validate(go->g, &spec, &vo);
    cx_graph_end(go, ts);
    if (!e) Py_RETURN_NONE;
    if (ctosa_error_code(e) != CTOSA_ERR_INVALID) return cx_raise(e, NULL);
    PyObject *msg = cx_str_or_none(ctosa_error_message(e));
    ctosa_error_free(e);
    return msg;
}

/* ---------------------------------------------------------------- run */

typedef struct run_input {
    const char *name;
    Py_buffer view;
    int64_t shape[16];
    int have_view;
} run_input;

static int registry_from_obj(PyObject *reg_obj, const ctosa_custom_registry **out) {
    *out = NULL;
    if (reg_obj == Py_None) return 0;
    if (!PyObject_TypeCheck(reg_obj, &cx_CustomOps_Type)) {
        PyErr_SetString(PyExc_TypeError, "custom_ops must be a ctosa.CustomOps");
        return -1;
    }
    *out = ((CustomOpsObject *)reg_obj)->reg;
    return 0;
}

/* Sets the inputs, runs and collects the outputs as
 * [(name, dtype_short, shape, bytearray)]. When *itp is NULL the
 * interpreter is created here (opt, reg) and stays in *itp for the caller
 * to free. Buffers must already be in the host encoding of each input's
 * dtype (the Python layer converts). The GIL is released from interpreter
 * creation to the end of the run. */
static PyObject *do_run(GraphObject *go, ctosa_interp **itp, const ctosa_interp_options *opt,
                        const ctosa_custom_registry *reg, PyObject *inputs) {
    PyObject *seq = PySequence_Fast(inputs, "inputs must be a sequence of (name, buffer)");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    run_input *in = PyMem_Calloc(n ? (size_t)n : 1, sizeof *in);
    PyObject *result = NULL;
    ctosa_error *e = NULL;
    if (!in) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i), *bufobj;
        if (!PyArg_ParseTuple(item, "sO", &in[i].name, &bufobj)) goto done;
        if (PyObject_GetBuffer(bufobj, &in[i].view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
        in[i].have_view = 1;
        if (in[i].view.ndim > 16) {
            cx_raise_code(CTOSA_ERR_USAGE, "input '%s': rank %d is over 16", in[i].name, in[i].view.ndim);
            goto done;
        }
        for (int d = 0; d < in[i].view.ndim; d++) in[i].shape[d] = in[i].view.shape[d];
    }
    PyThreadState *ts = cx_graph_begin(go);
    if (!*itp) {
        e = ctosa_interp_create(go->g, opt, itp);
        if (!e && reg) e = ctosa_custom_registry_attach(reg, *itp);
    }
    ctosa_interp *it = *itp;
    for (Py_ssize_t i = 0; !e && i < n; i++) {
        ctosa_interp_tensor info;
        const char *nm = in[i].name;
        /* dtype as declared: the Python layer converted the data to it */
        uint32_t k, nin = ctosa_interp_input_count(it);
        for (k = 0; k < nin; k++)
            if (!ctosa_interp_input_info(it, k, &info) && !strcmp(info.name, nm)) break;
        if (k == nin) {
            e = ctosa_error_new(CTOSA_ERR_USAGE, "'%s' is not an input of the graph", nm);
            break;
        }
        e = ctosa_interp_set_input(it, nm, info.dtype, (uint32_t)in[i].view.ndim, in[i].shape, in[i].view.buf,
                                   (uint64_t)in[i].view.len);
    }
    if (!e) e = ctosa_interp_run(it);
    cx_graph_end(go, ts);
    if (e) {
        cx_raise(e, NULL);
        goto done;
    }
    uint32_t nout = ctosa_interp_output_count(it);
    result = PyList_New(nout);
    if (!result) goto done;
    for (uint32_t i = 0; i < nout; i++) {
        ctosa_interp_tensor info, out;
        if ((e = ctosa_interp_output_info(it, i, &info)) ||
            (e = ctosa_interp_get_output(it, info.name, &out))) {
            Py_CLEAR(result);
            cx_raise(e, NULL);
            goto done;
        }
        PyObject *shape = PyTuple_New(out.rank);
        if (!shape) {
            Py_CLEAR(result);
            goto done;
        }
        for (uint32_t d = 0; d < out.rank; d++) PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(out.shape[d]));
        PyObject *data = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)out.size);
        if (data) {
            char *dst = PyByteArray_AS_STRING(data);
            Py_BEGIN_ALLOW_THREADS memcpy(dst, out.data, out.size);
            Py_END_ALLOW_THREADS
        }
        PyObject *tup = data ? Py_BuildValue("(NsNN)", cx_str_or_none(out.name), ctosa_dtype_short(out.dtype),
                                             shape, data)
                             : NULL;
        if (!tup) {
            if (!data) Py_DECREF(shape);
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, tup);
    }
done:
    if (in)
        for (Py_ssize_t i = 0; i < n; i++)
            if (in[i].have_view) PyBuffer_Release(&in[i].view);
    PyMem_Free(in);
    Py_DECREF(seq);
    return result;
}

/* _run(graph, [(name, buffer)], threads=0, max_memory=0, custom_ops=None,
 *      max_iterations=0, reference=False): one interpreter for one run. */
static PyObject *py_run(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"graph",      "inputs",         "threads",   "max_memory",
                             "custom_ops", "max_iterations", "reference", NULL};
    PyObject *gobj, *inputs, *reg_obj = Py_None;
    int threads = 0, reference = 0;
    unsigned long long maxmem = 0, maxit = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|iKOKp", kwlist, &gobj, &inputs, &threads, &maxmem,
                                     &reg_obj, &maxit, &reference))
        return NULL;
    GraphObject *go;
    const ctosa_custom_registry *reg;
    if (cx_graph_check(gobj, &go) < 0 || registry_from_obj(reg_obj, &reg) < 0) return NULL;
    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = threads;
    opt.max_memory = maxmem;
    opt.max_iterations = maxit;
    opt.reference = reference;
    ctosa_interp *it = NULL;
    PyObject *r = do_run(go, &it, &opt, reg, inputs);
    if (it) {
        Py_BEGIN_ALLOW_THREADS ctosa_interp_free(it);
        Py_END_ALLOW_THREADS
    }
    return r;
}

/* --------------------------------------------------------- Interpreter */

/* A persistent interpreter: planned once, run many times; variables keep
 * their values across runs. Holds its graph (and registry) alive. */
typedef struct InterpObject {
    PyObject_HEAD GraphObject *graph;
    PyObject *custom_ops;
    ctosa_interp *it;
    ctosa_interp_options opt;
    int running;
} InterpObject;

static void interp_dealloc(InterpObject *o) {
    ctosa_interp_free(o->it);
    Py_XDECREF(o->custom_ops);
    Py_XDECREF(o->graph);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static int interp_init(InterpObject *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"graph",          "threads",   "max_memory", "custom_ops",
                             "max_iterations", "reference", NULL};
    PyObject *gobj, *reg_obj = Py_None;
    int threads = 0, reference = 0;
    unsigned long long maxmem = 0, maxit = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iKOKp", kwlist, &gobj, &threads, &maxmem, &reg_obj, &maxit,
                                     &reference))
        return -1;
    GraphObject *go;
    const ctosa_custom_registry *reg;
    if (o->graph) {
        PyErr_SetString(PyExc_TypeError, "Interpreter is already initialised");
        return -1;
    }
    if (cx_graph_check(gobj, &go) < 0 || registry_from_obj(reg_obj, &reg) < 0) return -1;
    ctosa_interp_options_init(&o->opt);
    o->opt.threads = threads;
    o->opt.max_memory = maxmem;
    o->opt.max_iterations = maxit;
    o->opt.reference = reference;
    ctosa_error *e;
    PyThreadState *ts = cx_graph_begin(go);
    e = ctosa_interp_create(go->g, &o->opt, &o->it);
    if (!e && reg) e = ctosa_custom_registry_attach(reg, o->it);
    cx_graph_end(go, ts);
    if (e) {
        ctosa_interp_free(o->it);
        o->it = NULL;
        cx_raise(e, NULL);
        return -1;
    }
    Py_INCREF(go);
    o->graph = go;
    if (reg) {
        Py_INCREF(reg_obj);
        o->custom_ops = reg_obj;
    }
    return 0;
}

static PyObject *interp_run(InterpObject *o, PyObject *inputs) {
    if (!o->it) return cx_raise_code(CTOSA_ERR_USAGE, "Interpreter is not initialised");
    if (o->running) /* one interpreter is not thread-safe */
        return cx_raise_code(CTOSA_ERR_USAGE, "this Interpreter is running in another thread");
    o->running = 1;
    PyObject *r = do_run(o->graph, &o->it, &o->opt, NULL, inputs);
    o->running = 0;
    return r;
}

static PyObject *interp_io(InterpObject *o, int outputs) {
    if (!o->it) return PyList_New(0);
    uint32_t n = outputs ? ctosa_interp_output_count(o->it) : ctosa_interp_input_count(o->it);
    PyObject *l = PyList_New(n);
    for (uint32_t i = 0; l && i < n; i++) {
        ctosa_interp_tensor info;
        ctosa_error *e =
            outputs ? ctosa_interp_output_info(o->it, i, &info) : ctosa_interp_input_info(o->it, i, &info);
        if (e) {
            Py_DECREF(l);
            return cx_raise(e, NULL);
        }
        PyObject *shape = PyTuple_New(info.rank);
        for (uint32_t d = 0; shape && d < info.rank; d++)
            PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(info.shape[d]));
        PyObject *t =
            shape ? Py_BuildValue("(NsN)", cx_str_or_none(info.name), ctosa_dtype_short(info.dtype), shape)
                  : NULL;
        if (!t) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, t);
    }
    return l;
}
static PyObject *interp_inputs(InterpObject *o, void *c) { return interp_io(o, 0); }
static PyObject *interp_outputs(InterpObject *o, void *c) { return interp_io(o, 1); }
static PyObject *interp_graph(InterpObject *o, void *c) {
    if (!o->graph) Py_RETURN_NONE;
    Py_INCREF(o->graph);
    return (PyObject *)o->graph;
}

static PyMethodDef interp_methods[] = {
    {"run", (PyCFunction)interp_run, METH_O, "run([(name, buffer)]) -> [(name, dtype, shape, bytearray)]"},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef interp_getset[] = {
    {"inputs", (getter)interp_inputs, NULL, "[(name, dtype, shape)] of the main region's inputs", NULL},
    {"outputs", (getter)interp_outputs, NULL, "[(name, dtype, shape)] of its outputs", NULL},
    {"graph", (getter)interp_graph, NULL, "the TosaGraph", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PyTypeObject Interp_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctosa._ctosa.Interpreter",
    .tp_basicsize = sizeof(InterpObject),
    .tp_dealloc = (destructor)interp_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_methods = interp_methods,
    .tp_getset = interp_getset,
    .tp_init = (initproc)interp_init,
    .tp_new = PyType_GenericNew,
    .tp_doc =
        "Interpreter(graph, threads=0, max_memory=0, custom_ops=None, max_iterations=0, reference=False)",
};

/* ---------------------------------------------------------- metadata */

static PyObject *py_op_names(PyObject *self, PyObject *unused) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int k = 1; k < CTOSA_OP_COUNT; k++) {
        const char *nm = ctosa_op_name((ctosa_op_kind)k);
        if (!nm) continue;
        uint32_t nf = 0;
        const ctosa_attr_field *f = ctosa_op_attr_fields((ctosa_op_kind)k, &nf);
        PyObject *fields = PyTuple_New(nf);
        if (!fields) goto fail;
        for (uint32_t i = 0; i < nf; i++) PyTuple_SET_ITEM(fields, i, PyUnicode_FromString(f[i].name));
        PyObject *v = Py_BuildValue("(iN)", k, fields);
        if (!v || PyDict_SetItemString(d, nm, v) < 0) {
            Py_XDECREF(v);
            goto fail;
        }
        Py_DECREF(v);
    }
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

static PyObject *py_dtypes(PyObject *self, PyObject *unused) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int t = 1; t < CTOSA_DTYPE_COUNT; t++) {
        const char *host = cx_host_np_dtype((ctosa_dtype)t);
        PyObject *v = Py_BuildValue("(iizn)", t, ctosa_dtype_bits((ctosa_dtype)t), host,
                                    (Py_ssize_t)ctosa_host_elem_size((ctosa_dtype)t));
        if (!v || PyDict_SetItemString(d, ctosa_dtype_short((ctosa_dtype)t), v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

static PyMethodDef methods[] = {
    {"_set_error_types", set_error_types, METH_O, "install the exception classes by code"},
    {"spec_parse", py_spec_parse, METH_O, "spec_parse(text) -> dict (canonical, version, ...)"},
    {"spec_from_target", py_spec_from_target, METH_O, "spec_from_target(name) -> dict"},
    {"validate", (PyCFunction)(void (*)(void))py_validate, METH_VARARGS | METH_KEYWORDS,
     "validate(graph, spec, max_problems=0) -> None or violation text"},
    {"run", (PyCFunction)(void (*)(void))py_run, METH_VARARGS | METH_KEYWORDS,
     "run(graph, [(name, buffer)], threads=0, max_memory=0, custom_ops=None, max_iterations=0, "
     "reference=False) -> outputs"},
    {"read", (PyCFunction)(void (*)(void))cx_read, METH_VARARGS | METH_KEYWORDS,
     "read(path_or_buffer, require_identifier=False) -> TosaGraph"},
    {"lower", (PyCFunction)(void (*)(void))cx_lower, METH_VARARGS | METH_KEYWORDS,
     "lower(path, spec, ...) -> LowerResult"},
    {"quantize", (PyCFunction)(void (*)(void))cx_quantize, METH_VARARGS | METH_KEYWORDS,
     "quantize(path, output_dir, calibration, ...) -> dict (qdq_path, report_path, report)"},
    {"verify_compare", cx_verify_compare, METH_VARARGS, "compare one output (ctosa_verify_compare) -> dict"},
    {"op_table", py_op_names, METH_NOARGS, "{op name: (value, attribute field names)}"},
    {"dtype_table", py_dtypes, METH_NOARGS, "{dtype: (value, bits, host numpy dtype, host size)}"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT,
                                    "_ctosa",
                                    "C extension of the ctosa package (use `import ctosa`).",
                                    -1,
                                    methods,
                                    NULL,
                                    NULL,
                                    NULL,
                                    NULL};

PyMODINIT_FUNC PyInit__ctosa(void) {
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    if (cx_graph_types_ready(m) < 0 || cx_lower_types_ready(m) < 0 || cx_runtime_types_ready(m) < 0 ||
        PyType_Ready(&Interp_Type) < 0 ||
        PyModule_AddObject(m, "Interpreter", (Py_INCREF(&Interp_Type), (PyObject *)&Interp_Type)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyModule_AddStringConstant(m, "C_VERSION", CTOSA_VERSION_STRING);
    static const char *codes[] = {"OK",    "USAGE", "IO",      "FORMAT",  "UNSUPPORTED",
                                  "LIMIT", "NOMEM", "INVALID", "INTERNAL"};
    for (int i = 0; i <= CTOSA_ERR_INTERNAL; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "ERR_%s", codes[i]);
        PyModule_AddIntConstant(m, nm, i);
    }
    return m;
}
