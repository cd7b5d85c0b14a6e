/* lower.c - ctosa_lower_file for Python (LowerResult) and custom-operator
 * registries (CustomOps). */
#include <string.h>

#include "ext.h"

/* ---------------------------------------------------------- CustomOps */

static void customops_dealloc(CustomOpsObject *c) {
    ctosa_custom_registry_free(c->reg);
    Py_XDECREF(c->keep);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static int customops_init(CustomOpsObject *c, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "", kwlist)) return -1;
    if (c->reg) return 0;
    ctosa_error *e = ctosa_custom_registry_create(&c->reg);
    if (e) {
        cx_raise(e, NULL);
        return -1;
    }
    return 0;
}

static PyObject *customops_load_plugin(CustomOpsObject *c, PyObject *arg) {
    PyObject *pathb;
    if (!PyUnicode_FSConverter(arg, &pathb)) return NULL;
    const char *path = PyBytes_AS_STRING(pathb);
    ctosa_error *e = ctosa_custom_registry_load_plugin(c->reg, path);
    PyObject *r = e ? cx_raise(e, path) : (Py_INCREF(Py_None), Py_None);
    Py_DECREF(pathb);
    return r;
}

static PyObject *customops_load_json(CustomOpsObject *c, PyObject *arg) {
    PyObject *pathb;
    if (!PyUnicode_FSConverter(arg, &pathb)) return NULL;
    const char *path = PyBytes_AS_STRING(pathb);
    ctosa_error *e = ctosa_custom_registry_load_json(c->reg, path);
    PyObject *r = e ? cx_raise(e, path) : (Py_INCREF(Py_None), Py_None);
    Py_DECREF(pathb);
    return r;
}

static PyObject *customops_load_json_text(CustomOpsObject *c, PyObject *args) {
    const char *text, *name = "<custom ops>";
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "s#|s", &text, &len, &name)) return NULL;
    ctosa_error *e = ctosa_custom_registry_load_json_text(c->reg, text, (size_t)len, name);
    if (e) return cx_raise(e, name);
    Py_RETURN_NONE;
}

static PyObject *customops_ops(CustomOpsObject *c, void *unused) {
    uint32_t n = ctosa_custom_registry_count(c->reg);
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        const ctosa_custom_op *op = ctosa_custom_registry_get(c->reg, i);
        PyObject *d = Py_BuildValue(
            "{s:N,s:N,s:N,s:N,s:O}", "onnx_domain", cx_str_or_none(op->onnx_domain), "onnx_op_type",
            cx_str_or_none(op->onnx_op_type), "tosa_domain", cx_str_or_none(op->tosa_domain), "tosa_operator",
            cx_str_or_none(op->tosa_operator), "has_kernel", op->kernel ? Py_True : Py_False);
        if (!d) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, d);
    }
    return l;
}

/* ------------------------------------------------- Python custom operators
 *
 * register(onnx_domain, onnx_op_type, infer, kernel=None, ...) registers an
 * operator whose callbacks are Python callables. The C trampolines below
 * take the GIL (lowering and running release it, and may call back from
 * worker threads), pass plain Python values, and turn a Python exception
 * into a ctosa_error carrying its text (the node then falls back with
 * code custom_op_rejected, or the run fails naming the operator). The
 * ctosa package wraps these raw interfaces with numpy (ctosa.CustomOps). */

static ctosa_error *error_from_python(const char *what) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *s = value ? PyObject_Str(value) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
    ctosa_error *e = ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "%s: %s: %s", what,
                                     type ? ((PyTypeObject *)type)->tp_name : "error", msg ? msg : "?");
    PyErr_Clear();
    Py_XDECREF(s);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return e;
}

static PyObject *onnx_attr_value(const ctosa_onnx_attr *a) {
    switch (a->type) {
    case CTOSA_ONNX_ATTR_FLOAT: return PyFloat_FromDouble(a->f);
    case CTOSA_ONNX_ATTR_INT: return PyLong_FromLongLong(a->i);
    case CTOSA_ONNX_ATTR_STRING: return PyBytes_FromStringAndSize((const char *)a->s.p, (Py_ssize_t)a->s.n);
    case CTOSA_ONNX_ATTR_FLOATS: {
        PyObject *l = PyList_New(a->count);
        for (uint32_t i = 0; l && i < a->count; i++) PyList_SET_ITEM(l, i, PyFloat_FromDouble(a->floats[i]));
        return l;
    }
    case CTOSA_ONNX_ATTR_INTS: {
        PyObject *l = PyList_New(a->count);
        for (uint32_t i = 0; l && i < a->count; i++) PyList_SET_ITEM(l, i, PyLong_FromLongLong(a->ints[i]));
        return l;
    }
    case CTOSA_ONNX_ATTR_STRINGS: {
        PyObject *l = PyList_New(a->count);
        for (uint32_t i = 0; l && i < a->count; i++)
            PyList_SET_ITEM(
                l, i, PyBytes_FromStringAndSize((const char *)a->strings[i].p, (Py_ssize_t)a->strings[i].n));
        return l;
    }
    default: Py_RETURN_NONE; /* tensors, graphs, type protos: not passed */
    }
}

static PyObject *shape_tuple(uint32_t rank, const int64_t *shape) {
    PyObject *t = PyTuple_New(rank);
    for (uint32_t d = 0; t && d < rank; d++) PyTuple_SET_ITEM(t, d, PyLong_FromLongLong(shape[d]));
    return t;
}

/* infer(node: dict, inputs: [(dtype, shape, present, value bytes|None)],
 *       n_outputs) -> [(dtype, shape)] */
static ctosa_error *py_infer_tramp(void *user, const ctosa_custom_node *node,
                                   const ctosa_custom_tensor *inputs, uint32_t n_inputs,
                                   ctosa_custom_tensor *outputs, uint32_t n_outputs) {
    PyGILState_STATE st = PyGILState_Ensure();
    ctosa_error *e = NULL;
    PyObject *attrs = PyDict_New(), *ins = PyList_New(n_inputs), *nd = NULL, *res = NULL, *seq = NULL;
    if (!attrs || !ins) goto py_fail;
    for (uint32_t i = 0; i < node->n_attrs; i++) {
        PyObject *v = onnx_attr_value(&node->attrs[i]);
        if (!v || PyDict_SetItemString(attrs, node->attrs[i].name, v) < 0) {
            Py_XDECREF(v);
            goto py_fail;
        }
        Py_DECREF(v);
    }
    for (uint32_t i = 0; i < n_inputs; i++) {
        const ctosa_custom_tensor *t = &inputs[i];
        PyObject *val = t->data ? PyBytes_FromStringAndSize(t->data, (Py_ssize_t)t->nbytes)
                                : (Py_INCREF(Py_None), Py_None);
        PyObject *it =
            val ? Py_BuildValue("(sNON)",
                                ctosa_dtype_short(t->dtype) ? ctosa_dtype_short(t->dtype) : "unknown",
                                shape_tuple(t->rank, t->shape), t->present ? Py_True : Py_False, val)
                : NULL;
        if (!it) goto py_fail;
        PyList_SET_ITEM(ins, i, it);
    }
    nd = Py_BuildValue("{s:N,s:N,s:N,s:L,s:O}", "name", cx_str_or_none(node->name), "domain",
                       cx_str_or_none(node->domain), "op_type", cx_str_or_none(node->op_type), "opset",
                       (long long)node->opset, "attrs", attrs);
    if (!nd) goto py_fail;
    res = PyObject_CallFunction(PyTuple_GET_ITEM((PyObject *)user, 0), "OOI", nd, ins, n_outputs);
    if (!res) goto py_fail;
    seq = PySequence_Fast(res, "infer must return a sequence of (dtype, shape)");
    if (!seq) goto py_fail;
    if ((uint32_t)PySequence_Fast_GET_SIZE(seq) != n_outputs) {
        e = ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "infer returned %zd outputs, the node has %u",
                            PySequence_Fast_GET_SIZE(seq), n_outputs);
        goto done;
    }
    for (uint32_t i = 0; i < n_outputs; i++) {
        PyObject *dt, *shp;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "OO", &dt, &shp)) goto py_fail;
        ctosa_dtype d;
        if (cx_dtype_from_obj(dt, &d) < 0) goto py_fail;
        PyObject *ss = PySequence_Fast(shp, "shape must be a sequence of ints");
        if (!ss) goto py_fail;
        Py_ssize_t r = PySequence_Fast_GET_SIZE(ss);
        if (r > CTOSA_CUSTOM_MAX_RANK) {
            Py_DECREF(ss);
            e = ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "infer: output %u has rank %zd (at most %d)", i, r,
                                CTOSA_CUSTOM_MAX_RANK);
            goto done;
        }
        outputs[i].dtype = d;
        outputs[i].rank = (uint32_t)r;
        for (Py_ssize_t k = 0; k < r; k++)
            outputs[i].shape[k] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(ss, k));
        Py_DECREF(ss);
        if (PyErr_Occurred()) goto py_fail;
    }
    goto done;
py_fail:
    e = error_from_python("infer");
done:
    Py_XDECREF(attrs);
    Py_XDECREF(ins);
    Py_XDECREF(nd);
    Py_XDECREF(res);
    Py_XDECREF(seq);
    PyGILState_Release(st);
    return e;
}

/* kernel(inputs: [(dtype, shape, bytes)], outputs: [(dtype, shape, nbytes)],
 *        attrs: bytes) -> [buffer of exactly nbytes, host encoding] */
static ctosa_error *py_kernel_tramp(void *user, const ctosa_interp_tensor *inputs, uint32_t n_inputs,
                                    ctosa_interp_tensor *outputs, uint32_t n_outputs, const uint8_t *iattrs,
                                    uint32_t iattrs_len) {
    PyGILState_STATE st = PyGILState_Ensure();
    ctosa_error *e = NULL;
    PyObject *ins = PyList_New(n_inputs), *outs = PyList_New(n_outputs), *res = NULL, *seq = NULL;
    if (!ins || !outs) goto py_fail;
    for (uint32_t i = 0; i < n_inputs; i++) {
        PyObject *it = Py_BuildValue("(sNN)", ctosa_dtype_short(inputs[i].dtype),
                                     shape_tuple(inputs[i].rank, inputs[i].shape),
                                     PyBytes_FromStringAndSize(inputs[i].data, (Py_ssize_t)inputs[i].size));
        if (!it) goto py_fail;
        PyList_SET_ITEM(ins, i, it);
    }
    for (uint32_t i = 0; i < n_outputs; i++) {
        PyObject *it = Py_BuildValue("(sNK)", ctosa_dtype_short(outputs[i].dtype),
                                     shape_tuple(outputs[i].rank, outputs[i].shape),
                                     (unsigned long long)outputs[i].size);
        if (!it) goto py_fail;
        PyList_SET_ITEM(outs, i, it);
    }
    res = PyObject_CallFunction(PyTuple_GET_ITEM((PyObject *)user, 1), "OOy#", ins, outs,
                                (const char *)iattrs, (Py_ssize_t)iattrs_len);
    if (!res) goto py_fail;
    seq = PySequence_Fast(res, "kernel must return a sequence of arrays");
    if (!seq) goto py_fail;
    if ((uint32_t)PySequence_Fast_GET_SIZE(seq) != n_outputs) {
        e = ctosa_error_new(CTOSA_ERR_INVALID, "kernel returned %zd outputs, expected %u",
                            PySequence_Fast_GET_SIZE(seq), n_outputs);
        goto done;
    }
    for (uint32_t i = 0; i < n_outputs; i++) {
        Py_buffer v;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, i), &v, PyBUF_C_CONTIGUOUS) < 0) goto py_fail;
        if ((uint64_t)v.len != outputs[i].size) {
            e = ctosa_error_new(CTOSA_ERR_INVALID, "kernel output %u has %zd bytes, expected %llu", i, v.len,
                                (unsigned long long)outputs[i].size);
            PyBuffer_Release(&v);
            goto done;
        }
        memcpy(outputs[i].data, v.buf, (size_t)v.len);
        PyBuffer_Release(&v);
    }
    goto done;
py_fail:
    e = error_from_python("kernel");
done:
    Py_XDECREF(ins);
    Py_XDECREF(outs);
    Py_XDECREF(res);
    Py_XDECREF(seq);
    PyGILState_Release(st);
    return e;
}

static PyObject *customops_register(CustomOpsObject *c, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"onnx_domain",   "onnx_op_type", "infer",       "kernel", "tosa_domain",
                             "tosa_operator", "since_opset",  "until_opset", NULL};
    const char *dom, *opt, *tdom = NULL, *top = NULL;
    PyObject *infer, *kernel = Py_None;
    long long since = 0, until = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ssO|OzzLL", kwlist, &dom, &opt, &infer, &kernel, &tdom, &top,
                                     &since, &until))
        return NULL;
    if (!PyCallable_Check(infer) || (kernel != Py_None && !PyCallable_Check(kernel))) {
        PyErr_SetString(PyExc_TypeError, "infer and kernel must be callables");
        return NULL;
    }
    PyObject *user = PyTuple_Pack(2, infer, kernel);
    if (!user) return NULL;
    if (!c->keep && !(c->keep = PyList_New(0))) {
        Py_DECREF(user);
        return NULL;
    }
    if (PyList_Append(c->keep, user) < 0) { /* lives as long as the registry */
        Py_DECREF(user);
        return NULL;
    }
    Py_DECREF(user);
    ctosa_custom_op op;
    memset(&op, 0, sizeof op);
    op.onnx_domain = dom;
    op.onnx_op_type = opt;
    op.since_opset = since;
    op.until_opset = until;
    op.tosa_domain = tdom;
    op.tosa_operator = top;
    op.infer = py_infer_tramp;
    op.kernel = kernel != Py_None ? py_kernel_tramp : NULL;
    op.user = user;
    ctosa_error *e = ctosa_custom_register(c->reg, &op);
    if (e) return cx_raise(e, NULL);
    Py_RETURN_NONE;
}

static PyMethodDef customops_methods[] = {
    {"load_plugin", (PyCFunction)customops_load_plugin, METH_O, "load_plugin(path): dlopen a plugin"},
    {"load_json", (PyCFunction)customops_load_json, METH_O, "load_json(path): a --custom-ops file"},
    {"register", (PyCFunction)(void (*)(void))customops_register, METH_VARARGS | METH_KEYWORDS,
     "register(onnx_domain, onnx_op_type, infer, kernel=None, tosa_domain=None, tosa_operator=None, "
     "since_opset=0, until_opset=0): an operator with Python callbacks (raw interface; see "
     "ctosa.CustomOps.add)"},
    {"load_json_text", (PyCFunction)customops_load_json_text, METH_VARARGS,
     "load_json_text(text, name='<custom ops>')"},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef customops_getset[] = {
    {"ops", (getter)customops_ops, NULL, "list of registrations (dicts)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
PyTypeObject cx_CustomOps_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctosa._ctosa.CustomOps",
    .tp_basicsize = sizeof(CustomOpsObject),
    .tp_dealloc = (destructor)customops_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A custom-operator registry (plugins, --custom-ops JSON).",
    .tp_methods = customops_methods,
    .tp_getset = customops_getset,
    .tp_init = (initproc)customops_init,
    .tp_new = PyType_GenericNew,
};

/* -------------------------------------------------------- LowerResult */

typedef struct LowerResultObject {
    PyObject_HEAD ctosa_lower_result *r;
    PyObject *custom_ops; /* kept alive: the result borrows the registry */
} LowerResultObject;

static void lowerresult_dealloc(LowerResultObject *lr) {
    /* partition graphs hold references to lr, so by now they are gone */
    ctosa_lower_result_free(lr->r);
    Py_CLEAR(lr->custom_ops);
    PyObject_Free(lr);
}

static PyObject *io_list(const ctosa_lower_io *v, uint32_t n) {
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        PyObject *shape = PyTuple_New(v[i].rank);
        if (!shape) {
            Py_DECREF(l);
            return NULL;
        }
        for (uint32_t d = 0; d < v[i].rank; d++)
            PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(v[i].shape[d]));
        PyObject *d;
        if (v[i].quantized)
            d = Py_BuildValue("{s:N,s:N,s:N,s:d,s:L}", "name", cx_str_or_none(v[i].name), "dtype",
                              cx_str_or_none(v[i].dtype), "shape", shape, "scale", v[i].scale, "zero_point",
                              (long long)v[i].zero_point);
        else
            d = Py_BuildValue("{s:N,s:N,s:N,s:O,s:O}", "name", cx_str_or_none(v[i].name), "dtype",
                              cx_str_or_none(v[i].dtype), "shape", shape, "scale", Py_None, "zero_point",
                              Py_None);
        if (!d) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, d);
    }
    return l;
}

/* summary() -> dict with plain Python values; partitions carry their
 * TosaGraph (read-only views of the result's graphs). */
static PyObject *lowerresult_summary(LowerResultObject *lr, PyObject *unused) {
    const ctosa_lower_summary *s = ctosa_lower_result_summary(lr->r);
    PyObject *parts = PyList_New(s->n_partitions), *fb = NULL, *cu = NULL;
    if (!parts) return NULL;
    for (uint32_t i = 0; i < s->n_partitions; i++) {
        const ctosa_lower_partition *p = &s->partitions[i];
        PyObject *counts = PyDict_New();
        if (!counts) goto fail;
        for (uint32_t k = 0; k < p->n_op_counts; k++) {
            PyObject *c = PyLong_FromUnsignedLong(p->op_counts[k]);
            if (!c || PyDict_SetItemString(counts, p->op_names[k], c) < 0) {
                Py_XDECREF(c);
                Py_DECREF(counts);
                goto fail;
            }
            Py_DECREF(c);
        }
        /* a new read-only view per call (no cache: a cached list would be a
         * reference cycle result -> graph -> result); ctosa.LowerResult
         * calls summary() once. */
        PyObject *g = cx_graph_wrap((ctosa_graph *)p->graph, (PyObject *)lr, 1);
        if (!g) {
            Py_DECREF(counts);
            goto fail;
        }
        PyObject *d = Py_BuildValue("{s:I,s:N,s:N,s:N,s:N,s:N,s:N}", "id", p->id, "file",
                                    cx_str_or_none(p->file), "nodes", cx_str_tuple(p->nodes, p->n_nodes),
                                    "inputs", io_list(p->inputs, p->n_inputs), "outputs",
                                    io_list(p->outputs, p->n_outputs), "op_counts", counts, "graph", g);
        if (!d) goto fail;
        PyList_SET_ITEM(parts, i, d);
    }
    fb = PyList_New(s->n_fallback);
    if (!fb) goto fail;
    for (uint32_t i = 0; i < s->n_fallback; i++) {
        const ctosa_lower_fallback *f = &s->fallback[i];
        PyObject *d = Py_BuildValue("{s:N,s:N,s:N,s:N,s:N,s:N}", "node", cx_str_or_none(f->node), "op_type",
                                    cx_str_or_none(f->op_type), "domain", cx_str_or_none(f->domain), "code",
                                    cx_str_or_none(f->code), "reason", cx_str_or_none(f->reason), "input",
                                    cx_str_or_none(f->input));
        if (!d) goto fail;
        PyList_SET_ITEM(fb, i, d);
    }
    cu = PyList_New(s->n_custom);
    if (!cu) goto fail;
    for (uint32_t i = 0; i < s->n_custom; i++) {
        const ctosa_lower_custom *c = &s->custom[i];
        PyObject *d = Py_BuildValue(
            "{s:N,s:N,s:N,s:N,s:N,s:I,s:O}", "node", cx_str_or_none(c->node), "op_type",
            cx_str_or_none(c->op_type), "domain", cx_str_or_none(c->domain), "domain_name",
            cx_str_or_none(c->domain_name), "operator_name", cx_str_or_none(c->operator_name), "partition",
            c->partition, "overrides_builtin", c->overrides_builtin ? Py_True : Py_False);
        if (!d) goto fail;
        PyList_SET_ITEM(cu, i, d);
    }
    return Py_BuildValue("{s:N,s:N,s:I,s:I,s:N,s:N,s:N,s:N}", "model", cx_str_or_none(s->model), "spec",
                         cx_str_or_none(s->spec), "nodes_total", s->nodes_total, "nodes_delegated",
                         s->nodes_delegated, "partitions", parts, "fallback", fb, "custom_ops", cu,
                         "report_json", cx_str_or_none(s->report_json));
fail:
    Py_XDECREF(parts);
    Py_XDECREF(fb);
    Py_XDECREF(cu);
    return NULL;
}

static PyMethodDef lowerresult_methods[] = {
    {"summary", (PyCFunction)lowerresult_summary, METH_NOARGS, "summary() -> dict"},
    {NULL, NULL, 0, NULL},
};
static PyTypeObject LowerResult_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctosa._ctosa.LowerResult",
    .tp_basicsize = sizeof(LowerResultObject),
    .tp_dealloc = (destructor)lowerresult_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = lowerresult_methods,
    .tp_doc = "Result of ctosa_lower_file (use ctosa.lower()).",
};

/* lower(path, spec, binds=[(name, file)], shapes=[(name, dims)],
 *       custom_ops=None, output_dir=None, stem=None,
 *       partitioned_onnx=True, report=True, max_problems=0, max_memory=0,
 *       requant_ort=False, data=None)
 * With data (a bytes-like object holding the model; output_dir None) the
 * model is lowered from memory and path only names it in messages. */
PyObject *cx_lower(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path",       "spec",
                             "binds",      "shapes",
                             "custom_ops", "output_dir",
                             "stem",       "partitioned_onnx",
                             "report",     "max_problems",
                             "max_memory", "requant_ort",
                             "data",       NULL};
    PyObject *pathb = NULL, *sobj, *binds = Py_None, *shapes = Py_None, *reg_obj = Py_None, *outb = NULL,
             *outobj = Py_None;
    const char *stem = NULL;
    int part_onnx = 1, report = 1;
    unsigned int maxp = 0;
    unsigned long long maxmem = 0;
    int requant_ort = 0;
    Py_buffer data = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O|OOOOzppIKpz*", kwlist, PyUnicode_FSConverter, &pathb,
                                     &sobj, &binds, &shapes, &reg_obj, &outobj, &stem, &part_onnx, &report,
                                     &maxp, &maxmem, &requant_ort, &data))
        return NULL;
    PyObject *res = NULL, *bseq = NULL, *sseq = NULL;
    ctosa_lower_bind *bv = NULL;
    ctosa_lower_shape *sv = NULL;
    int64_t *dims = NULL;
    ctosa_spec spec;
    if (outobj != Py_None && !PyUnicode_FSConverter(outobj, &outb)) goto done;
    if (cx_spec_from_obj(sobj, &spec) < 0) goto done;
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    if (reg_obj != Py_None) {
        if (!PyObject_TypeCheck(reg_obj, &cx_CustomOps_Type)) {
            PyErr_SetString(PyExc_TypeError, "custom_ops must be a ctosa.CustomOps");
            goto done;
        }
        opt.custom_ops = ((CustomOpsObject *)reg_obj)->reg;
    }
    if (binds != Py_None) {
        if (!(bseq = PySequence_Fast(binds, "binds must be a sequence of (name, file)"))) goto done;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(bseq);
        if (!(bv = PyMem_Calloc((size_t)n + 1, sizeof *bv))) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(bseq, i), "ss", &bv[i].name, &bv[i].file))
                goto done;
        opt.n_binds = (uint32_t)n;
        opt.binds = bv;
    }
    if (shapes != Py_None) {
        if (!(sseq = PySequence_Fast(shapes, "shapes must be a sequence of (name, dims)"))) goto done;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(sseq);
        if (!(sv = PyMem_Calloc((size_t)n + 1, sizeof *sv)) ||
            !(dims = PyMem_Calloc((size_t)n * 16 + 1, sizeof *dims))) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *dobj;
            if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(sseq, i), "sO", &sv[i].name, &dobj)) goto done;
            PyObject *ds = PySequence_Fast(dobj, "dims must be a sequence of ints");
            if (!ds) goto done;
            Py_ssize_t r = PySequence_Fast_GET_SIZE(ds);
            if (r > 16) {
                Py_DECREF(ds);
                cx_raise_code(CTOSA_ERR_USAGE, "shape of '%s': rank %zd is over 16", sv[i].name, r);
                goto done;
            }
            for (Py_ssize_t d = 0; d < r; d++) {
                dims[i * 16 + d] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(ds, d));
                if (dims[i * 16 + d] == -1 && PyErr_Occurred()) {
                    Py_DECREF(ds);
                    goto done;
                }
            }
            Py_DECREF(ds);
            sv[i].rank = (uint32_t)r;
            sv[i].dims = &dims[i * 16];
        }
        opt.n_shapes = (uint32_t)n;
        opt.shapes = sv;
    }
    opt.output_dir = outb ? PyBytes_AS_STRING(outb) : NULL;
    opt.stem = stem;
    opt.no_partitioned_onnx = !part_onnx;
    opt.no_report = !report;
    opt.max_problems = maxp;
    opt.max_memory = maxmem;
    opt.requant = requant_ort ? CTOSA_REQUANT_MATCH_ORT : CTOSA_REQUANT_RESCALE;
    const char *path = PyBytes_AS_STRING(pathb);
    ctosa_lower_result *r = NULL;
    ctosa_error *e;
    /* The registry's callbacks are C (plugins, JSON rules): no Python runs
     * during lowering, so the GIL can go. */
    if (data.buf) {
        Py_BEGIN_ALLOW_THREADS e = ctosa_lower_memory(data.buf, (uint64_t)data.len, path, &spec, &opt, &r);
        Py_END_ALLOW_THREADS
    } else {
        Py_BEGIN_ALLOW_THREADS e = ctosa_lower_file(path, &spec, &opt, &r);
        Py_END_ALLOW_THREADS
    }
    if (e) {
        cx_raise(e, path);
        goto done;
    }
    LowerResultObject *lr = PyObject_New(LowerResultObject, &LowerResult_Type);
    if (!lr) {
        ctosa_lower_result_free(r);
        goto done;
    }
    lr->r = r;
    lr->custom_ops = reg_obj != Py_None ? (Py_INCREF(reg_obj), reg_obj) : NULL;
    res = (PyObject *)lr;
done:
    Py_XDECREF(bseq);
    Py_XDECREF(sseq);
    PyMem_Free(bv);
    PyMem_Free(sv);
    PyMem_Free(dims);
    Py_XDECREF(pathb);
    Py_XDECREF(outb);
    if (data.obj) PyBuffer_Release(&data);
    return res;
}

int cx_lower_types_ready(PyObject *m) {
    if (PyType_Ready(&cx_CustomOps_Type) < 0 || PyType_Ready(&LowerResult_Type) < 0) return -1;
    Py_INCREF(&cx_CustomOps_Type);
    if (PyModule_AddObject(m, "CustomOps", (PyObject *)&cx_CustomOps_Type) < 0) {
        Py_DECREF(&cx_CustomOps_Type);
        return -1;
    }
    return 0;
}
