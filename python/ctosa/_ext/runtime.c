/* runtime.c - the partitioned-model runtime (ctosa/runtime.h) for Python:
 * the Runtime type behind ctosa.Model and verify_compare behind
 * ctosa.verify. Buffers cross in numpy layout of the runtime's dtypes
 * (uint8 as uint8); the Python layer makes the arrays. */
#include "ext.h"

#include "ctosa/runtime.h"

typedef struct RuntimeObject {
    PyObject_HEAD ctosa_runtime *rt;
    PyObject *custom_ops;
    int running;
} RuntimeObject;

static void runtime_dealloc(RuntimeObject *o) {
    ctosa_runtime_free(o->rt);
    Py_XDECREF(o->custom_ops);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

/* Runtime(path, threads=0, max_memory=0, max_iterations=0, custom_ops=None, report=None,
 *         reference=False) */
static int runtime_init(RuntimeObject *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path",       "threads", "max_memory", "max_iterations",
                             "custom_ops", "report",  "reference",  NULL};
    const char *path, *report = NULL;
    int threads = 0, reference = 0;
    unsigned long long maxmem = 0, maxit = 0;
    PyObject *reg_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|iKKOzp", kwlist, &path, &threads, &maxmem, &maxit, &reg_obj,
                                     &report, &reference))
        return -1;
    if (o->rt) {
        PyErr_SetString(PyExc_TypeError, "Runtime is already initialised");
        return -1;
    }
    if (reg_obj != Py_None && !PyObject_TypeCheck(reg_obj, &cx_CustomOps_Type)) {
        PyErr_SetString(PyExc_TypeError, "custom_ops must be a ctosa.CustomOps");
        return -1;
    }
    ctosa_runtime_options opt;
    ctosa_runtime_options_init(&opt);
    opt.threads = threads;
    opt.max_memory = maxmem;
    opt.max_iterations = maxit;
    opt.report = report;
    opt.reference = reference;
    opt.custom_ops = reg_obj == Py_None ? NULL : ((CustomOpsObject *)reg_obj)->reg;
    ctosa_error *e;
    Py_BEGIN_ALLOW_THREADS e = ctosa_runtime_load(path, &opt, &o->rt);
    Py_END_ALLOW_THREADS if (e) {
        cx_raise(e, path);
        return -1;
    }
    if (reg_obj != Py_None) {
        Py_INCREF(reg_obj);
        o->custom_ops = reg_obj;
    }
    return 0;
}

static PyObject *shape_tuple(uint32_t rank, const int64_t *shape) {
    PyObject *t = PyTuple_New(rank);
    for (uint32_t d = 0; t && d < rank; d++) PyTuple_SET_ITEM(t, d, PyLong_FromLongLong(shape[d]));
    return t;
}

/* (name, dtype, shape, (scale, zero_point) or None) */
static PyObject *info_tuple(const ctosa_runtime_tensor *t) {
    PyObject *shape = shape_tuple(t->rank, t->shape);
    PyObject *q = t->quantized ? Py_BuildValue("(dL)", t->scale, (long long)t->zero_point)
                               : (Py_INCREF(Py_None), Py_None);
    if (!shape || !q) {
        Py_XDECREF(shape);
        Py_XDECREF(q);
        return NULL;
    }
    return Py_BuildValue("(NsNN)", cx_str_or_none(t->name), t->dtype ? t->dtype : "?", shape, q);
}

static PyObject *runtime_io(RuntimeObject *o, int outputs) {
    if (!o->rt) return PyList_New(0);
    uint32_t n = outputs ? ctosa_runtime_output_count(o->rt) : ctosa_runtime_input_count(o->rt);
    PyObject *l = PyList_New(n);
    for (uint32_t i = 0; l && i < n; i++) {
        ctosa_runtime_tensor t;
        ctosa_error *e =
            outputs ? ctosa_runtime_output_info(o->rt, i, &t) : ctosa_runtime_input_info(o->rt, i, &t);
        PyObject *x = e ? cx_raise(e, NULL) : info_tuple(&t);
        if (!x) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, x);
    }
    return l;
}
static PyObject *runtime_inputs(RuntimeObject *o, void *c) { return runtime_io(o, 0); }
static PyObject *runtime_outputs(RuntimeObject *o, void *c) { return runtime_io(o, 1); }

static PyObject *runtime_steps(RuntimeObject *o, void *c) {
    uint32_t n = o->rt ? ctosa_runtime_step_count(o->rt) : 0;
    PyObject *l = PyList_New(n);
    for (uint32_t i = 0; l && i < n; i++) {
        const ctosa_runtime_step *s = ctosa_runtime_step_at(o->rt, i);
        PyObject *x =
            Py_BuildValue("(OssI)", s->partition ? Py_True : Py_False, s->name, s->op_type, s->tosa_ops);
        if (!x) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, x);
    }
    return l;
}

/* run([(name, dtype, shape, buffer)]) -> [(name, dtype, shape, bytearray)] */
static PyObject *runtime_run(RuntimeObject *o, PyObject *inputs) {
    if (!o->rt) return cx_raise_code(CTOSA_ERR_USAGE, "Runtime is not initialised");
    if (o->running) return cx_raise_code(CTOSA_ERR_USAGE, "this Model is running in another thread");
    PyObject *seq = PySequence_Fast(inputs, "inputs must be a sequence of (name, dtype, shape, buffer)");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    ctosa_error *e = NULL;
    for (Py_ssize_t i = 0; i < n && !e; i++) {
        const char *name, *dtype;
        PyObject *shp;
        Py_buffer view;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ssOy*", &name, &dtype, &shp, &view)) {
            Py_DECREF(seq);
            return NULL;
        }
        int64_t shape[CTOSA_TENSOR_FILE_MAX_RANK];
        Py_ssize_t rank = PySequence_Size(shp);
        for (Py_ssize_t d = 0; d < rank && d < CTOSA_TENSOR_FILE_MAX_RANK; d++) {
            PyObject *v = PySequence_GetItem(shp, d);
            shape[d] = v ? PyLong_AsLongLong(v) : -1;
            Py_XDECREF(v);
        }
        if (PyErr_Occurred() || rank < 0 || rank > CTOSA_TENSOR_FILE_MAX_RANK) {
            PyBuffer_Release(&view);
            Py_DECREF(seq);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "shape of too high a rank");
            return NULL;
        }
        e = ctosa_runtime_set_input(o->rt, name, dtype, (uint32_t)rank, shape, view.buf, (uint64_t)view.len);
        PyBuffer_Release(&view);
    }
    Py_DECREF(seq);
    if (e) return cx_raise(e, NULL);
    o->running = 1;
    Py_BEGIN_ALLOW_THREADS e = ctosa_runtime_run(o->rt);
    Py_END_ALLOW_THREADS o->running = 0;
    if (e) return cx_raise(e, NULL);
    uint32_t no = ctosa_runtime_output_count(o->rt);
    PyObject *l = PyList_New(no);
    for (uint32_t i = 0; l && i < no; i++) {
        ctosa_runtime_tensor info, v;
        ctosa_error *err = ctosa_runtime_output_info(o->rt, i, &info);
        if (!err) err = ctosa_runtime_get_output(o->rt, info.name, &v);
        if (err) {
            Py_DECREF(l);
            return cx_raise(err, NULL);
        }
        PyObject *data = PyByteArray_FromStringAndSize((const char *)v.data, (Py_ssize_t)v.size);
        PyObject *shape = data ? shape_tuple(v.rank, v.shape) : NULL;
        PyObject *x = shape ? Py_BuildValue("(NsNN)", cx_str_or_none(v.name), v.dtype, shape, data) : NULL;
        if (!x) {
            Py_XDECREF(data);
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, x);
    }
    return l;
}

static PyMethodDef runtime_methods[] = {
    {"run", (PyCFunction)runtime_run, METH_O,
     "run([(name, dtype, shape, buffer)]) -> [(name, dtype, shape, bytearray)]"},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef runtime_getset[] = {
    {"inputs", (getter)runtime_inputs, NULL, "[(name, dtype, shape, (scale, zero_point) or None)]", NULL},
    {"outputs", (getter)runtime_outputs, NULL, "[(name, dtype, shape, (scale, zero_point) or None)]", NULL},
    {"steps", (getter)runtime_steps, NULL, "[(is_partition, name, op_type, tosa_ops)] in execution order",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PyTypeObject Runtime_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctosa._ctosa.Runtime",
    .tp_basicsize = sizeof(RuntimeObject),
    .tp_dealloc = (destructor)runtime_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a loaded partitioned model (ctosa/runtime.h)",
    .tp_methods = runtime_methods,
    .tp_getset = runtime_getset,
    .tp_init = (initproc)runtime_init,
    .tp_new = PyType_GenericNew,
};

/* verify_compare(name, dtype, shape, buffer, quant, exp_kind, exp_itemsize, exp_type, exp_shape, exp_buffer,
 *                rtol, max_steps, step_fraction, top_k, min_topk) -> dict */
PyObject *cx_verify_compare(PyObject *self, PyObject *args) {
    const char *name, *dtype, *ekind, *etype;
    PyObject *shp, *eshp, *quant;
    Py_buffer a, x;
    unsigned int esize, topk;
    ctosa_verify_options vo;
    ctosa_verify_options_init(&vo);
    if (!PyArg_ParseTuple(args, "ssOy*OsIsOy*dddId", &name, &dtype, &shp, &a, &quant, &ekind, &esize, &etype,
                          &eshp, &x, &vo.rtol, &vo.max_steps, &vo.step_fraction, &topk, &vo.min_topk))
        return NULL;
    vo.top_k = topk;
    int64_t shape[CTOSA_TENSOR_FILE_MAX_RANK];
    ctosa_tensor_file ef;
    memset(&ef, 0, sizeof ef);
    Py_ssize_t rank = PySequence_Size(shp), erank = PySequence_Size(eshp);
    PyObject *res = NULL;
    if (rank < 0 || erank < 0 || rank > CTOSA_TENSOR_FILE_MAX_RANK || erank > CTOSA_TENSOR_FILE_MAX_RANK) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "shape of too high a rank");
        goto out;
    }
    uint64_t count = 1, ecount = 1;
    for (Py_ssize_t d = 0; d < rank; d++) {
        PyObject *v = PySequence_GetItem(shp, d);
        shape[d] = v ? PyLong_AsLongLong(v) : 0;
        Py_XDECREF(v);
        count *= (uint64_t)shape[d];
    }
    for (Py_ssize_t d = 0; d < erank; d++) {
        PyObject *v = PySequence_GetItem(eshp, d);
        ef.shape[d] = v ? PyLong_AsLongLong(v) : 0;
        Py_XDECREF(v);
        ecount *= (uint64_t)ef.shape[d];
    }
    if (PyErr_Occurred()) goto out;
    ctosa_runtime_tensor at = {.name = name,
                               .dtype = dtype,
                               .rank = (uint32_t)rank,
                               .shape = shape,
                               .count = count,
                               .data = a.buf,
                               .size = (uint64_t)a.len};
    if (quant != Py_None && !PyArg_ParseTuple(quant, "dL", &at.scale, &at.zero_point)) goto out;
    at.quantized = quant != Py_None;
    ef.kind = ekind[0];
    ef.itemsize = esize;
    ef.type_name = etype;
    ef.rank = (uint32_t)erank;
    ef.count = ecount;
    ef.data = x.buf;
    ef.size = (uint64_t)x.len;
    if (ef.size != ecount * esize || at.size < count) {
        PyErr_SetString(PyExc_ValueError, "buffer sizes do not match the shapes");
        goto out;
    }
    ctosa_verify_output r;
    ctosa_error *e = ctosa_verify_compare(&at, &ef, &vo, &r);
    if (e) {
        cx_raise(e, NULL);
        goto out;
    }
    res = Py_BuildValue("{s:s,s:s,s:K,s:d,s:d,s:d,s:i,s:i,s:I,s:O,s:s}", "name", name, "kind", r.kind,
                        "count", (unsigned long long)r.count, "max_abs", r.max_abs, "rel", r.rel, "within",
                        r.within, "top1", r.top1, "topk", r.topk, "rows", r.rows, "pass",
                        r.pass ? Py_True : Py_False, "why", r.why);
out:
    PyBuffer_Release(&a);
    PyBuffer_Release(&x);
    return res;
}

int cx_runtime_types_ready(PyObject *m) {
    if (PyType_Ready(&Runtime_Type) < 0) return -1;
    Py_INCREF(&Runtime_Type);
    if (PyModule_AddObject(m, "Runtime", (PyObject *)&Runtime_Type) < 0) {
        Py_DECREF(&Runtime_Type);
        return -1;
    }
    return 0;
}
