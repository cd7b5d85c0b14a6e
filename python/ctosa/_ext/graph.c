/* graph.c - TosaGraph and its views (Region, Block, Tensor, Operator),
 * the builder, serialization, reading, and zero-copy data views.
 *
 * Ownership: a TosaGraph owns its ctosa_graph (or, for partitions of a
 * lowering result, keeps the result alive). Region/Block/Tensor/Operator
 * objects are views holding a strong reference to their TosaGraph, so the
 * C pointers they carry stay valid. Constant data borrowed from Python
 * buffers (numpy arrays) is pinned with PyObject_GetBuffer until the graph
 * is freed; constant data of read graphs is exposed through DataView
 * objects (buffer exporters referencing the graph), so numpy arrays over
 * the file mapping keep the mapping alive. */
#include <string.h>

#include "ext.h"

/* ------------------------------------------------------------- graph */

static PyObject *graph_alloc(PyTypeObject *type) {
    GraphObject *go = (GraphObject *)type->tp_alloc(type, 0);
    if (!go) return NULL;
    go->lock = PyThread_allocate_lock();
    if (!go->lock) {
        Py_DECREF(go);
        PyErr_NoMemory();
        return NULL;
    }
    return (PyObject *)go;
}

PyObject *cx_graph_wrap(ctosa_graph *g, PyObject *owner, int readonly) {
    GraphObject *go = (GraphObject *)graph_alloc(&cx_Graph_Type);
    if (!go) {
        if (!owner) ctosa_graph_free(g);
        return NULL;
    }
    go->g = g;
    go->owner = owner;
    Py_XINCREF(owner);
    go->readonly = readonly;
    return (PyObject *)go;
}

int cx_graph_check(PyObject *o, GraphObject **out) {
    if (!PyObject_TypeCheck(o, &cx_Graph_Type) || !((GraphObject *)o)->g) {
        PyErr_Format(PyExc_TypeError, "expected a ctosa.TosaGraph, not %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = (GraphObject *)o;
    return 0;
}

PyThreadState *cx_graph_begin(GraphObject *go) {
    go->busy++;
    PyThreadState *ts = PyEval_SaveThread();
    PyThread_acquire_lock(go->lock, WAIT_LOCK);
    return ts;
}

void cx_graph_end(GraphObject *go, PyThreadState *ts) {
    PyThread_release_lock(go->lock);
    PyEval_RestoreThread(ts);
    go->busy--;
}

int cx_graph_keep_buffer(GraphObject *go, Py_buffer *view) {
    if (go->n_bufs == go->cap_bufs) {
        Py_ssize_t cap = go->cap_bufs ? go->cap_bufs * 2 : 8;
        Py_buffer *nb = PyMem_Realloc(go->bufs, (size_t)cap * sizeof *nb);
        if (!nb) {
            PyBuffer_Release(view);
            PyErr_NoMemory();
            return -1;
        }
        go->bufs = nb;
        go->cap_bufs = cap;
    }
    go->bufs[go->n_bufs++] = *view;
    return 0;
}

static void graph_dealloc(GraphObject *go) {
    if (go->weakrefs) PyObject_ClearWeakRefs((PyObject *)go);
    if (!go->owner) ctosa_graph_free(go->g);
    go->g = NULL;
    Py_CLEAR(go->owner);
    for (Py_ssize_t i = 0; i < go->n_bufs; i++) PyBuffer_Release(&go->bufs[i]);
    PyMem_Free(go->bufs);
    if (go->lock) PyThread_free_lock(go->lock);
    Py_TYPE(go)->tp_free((PyObject *)go);
}

static int graph_init(GraphObject *go, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"version", NULL};
    PyObject *vobj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &vobj)) return -1;
    if (go->g) {
        PyErr_SetString(PyExc_TypeError, "TosaGraph is already initialised");
        return -1;
    }
    ctosa_version v;
    if (cx_version_from_obj(vobj, &v) < 0) return -1;
    ctosa_error *e = ctosa_graph_create(v, &go->g);
    if (e) {
        cx_raise(e, NULL);
        return -1;
    }
    return 0;
}

static int writable(GraphObject *go) {
    if (!go->g) {
        PyErr_SetString(PyExc_ValueError, "TosaGraph is not initialised");
        return -1;
    }
    if (go->readonly) {
        cx_raise_code(CTOSA_ERR_USAGE, "this graph belongs to a lowering result and is read-only");
        return -1;
    }
    if (go->busy) {
        cx_raise_code(CTOSA_ERR_USAGE, "the graph is being serialized, checked or run in another thread; "
                                       "build it before sharing it");
        return -1;
    }
    return 0;
}

/* View objects: a C pointer plus the graph that owns it. */
typedef struct ViewObject {
    PyObject_HEAD GraphObject *graph;
    void *ptr;
} ViewObject;

static PyObject *view_new(PyTypeObject *type, GraphObject *go, void *ptr) {
    ViewObject *v = PyObject_New(ViewObject, type);
    if (!v) return NULL;
    Py_INCREF(go);
    v->graph = go;
    v->ptr = ptr;
    return (PyObject *)v;
}

static void view_dealloc(ViewObject *v) {
    Py_XDECREF(v->graph);
    PyObject_Free(v);
}

static PyObject *view_graph(ViewObject *v, void *c) {
    Py_INCREF(v->graph);
    return (PyObject *)v->graph;
}

static PyObject *view_richcompare(PyObject *a, PyObject *b, int op) {
    if (Py_TYPE(a) != Py_TYPE(b) || (op != Py_EQ && op != Py_NE)) Py_RETURN_NOTIMPLEMENTED;
    int eq = ((ViewObject *)a)->ptr == ((ViewObject *)b)->ptr;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t view_hash(ViewObject *v) { return _Py_HashPointer(v->ptr); }

#define VIEW_TYPE_COMMON                                                        \
    .tp_basicsize = sizeof(ViewObject), .tp_dealloc = (destructor)view_dealloc, \
    .tp_flags = Py_TPFLAGS_DEFAULT, .tp_richcompare = view_richcompare, .tp_hash = (hashfunc)view_hash

static PyObject *graph_regions(GraphObject *go, void *c) {
    if (!go->g) return PyList_New(0);
    uint32_t n = ctosa_graph_region_count(go->g);
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        PyObject *r = view_new(&cx_Region_Type, go, ctosa_graph_region(go->g, i));
        if (!r) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, r);
    }
    return l;
}

static PyObject *graph_version(GraphObject *go, void *c) {
    if (!go->g) Py_RETURN_NONE;
    return cx_version_to_obj(ctosa_graph_version(go->g));
}

static PyObject *graph_file_info(GraphObject *go, void *c) {
    if (!go->g) Py_RETURN_NONE;
    ctosa_file_info fi = ctosa_graph_file_info(go->g);
    return Py_BuildValue(
        "{s:O,s:K,s:K,s:O,s:O,s:I,s:K}", "from_file", fi.from_file ? Py_True : Py_False, "file_size",
        (unsigned long long)fi.file_size, "flatbuffer_size", (unsigned long long)fi.flatbuffer_size,
        "external_data", fi.external_data ? Py_True : Py_False, "has_identifier",
        fi.has_identifier ? Py_True : Py_False, "min_data_alignment", (unsigned)fi.min_data_alignment,
        "constant_bytes", (unsigned long long)fi.constant_bytes);
}

static PyObject *graph_add_region(GraphObject *go, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name) || writable(go) < 0) return NULL;
    ctosa_region *r;
    ctosa_error *e = ctosa_graph_add_region(go->g, name, &r);
    if (e) return cx_raise(e, NULL);
    return view_new(&cx_Region_Type, go, r);
}

static PyObject *graph_region(GraphObject *go, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    ctosa_region *r = go->g ? ctosa_graph_find_region(go->g, name) : NULL;
    if (!r) return PyErr_Format(PyExc_KeyError, "no region '%s'", name);
    return view_new(&cx_Region_Type, go, r);
}

/* called(name, caller=None): the block a COND_IF / WHILE_LOOP attribute
 * names, in either form (ctosa_graph_find_called). */
static PyObject *graph_called(GraphObject *go, PyObject *args) {
    const char *name;
    PyObject *caller = Py_None;
    if (!PyArg_ParseTuple(args, "s|O", &name, &caller)) return NULL;
    if (caller != Py_None && !PyObject_TypeCheck(caller, &cx_Region_Type))
        return PyErr_Format(PyExc_TypeError, "caller must be a Region or None");
    const ctosa_region *from = caller == Py_None ? NULL : ((ViewObject *)caller)->ptr;
    const ctosa_block *b = go->g ? ctosa_graph_find_called(go->g, from, name, NULL) : NULL;
    if (!b) return PyErr_Format(PyExc_KeyError, "no region or block '%s'", name);
    return view_new(&cx_Block_Type, go, (void *)b);
}

static int parse_layout(const char *s, ctosa_layout *out) {
    if (!s || !strcmp(s, "auto")) *out = CTOSA_LAYOUT_AUTO;
    else if (!strcmp(s, "inline")) *out = CTOSA_LAYOUT_INLINE;
    else if (!strcmp(s, "external")) *out = CTOSA_LAYOUT_EXTERNAL;
    else {
        cx_raise_code(CTOSA_ERR_USAGE, "layout must be \"auto\", \"inline\" or \"external\", not '%s'", s);
        return -1;
    }
    return 0;
}

/* Bytes object that owns a malloc'd buffer without copying it. */
typedef struct {
    PyObject_HEAD void *buf;
    size_t size;
} MallocBufObject;
static void mallocbuf_dealloc(MallocBufObject *m) {
    free(m->buf);
    PyObject_Free(m);
}
static int mallocbuf_getbuffer(MallocBufObject *m, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)m, m->buf, (Py_ssize_t)m->size, 1, flags);
}
static PyBufferProcs mallocbuf_as_buffer = {(getbufferproc)mallocbuf_getbuffer, NULL};
static PyTypeObject MallocBuf_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctosa._ctosa.SerializedBuffer",
    .tp_basicsize = sizeof(MallocBufObject),
    .tp_dealloc = (destructor)mallocbuf_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_as_buffer = &mallocbuf_as_buffer,
    .tp_doc = "A serialized graph held in C memory (buffer protocol, read-only).",
};

/* serialize(layout="auto", alignment=0, copy=True): bytes, or with
 * copy=False a read-only buffer object over the writer's memory (saves
 * one copy of large graphs). */
static PyObject *graph_serialize(GraphObject *go, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"layout", "alignment", "copy", NULL};
    const char *layout = NULL;
    unsigned int align = 0;
    int copy = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|zIp", kwlist, &layout, &align, &copy)) return NULL;
    GraphObject *g2;
    if (cx_graph_check((PyObject *)go, &g2) < 0) return NULL;
    ctosa_write_options opt;
    ctosa_write_options_init(&opt);
    if (parse_layout(layout, &opt.layout) < 0) return NULL;
    opt.data_alignment = align;
    void *buf = NULL;
    size_t size = 0;
    PyThreadState *ts = cx_graph_begin(go);
    ctosa_error *e = ctosa_write_memory(go->g, &opt, &buf, &size);
    cx_graph_end(go, ts);
    if (e) return cx_raise(e, NULL);
    if (copy) {
        /* one copy into the bytes object, without the GIL (it is large) */
        PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
        if (b) {
            char *dst = PyBytes_AS_STRING(b);
            Py_BEGIN_ALLOW_THREADS memcpy(dst, buf, size);
            Py_END_ALLOW_THREADS
        }
        free(buf);
        return b;
    }
    MallocBufObject *m = PyObject_New(MallocBufObject, &MallocBuf_Type);
    if (!m) {
        free(buf);
        return NULL;
    }
    m->buf = buf;
    m->size = size;
    PyObject *mv = PyMemoryView_FromObject((PyObject *)m);
    Py_DECREF(m);
    return mv;
}

static PyObject *graph_write(GraphObject *go, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", "layout", "alignment", NULL};
    PyObject *pathb = NULL;
    const char *layout = NULL;
    unsigned int align = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|zI", kwlist, PyUnicode_FSConverter, &pathb, &layout,
                                     &align))
        return NULL;
    GraphObject *g2;
    ctosa_write_options opt;
    ctosa_write_options_init(&opt);
    if (cx_graph_check((PyObject *)go, &g2) < 0 || parse_layout(layout, &opt.layout) < 0) {
        Py_DECREF(pathb);
        return NULL;
    }
    opt.data_alignment = align;
    const char *path = PyBytes_AS_STRING(pathb);
    PyThreadState *ts = cx_graph_begin(go);
    ctosa_error *e = ctosa_write_file(go->g, path, &opt);
    cx_graph_end(go, ts);
    PyObject *r = e ? cx_raise(e, path) : (Py_INCREF(Py_None), Py_None);
    Py_DECREF(pathb);
    return r;
}

/* to_mlir(source_name=None) -> str: the graph as upstream MLIR tosa text. */
static PyObject *graph_to_mlir(GraphObject *go, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"source_name", NULL};
    const char *src = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|z", kwlist, &src)) return NULL;
    GraphObject *g2;
    if (cx_graph_check((PyObject *)go, &g2) < 0) return NULL;
    ctosa_mlir_options opt;
    ctosa_mlir_options_init(&opt);
    opt.source_name = src;
    char *text = NULL;
    size_t len = 0;
    PyThreadState *ts = cx_graph_begin(go);
    ctosa_error *e = ctosa_mlir_write_memory(go->g, &opt, &text, &len);
    cx_graph_end(go, ts);
    if (e) return cx_raise(e, NULL);
    PyObject *r = PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "strict");
    free(text);
    return r;
}

/* write_mlir(path, source_name=None): the same into a file, streamed and
 * atomically. */
static PyObject *graph_write_mlir(GraphObject *go, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", "source_name", NULL};
    PyObject *pathb = NULL;
    const char *src = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|z", kwlist, PyUnicode_FSConverter, &pathb, &src))
        return NULL;
    GraphObject *g2;
    if (cx_graph_check((PyObject *)go, &g2) < 0) {
        Py_DECREF(pathb);
        return NULL;
    }
    ctosa_mlir_options opt;
    ctosa_mlir_options_init(&opt);
    opt.source_name = src;
    const char *path = PyBytes_AS_STRING(pathb);
    PyThreadState *ts = cx_graph_begin(go);
    ctosa_error *e = ctosa_mlir_write_file(go->g, path, &opt);
    cx_graph_end(go, ts);
    PyObject *r = e ? cx_raise(e, path) : (Py_INCREF(Py_None), Py_None);
    Py_DECREF(pathb);
    return r;
}

static PyObject *graph_set_software_version(GraphObject *go, PyObject *args) {
    int ma, mi, mc;
    const char *mod = NULL;
    if (!PyArg_ParseTuple(args, "iii|z", &ma, &mi, &mc, &mod) || writable(go) < 0) return NULL;
    ctosa_error *e = ctosa_graph_set_software_version(go->g, ma, mi, mc, mod);
    if (e) return cx_raise(e, NULL);
    Py_RETURN_NONE;
}

static PyObject *graph_set_version(GraphObject *go, PyObject *arg) {
    ctosa_version v;
    if (writable(go) < 0 || cx_version_from_obj(arg, &v) < 0) return NULL;
    ctosa_graph_set_version(go->g, v);
    Py_RETURN_NONE;
}

static PyObject *graph_borrowed_count(GraphObject *go, void *c) { return PyLong_FromSsize_t(go->n_bufs); }

static PyMethodDef graph_methods[] = {
    {"add_region", (PyCFunction)graph_add_region, METH_VARARGS, "add_region(name) -> Region"},
    {"region", (PyCFunction)graph_region, METH_VARARGS, "region(name) -> Region (KeyError if none)"},
    {"called", (PyCFunction)graph_called, METH_VARARGS,
     "called(name, caller=None) -> Block: the graph a COND_IF / WHILE_LOOP attribute names, "
     "a region (its first block) or else a block of the calling Region caller (KeyError if none)"},
    {"serialize", (PyCFunction)(void (*)(void))graph_serialize, METH_VARARGS | METH_KEYWORDS,
     "serialize(layout='auto', alignment=0, copy=True) -> bytes (memoryview when copy=False)"},
    {"write", (PyCFunction)(void (*)(void))graph_write, METH_VARARGS | METH_KEYWORDS,
     "write(path, layout='auto', alignment=0): atomic write (temporary name + rename)"},
    {"to_mlir", (PyCFunction)(void (*)(void))graph_to_mlir, METH_VARARGS | METH_KEYWORDS,
     "to_mlir(source_name=None) -> str: the graph as upstream MLIR tosa dialect text "
     "(docs/mlir.md)"},
    {"write_mlir", (PyCFunction)(void (*)(void))graph_write_mlir, METH_VARARGS | METH_KEYWORDS,
     "write_mlir(path, source_name=None): the MLIR text into path (streamed, atomically)"},
    {"set_software_version", (PyCFunction)graph_set_software_version, METH_VARARGS,
     "set_software_version(major, minor, micro, modifier=None) (written for 1.1 graphs)"},
    {"set_version", (PyCFunction)graph_set_version, METH_O, "set_version('1.0' | '1.1' | tuple)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef graph_getset[] = {
    {"regions", (getter)graph_regions, NULL, "list of Region (the first is the main region)", NULL},
    {"version", (getter)graph_version, NULL, "(major, minor, patch, draft)", NULL},
    {"file_info", (getter)graph_file_info, NULL, "what the reader learnt about the file (dict)", NULL},
    {"borrowed_buffers", (getter)graph_borrowed_count, NULL,
     "number of Python buffers whose memory the graph borrows", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *graph_new(PyTypeObject *type, PyObject *args, PyObject *kw) { return graph_alloc(type); }

PyTypeObject cx_Graph_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctosa.TosaGraph",
    .tp_basicsize = sizeof(GraphObject),
    .tp_dealloc = (destructor)graph_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "TosaGraph(version='1.0'): an in-memory TOSA graph (builder, reader result or "
              "lowered partition).",
    .tp_weaklistoffset = offsetof(GraphObject, weakrefs),
    .tp_methods = graph_methods,
    .tp_getset = graph_getset,
    .tp_init = (initproc)graph_init,
    .tp_new = graph_new,
};

/* ------------------------------------------------------------- region */

#define REGION(v) ((ctosa_region *)((ViewObject *)(v))->ptr)
#define BLOCK(v) ((ctosa_block *)((ViewObject *)(v))->ptr)
#define TENSOR(v) ((ctosa_tensor *)((ViewObject *)(v))->ptr)
#define OP(v) ((ctosa_op *)((ViewObject *)(v))->ptr)

static PyObject *region_name(ViewObject *v, void *c) { return cx_str_or_none(REGION(v)->name); }

static PyObject *region_blocks(ViewObject *v, void *c) {
    ctosa_region *r = REGION(v);
    PyObject *l = PyList_New(r->n_blocks);
    if (!l) return NULL;
    for (uint32_t i = 0; i < r->n_blocks; i++) {
        PyObject *b = view_new(&cx_Block_Type, v->graph, r->blocks[i]);
        if (!b) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, b);
    }
    return l;
}

static PyObject *region_add_block(ViewObject *v, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name) || writable(v->graph) < 0) return NULL;
    ctosa_block *b;
    ctosa_error *e = ctosa_region_add_block(v->graph->g, REGION(v), name, &b);
    if (e) return cx_raise(e, NULL);
    return view_new(&cx_Block_Type, v->graph, b);
}

static PyObject *region_repr(ViewObject *v) {
    return PyUnicode_FromFormat("<ctosa.Region '%s', %u block(s)>", REGION(v)->name ? REGION(v)->name : "",
                                REGION(v)->n_blocks);
}

static PyMethodDef region_methods[] = {
    {"add_block", (PyCFunction)region_add_block, METH_VARARGS, "add_block(name) -> Block"},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef region_getset[] = {
    {"name", (getter)region_name, NULL, NULL, NULL},
    {"blocks", (getter)region_blocks, NULL, "list of Block", NULL},
    {"graph", (getter)view_graph, NULL, "the owning TosaGraph", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
PyTypeObject cx_Region_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctosa.Region",
    VIEW_TYPE_COMMON,
    .tp_methods = region_methods,
    .tp_getset = region_getset,
    .tp_repr = (reprfunc)region_repr,
};

/* -------------------------------------------------------------- block */

static PyObject *list_of_views(GraphObject *go, PyTypeObject *type, void **items, uint32_t n) {
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        PyObject *o = view_new(type, go, items[i]);
        if (!o) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, o);
    }
    return l;
}

static PyObject *block_name(ViewObject *v, void *c) { return cx_str_or_none(BLOCK(v)->name); }
static PyObject *block_ops(ViewObject *v, void *c) {
    return list_of_views(v->graph, &cx_Operator_Type, (void **)BLOCK(v)->ops, BLOCK(v)->n_ops);
}
static PyObject *block_tensors(ViewObject *v, void *c) {
    return list_of_views(v->graph, &cx_Tensor_Type, (void **)BLOCK(v)->tensors, BLOCK(v)->n_tensors);
}
static PyObject *block_shapes(ViewObject *v, void *c) {
    return list_of_views(v->graph, &cx_Tensor_Type, (void **)BLOCK(v)->shapes, BLOCK(v)->n_shapes);
}
static PyObject *block_inputs(ViewObject *v, void *c) {
    return cx_str_tuple(BLOCK(v)->inputs, BLOCK(v)->n_inputs);
}
static PyObject *block_outputs(ViewObject *v, void *c) {
    return cx_str_tuple(BLOCK(v)->outputs, BLOCK(v)->n_outputs);
}

/* tensor(name): a linear scan, not ctosa_block_find_tensor, whose lazily
 * built index would race with GIL-free work on the same graph. */
static PyObject *block_tensor(ViewObject *v, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    ctosa_block *b = BLOCK(v);
    for (uint32_t i = 0; i < b->n_tensors; i++)
        if (b->tensors[i]->name && !strcmp(b->tensors[i]->name, name))
            return view_new(&cx_Tensor_Type, v->graph, b->tensors[i]);
    for (uint32_t i = 0; i < b->n_shapes; i++)
        if (b->shapes[i]->name && !strcmp(b->shapes[i]->name, name))
            return view_new(&cx_Tensor_Type, v->graph, b->shapes[i]);
    return PyErr_Format(PyExc_KeyError, "block '%s' has no tensor '%s'", b->name ? b->name : "", name);
}

static int shape_from_obj(PyObject *o, uint32_t *rank, int32_t *shape, const char *what) {
    PyObject *seq = PySequence_Fast(o, "shape must be a sequence of ints");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > 64) {
        Py_DECREF(seq);
        cx_raise_code(CTOSA_ERR_USAGE, "%s: rank %zd is too large", what, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long d = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (d == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (d < -1 || d > INT32_MAX) {
            Py_DECREF(seq);
            cx_raise_code(CTOSA_ERR_USAGE, "%s: dimension %lld is out of range", what, d);
            return -1;
        }
        shape[i] = (int32_t)d;
    }
    *rank = (uint32_t)n;
    Py_DECREF(seq);
    return 0;
}

static int tensor_set_data_obj(GraphObject *go, ctosa_tensor *t, PyObject *data, int copy);

static PyObject *block_add_tensor(ViewObject *v, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"name", "dtype", "shape", "data", "copy", NULL};
    const char *name;
    PyObject *dtobj, *shobj, *data = Py_None;
    int copy = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sOO|Op", kwlist, &name, &dtobj, &shobj, &data, &copy) ||
        writable(v->graph) < 0)
        return NULL;
    ctosa_dtype dt;
    int32_t shape[64];
    uint32_t rank;
    if (cx_dtype_from_obj(dtobj, &dt) < 0 || shape_from_obj(shobj, &rank, shape, name) < 0) return NULL;
    ctosa_tensor *t;
    ctosa_error *e = ctosa_block_add_tensor(v->graph->g, BLOCK(v), name, dt, rank, shape, &t);
    if (e) return cx_raise(e, NULL);
    if (data != Py_None && tensor_set_data_obj(v->graph, t, data, copy) < 0) return NULL;
    return view_new(&cx_Tensor_Type, v->graph, t);
}

static PyObject *block_add_shape(ViewObject *v, PyObject *args) {
    const char *name;
    PyObject *vals = Py_None;
    Py_ssize_t count = -1;
    if (!PyArg_ParseTuple(args, "sO|n", &name, &vals, &count) || writable(v->graph) < 0) return NULL;
    int64_t *buf = NULL;
    uint32_t n = 0;
    if (vals != Py_None) {
        PyObject *seq = PySequence_Fast(vals, "values must be a sequence of ints");
        if (!seq) return NULL;
        n = (uint32_t)PySequence_Fast_GET_SIZE(seq);
        buf = PyMem_Malloc((n ? n : 1) * sizeof *buf);
        if (!buf) {
            Py_DECREF(seq);
            return PyErr_NoMemory();
        }
        for (uint32_t i = 0; i < n; i++) {
            buf[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
            if (buf[i] == -1 && PyErr_Occurred()) {
                PyMem_Free(buf);
                Py_DECREF(seq);
                return NULL;
            }
        }
        Py_DECREF(seq);
    } else if (count >= 0) {
        n = (uint32_t)count;
    } else {
        return cx_raise_code(CTOSA_ERR_USAGE, "shape '%s': give values or a count", name);
    }
    ctosa_tensor *t;
    ctosa_error *e = ctosa_block_add_shape(v->graph->g, BLOCK(v), name, n, buf, &t);
    PyMem_Free(buf);
    if (e) return cx_raise(e, NULL);
    return view_new(&cx_Tensor_Type, v->graph, t);
}

/* Attribute keyword -> ctosa_attr field, validated against the
 * operator's table. Temporary vectors live in *tmp until add_op copied
 * them. */
typedef struct attr_tmp {
    void *mem[32];
    int n;
    Py_buffer views[8];
    int nviews;
} attr_tmp;

static void attr_tmp_free(attr_tmp *tmp) {
    for (int i = 0; i < tmp->n; i++) PyMem_Free(tmp->mem[i]);
    for (int i = 0; i < tmp->nviews; i++) PyBuffer_Release(&tmp->views[i]);
}

static int enum_from_obj(PyObject *o, const char *enum_type, const char *op, const char *field, int *out) {
    if (PyLong_Check(o)) {
        *out = (int)PyLong_AsLong(o);
        return PyErr_Occurred() ? -1 : 0;
    }
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (!s) {
        PyErr_Format(PyExc_TypeError, "%s attribute %s: expected a %s name or int", op, field, enum_type);
        return -1;
    }
    char names[256] = "";
    for (uint32_t k = 0; k < 64; k++) {
        const char *nm = ctosa_enum_value_name(enum_type, k);
        if (!nm) continue;
        if (!strcasecmp(nm, s)) {
            *out = (int)k;
            return 0;
        }
        size_t l = strlen(names);
        snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "", nm);
    }
    cx_raise_code(CTOSA_ERR_USAGE, "%s attribute %s: '%s' is not a %s (one of: %s)", op, field, s, enum_type,
                  names);
    return -1;
}

static int set_attr(ctosa_attr *a, ctosa_op_kind kind, PyObject *key, PyObject *val, attr_tmp *tmp) {
    const char *opname = ctosa_op_name(kind);
    const char *k = PyUnicode_AsUTF8(key);
    if (!k) return -1;
    uint32_t nf = 0;
    const ctosa_attr_field *f = ctosa_op_attr_fields(kind, &nf), *fd = NULL;
    for (uint32_t i = 0; i < nf; i++)
        if (!strcmp(f[i].name, k)) fd = &f[i];
    if (!fd) {
        char names[512] = "";
        for (uint32_t i = 0; i < nf; i++) {
            size_t l = strlen(names);
            snprintf(names + l, sizeof names - l, "%s%s", i ? ", " : "", f[i].name);
        }
        cx_raise_code(CTOSA_ERR_USAGE, "%s has no attribute '%s' (%s: %s)", opname, k,
                      ctosa_op_attr_table(kind) ? ctosa_op_attr_table(kind) : "attributes",
                      nf ? names : "none");
        return -1;
    }
    char *p = (char *)a + fd->offset;
    switch (fd->kind) {
    case CTOSA_FIELD_I32: {
        long v = PyLong_AsLong(val);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (v < INT32_MIN || v > INT32_MAX) {
            cx_raise_code(CTOSA_ERR_USAGE, "%s attribute %s: %ld is out of int32 range", opname, k, v);
            return -1;
        }
        *(int32_t *)p = (int32_t)v;
        return 0;
    }
    case CTOSA_FIELD_BOOL: {
        int b = PyObject_IsTrue(val);
        if (b < 0) return -1;
        *(bool *)p = b;
        return 0;
    }
    case CTOSA_FIELD_ENUM: {
        int ev;
        if (enum_from_obj(val, fd->enum_type, opname, k, &ev) < 0) return -1;
        *(int *)p = ev;
        return 0;
    }
    case CTOSA_FIELD_DTYPE: {
        ctosa_dtype dt;
        if (cx_dtype_from_obj(val, &dt) < 0) return -1;
        *(ctosa_dtype *)p = dt;
        return 0;
    }
    case CTOSA_FIELD_I32_VEC: {
        PyObject *seq = PySequence_Fast(val, "expected a sequence of ints");
        if (!seq) return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        if (tmp->n == 32) {
            Py_DECREF(seq);
            cx_raise_code(CTOSA_ERR_USAGE, "too many attribute vectors");
            return -1;
        }
        int32_t *v = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *v);
        if (!v) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            return -1;
        }
        tmp->mem[tmp->n++] = v;
        for (Py_ssize_t i = 0; i < n; i++) {
            long x = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
            if (x == -1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return -1;
            }
            v[i] = (int32_t)x;
        }
        Py_DECREF(seq);
        ((ctosa_i32s *)p)->v = v;
        ((ctosa_i32s *)p)->n = (uint32_t)n;
        return 0;
    }
    case CTOSA_FIELD_BYTES: {
        if (tmp->nviews == 8) {
            cx_raise_code(CTOSA_ERR_USAGE, "too many byte attributes");
            return -1;
        }
        Py_buffer *vw = &tmp->views[tmp->nviews];
        if (PyUnicode_Check(val) || PyObject_GetBuffer(val, vw, PyBUF_C_CONTIGUOUS) < 0) {
            if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError,
                             "%s attribute %s: expected bytes or a numpy array "
                             "(the little-endian value bytes), not %.100s",
                             opname, k, Py_TYPE(val)->tp_name);
            }
            return -1;
        }
        tmp->nviews++;
        ((ctosa_bytes *)p)->p = vw->buf;
        ((ctosa_bytes *)p)->n = (uint32_t)vw->len;
        return 0;
    }
    case CTOSA_FIELD_STRING: {
        if (val == Py_None) {
            *(const char **)p = NULL;
            return 0;
        }
        const char *s = PyUnicode_AsUTF8(val);
        if (!s) return -1;
        *(const char **)p = s; /* val is kept alive by the kwargs dict */
        return 0;
    }
    }
    return 0;
}

static const char **names_from_obj(PyObject *o, uint32_t *n, const char *what) {
    PyObject *seq = PySequence_Fast(o, "expected a sequence of tensor names");
    if (!seq) return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    const char **v = PyMem_Malloc((size_t)(m ? m : 1) * sizeof *v);
    if (!v) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyUnicode_Check(it) && PyObject_TypeCheck(it, &cx_Tensor_Type)) {
            v[i] = TENSOR(it)->name; /* a Tensor view: its arena name */
            continue;
        }
        if (!(v[i] = PyUnicode_AsUTF8(it))) { /* kept alive by the caller's list */
            PyMem_Free(v);
            Py_DECREF(seq);
            return NULL;
        }
    }
    *n = (uint32_t)m;
    Py_DECREF(seq); /* the sequence's items are owned by o itself (list/tuple) */
    return v;
}

static int op_kind_from_obj(PyObject *o, ctosa_op_kind *out) {
    if (PyLong_Check(o)) {
        long k = PyLong_AsLong(o);
        if (k <= 0 || k >= CTOSA_OP_COUNT || !ctosa_op_name((ctosa_op_kind)k)) {
            cx_raise_code(CTOSA_ERR_USAGE, "unknown operator value %ld", k);
            return -1;
        }
        *out = (ctosa_op_kind)k;
        return 0;
    }
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "operator must be a name such as \"ADD\"");
        return -1;
    }
    char up[64];
    size_t i;
    for (i = 0; s[i] && i < sizeof up - 1; i++) up[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 32 : s[i]);
    up[i] = 0;
    if (!ctosa_op_from_name(up, out)) {
        cx_raise_code(CTOSA_ERR_USAGE, "unknown TOSA operator '%s'", s);
        return -1;
    }
    return 0;
}

static PyObject *block_add_op(ViewObject *v, PyObject *args, PyObject *kw) {
    PyObject *opobj, *inobj, *outobj;
    if (!PyArg_ParseTuple(args, "OOO:add_op", &opobj, &inobj, &outobj) || writable(v->graph) < 0) return NULL;
    ctosa_op_kind kind;
    if (op_kind_from_obj(opobj, &kind) < 0) return NULL;
    /* keep sequences alive while their names are used */
    PyObject *inseq = PySequence_List(inobj), *outseq = inseq ? PySequence_List(outobj) : NULL;
    if (!outseq) {
        Py_XDECREF(inseq);
        return NULL;
    }
    uint32_t nin = 0, nout = 0;
    const char **ins = names_from_obj(inseq, &nin, "inputs");
    const char **outs = ins ? names_from_obj(outseq, &nout, "outputs") : NULL;
    ctosa_attr attr;
    memset(&attr, 0, sizeof attr);
    attr_tmp tmp = {.n = 0, .nviews = 0};
    const char *location = NULL;
    PyObject *res = NULL;
    if (!outs) goto done;
    if (kw) {
        PyObject *k, *val;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kw, &pos, &k, &val)) {
            const char *ks = PyUnicode_AsUTF8(k);
            if (!ks) goto done;
            if (!strcmp(ks, "location")) {
                if (val != Py_None && !(location = PyUnicode_AsUTF8(val))) goto done;
                continue;
            }
            if (set_attr(&attr, kind, k, val, &tmp) < 0) goto done;
        }
    }
    ctosa_op *op;
    ctosa_error *e = ctosa_block_add_op(v->graph->g, BLOCK(v), kind, nin, ins, nout, outs, &attr, &op);
    if (!e && location) e = ctosa_op_set_location(v->graph->g, op, location);
    if (e) {
        cx_raise(e, NULL);
        goto done;
    }
    res = view_new(&cx_Operator_Type, v->graph, op);
done:
    attr_tmp_free(&tmp);
    PyMem_Free(ins);
    PyMem_Free(outs);
    Py_DECREF(inseq);
    Py_DECREF(outseq);
    return res;
}

/* dtype of a buffer's items from its struct format, for add_const. */
static int dtype_from_format(const char *fmt, Py_ssize_t itemsize, ctosa_dtype *out) {
    if (!fmt) fmt = "B";
    while (*fmt == '<' || *fmt == '=' || *fmt == '@' || *fmt == '|') fmt++;
    char c = fmt[0];
    if (fmt[0] && fmt[1]) c = 0; /* structured formats are not tensors */
    switch (c) {
    case '?': *out = CTOSA_DTYPE_BOOL; return 0;
    case 'b': *out = CTOSA_DTYPE_INT8; return 0;
    case 'h': *out = CTOSA_DTYPE_INT16; return 0;
    case 'i':
    case 'l':
    case 'q':
        if (itemsize == 4) *out = CTOSA_DTYPE_INT32;
        else if (itemsize == 8) *out = CTOSA_DTYPE_INT64;
        else break;
        return 0;
    case 'e': *out = CTOSA_DTYPE_FP16; return 0;
    case 'f': *out = CTOSA_DTYPE_FP32; return 0;
    }
    cx_raise_code(CTOSA_ERR_USAGE,
                  "cannot tell the TOSA dtype of items of format '%s' (size %zd): pass dtype=", fmt,
                  itemsize);
    return -1;
}

/* add_const(name, data, dtype=None, copy=False): a constant tensor of
 * data's shape plus its CONST operator; data is borrowed (zero copy). */
static PyObject *block_add_const(ViewObject *v, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"name", "data", "dtype", "copy", NULL};
    const char *name;
    PyObject *data, *dtobj = Py_None;
    int copy = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|Op", kwlist, &name, &data, &dtobj, &copy) ||
        writable(v->graph) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    ctosa_dtype dt;
    int32_t shape[64];
    int rc =
        dtobj != Py_None ? cx_dtype_from_obj(dtobj, &dt) : dtype_from_format(view.format, view.itemsize, &dt);
    if (rc == 0 && view.ndim > 64)
        rc = -1, cx_raise_code(CTOSA_ERR_USAGE, "tensor '%s': rank too large", name);
    for (int i = 0; rc == 0 && i < view.ndim; i++) {
        if (view.shape[i] > INT32_MAX)
            rc = -1, cx_raise_code(CTOSA_ERR_LIMIT, "tensor '%s': dimension too large", name);
        shape[i] = (int32_t)view.shape[i];
    }
    if (rc == 0 && view.ndim == 0 && view.shape == NULL && view.len != view.itemsize) {
        /* a plain byte buffer: one dimension of items */
        shape[0] = (int32_t)(view.len / (view.itemsize ? view.itemsize : 1));
        view.ndim = 1;
    }
    int ndim = view.ndim;
    PyBuffer_Release(&view);
    if (rc < 0) return NULL;
    ctosa_tensor *t;
    ctosa_error *e = ctosa_block_add_tensor(v->graph->g, BLOCK(v), name, dt, (uint32_t)ndim, shape, &t);
    if (e) return cx_raise(e, NULL);
    if (tensor_set_data_obj(v->graph, t, data, copy) < 0) return NULL;
    const char *outs[1] = {t->name};
    if ((e = ctosa_block_add_op(v->graph->g, BLOCK(v), CTOSA_OP_CONST, 0, NULL, 1, outs, NULL, NULL)))
        return cx_raise(e, NULL);
    return view_new(&cx_Tensor_Type, v->graph, t);
}

static PyObject *block_add_io(ViewObject *v, PyObject *args, int output) {
    PyObject *o;
    if (!PyArg_ParseTuple(args, "O", &o) || writable(v->graph) < 0) return NULL;
    const char *name = PyObject_TypeCheck(o, &cx_Tensor_Type) ? TENSOR(o)->name : PyUnicode_AsUTF8(o);
    if (!name) return NULL;
    ctosa_error *e = output ? ctosa_block_add_output(v->graph->g, BLOCK(v), name)
                            : ctosa_block_add_input(v->graph->g, BLOCK(v), name);
    if (e) return cx_raise(e, NULL);
    Py_RETURN_NONE;
}
static PyObject *block_add_input(ViewObject *v, PyObject *args) { return block_add_io(v, args, 0); }
static PyObject *block_add_output(ViewObject *v, PyObject *args) { return block_add_io(v, args, 1); }

static PyObject *block_repr(ViewObject *v) {
    ctosa_block *b = BLOCK(v);
    return PyUnicode_FromFormat("<ctosa.Block '%s', %u ops, %u tensors>", b->name ? b->name : "", b->n_ops,
                                b->n_tensors);
}

static PyMethodDef block_methods[] = {
    {"tensor", (PyCFunction)block_tensor, METH_VARARGS, "tensor(name) -> Tensor (KeyError if none)"},
    {"add_tensor", (PyCFunction)(void (*)(void))block_add_tensor, METH_VARARGS | METH_KEYWORDS,
     "add_tensor(name, dtype, shape, data=None, copy=False) -> Tensor; data is borrowed (zero copy) "
     "unless copy=True"},
    {"add_const", (PyCFunction)(void (*)(void))block_add_const, METH_VARARGS | METH_KEYWORDS,
     "add_const(name, data, dtype=None, copy=False) -> Tensor: a constant of data's shape and its "
     "CONST operator (data borrowed, zero copy)"},
    {"add_shape", (PyCFunction)block_add_shape, METH_VARARGS,
     "add_shape(name, values[, count]) -> Tensor (a TosaShape of int64 values)"},
    {"add_op", (PyCFunction)(void (*)(void))block_add_op, METH_VARARGS | METH_KEYWORDS,
     "add_op(op, inputs, outputs, location=None, **attributes) -> Operator"},
    {"add_input", (PyCFunction)block_add_input, METH_VARARGS, "add_input(name)"},
    {"add_output", (PyCFunction)block_add_output, METH_VARARGS, "add_output(name)"},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef block_getset[] = {
    {"name", (getter)block_name, NULL, NULL, NULL},
    {"ops", (getter)block_ops, NULL, "list of Operator in execution order", NULL},
    {"tensors", (getter)block_tensors, NULL, "list of Tensor", NULL},
    {"shapes", (getter)block_shapes, NULL, "list of Tensor (TosaShape entries)", NULL},
    {"inputs", (getter)block_inputs, NULL, "tuple of input names", NULL},
    {"outputs", (getter)block_outputs, NULL, "tuple of output names", NULL},
    {"graph", (getter)view_graph, NULL, "the owning TosaGraph", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
PyTypeObject cx_Block_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctosa.Block",
    VIEW_TYPE_COMMON,
    .tp_methods = block_methods,
    .tp_getset = block_getset,
    .tp_repr = (reprfunc)block_repr,
};

/* ----------------------------------------------------------- dataview */

typedef struct DataViewObject {
    PyObject_HEAD GraphObject *graph;
    const void *ptr;
    Py_ssize_t size;
} DataViewObject;

static void dataview_dealloc(DataViewObject *d) {
    Py_XDECREF(d->graph);
    PyObject_Free(d);
}
static int dataview_getbuffer(DataViewObject *d, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)d, (void *)d->ptr, d->size, 1, flags);
}
static PyBufferProcs dataview_as_buffer = {(getbufferproc)dataview_getbuffer, NULL};
static PyObject *dataview_address(DataViewObject *d, void *c) { return PyLong_FromVoidPtr((void *)d->ptr); }
static PyObject *dataview_graph(DataViewObject *d, void *c) {
    Py_INCREF(d->graph);
    return (PyObject *)d->graph;
}
static Py_ssize_t dataview_len(DataViewObject *d) { return d->size; }
static PySequenceMethods dataview_as_seq = {.sq_length = (lenfunc)dataview_len};
static PyGetSetDef dataview_getset[] = {
    {"address", (getter)dataview_address, NULL, "address of the first byte", NULL},
    {"graph", (getter)dataview_graph, NULL, "the TosaGraph this memory belongs to", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
PyTypeObject cx_DataView_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctosa.DataView",
    .tp_basicsize = sizeof(DataViewObject),
    .tp_dealloc = (destructor)dataview_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_as_buffer = &dataview_as_buffer,
    .tp_getset = dataview_getset,
    .tp_as_sequence = &dataview_as_seq,
    .tp_doc = "Read-only bytes of a constant tensor, in place (buffer protocol); keeps the graph "
              "(and the mapped file) alive.",
};

/* ------------------------------------------------------------- tensor */

static PyObject *tensor_name(ViewObject *v, void *c) { return cx_str_or_none(TENSOR(v)->name); }
static PyObject *tensor_dtype(ViewObject *v, void *c) {
    const char *s = ctosa_dtype_short(TENSOR(v)->dtype);
    return s ? PyUnicode_FromString(s) : PyLong_FromLong(TENSOR(v)->dtype);
}
static PyObject *tensor_shape(ViewObject *v, void *c) {
    ctosa_tensor *t = TENSOR(v);
    PyObject *s = PyTuple_New(t->rank);
    if (!s) return NULL;
    for (uint32_t i = 0; i < t->rank; i++) PyTuple_SET_ITEM(s, i, PyLong_FromLong(t->shape[i]));
    return s;
}
static PyObject *tensor_flag(int b) { return PyBool_FromLong(b); }
static PyObject *tensor_is_shape(ViewObject *v, void *c) { return tensor_flag(TENSOR(v)->is_shape); }
static PyObject *tensor_variable(ViewObject *v, void *c) { return tensor_flag(TENSOR(v)->variable); }
static PyObject *tensor_is_unranked(ViewObject *v, void *c) { return tensor_flag(TENSOR(v)->is_unranked); }
static PyObject *tensor_variable_name(ViewObject *v, void *c) {
    return cx_str_or_none(TENSOR(v)->variable_name);
}
static PyObject *tensor_nbytes(ViewObject *v, void *c) {
    return PyLong_FromUnsignedLongLong(TENSOR(v)->data.kind == CTOSA_DATA_NONE ? 0 : TENSOR(v)->data.size);
}
static PyObject *tensor_data_kind(ViewObject *v, void *c) {
    static const char *k[] = {"none", "memory", "file", "generated"};
    return PyUnicode_FromString(k[TENSOR(v)->data.kind <= CTOSA_DATA_GENERATED ? TENSOR(v)->data.kind : 0]);
}
static PyObject *tensor_data_file(ViewObject *v, void *c) {
    ctosa_data *d = &TENSOR(v)->data;
    if (d->kind != CTOSA_DATA_FILE) Py_RETURN_NONE;
    return Py_BuildValue("(NiKK)", cx_str_or_none(d->path), d->fd, (unsigned long long)d->offset,
                         (unsigned long long)d->size);
}

/* raw: the constant bytes in place (file encoding) as a DataView. */
static PyObject *tensor_raw(ViewObject *v, void *c) {
    ctosa_data *d = &TENSOR(v)->data;
    if (d->kind == CTOSA_DATA_FILE || d->kind == CTOSA_DATA_GENERATED) {
        /* Large weights of a lowering result stay in the model's files or
         * are produced on demand (streamed transposes): there are no bytes
         * in memory to view, so this reads a copy. */
        if (d->size > (uint64_t)PY_SSIZE_T_MAX) return cx_raise_code(CTOSA_ERR_LIMIT, "tensor too large");
        PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)d->size);
        if (!bytes) return NULL;
        ctosa_error *e;
        Py_BEGIN_ALLOW_THREADS e =
            ctosa_tensor_read_data(TENSOR(v), 0, PyBytes_AS_STRING(bytes), (size_t)d->size);
        Py_END_ALLOW_THREADS if (e) {
            Py_DECREF(bytes);
            return cx_raise(e, NULL);
        }
        return bytes;
    }
    if (d->kind != CTOSA_DATA_MEMORY) Py_RETURN_NONE;
    DataViewObject *dv = PyObject_New(DataViewObject, &cx_DataView_Type);
    if (!dv) return NULL;
    Py_INCREF(v->graph);
    dv->graph = v->graph;
    dv->ptr = d->ptr;
    dv->size = (Py_ssize_t)d->size;
    return (PyObject *)dv;
}

/* numpy dtype of the file encoding when elements map 1:1 onto a numpy
 * type; NULL for packed encodings (INT4, INT48). */
static const char *file_np_dtype(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_BOOL: return "?";
    case CTOSA_DTYPE_INT8: return "i1";
    case CTOSA_DTYPE_INT16: return "<i2";
    case CTOSA_DTYPE_INT32: return "<i4";
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE: return "<i8";
    case CTOSA_DTYPE_FP32: return "<f4";
    case CTOSA_DTYPE_FP16: return "<f2";
    case CTOSA_DTYPE_BF16: return "<u2";
    case CTOSA_DTYPE_FP8E4M3:
    case CTOSA_DTYPE_FP8E5M2:
    case CTOSA_DTYPE_FP8UE8M0: return "u1";
    default: return NULL;
    }
}

/* data: a read-only numpy array over the constant bytes (zero copy), of
 * the tensor's shape; packed dtypes (INT4, INT48, ...) give the raw bytes
 * as a 1-D uint8 array. None when the tensor has no in-memory data. */
static PyObject *tensor_data(ViewObject *v, void *c) {
    ctosa_tensor *t = TENSOR(v);
    if (t->data.kind == CTOSA_DATA_NONE) Py_RETURN_NONE;
    PyObject *np = cx_numpy();
    if (!np) return NULL;
    PyObject *raw = tensor_raw(v, NULL);
    if (!raw) return NULL;
    const char *npt = file_np_dtype(t->dtype);
    uint64_t count = 0;
    PyObject *arr;
    if (npt && ctosa_tensor_elements(t, &count)) {
        uint64_t need = 0;
        ctosa_dtype_storage_size(t->dtype, count, &need);
        if (need > t->data.size) {
            Py_DECREF(raw);
            return cx_raise_code(CTOSA_ERR_FORMAT, "tensor '%s': %llu data bytes for %llu elements", t->name,
                                 (unsigned long long)t->data.size, (unsigned long long)count);
        }
        arr = PyObject_CallMethod(np, "frombuffer", "Osn", raw, npt, (Py_ssize_t)count);
        if (arr && !t->is_shape) {
            PyObject *shape = tensor_shape(v, NULL);
            PyObject *r2 = shape ? PyObject_CallMethod(arr, "reshape", "O", shape) : NULL;
            Py_XDECREF(shape);
            Py_DECREF(arr);
            arr = r2;
        }
    } else {
        arr = PyObject_CallMethod(np, "frombuffer", "Os", raw, "u1");
    }
    Py_DECREF(raw);
    return arr;
}

static int tensor_set_data_obj(GraphObject *go, ctosa_tensor *t, PyObject *data, int copy) {
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        if (PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            cx_raise_code(CTOSA_ERR_USAGE,
                          "tensor '%s': data must be a C-contiguous buffer "
                          "(use numpy.ascontiguousarray)",
                          t->name);
        }
        return -1;
    }
    uint64_t count = 0, need = 0;
    if (!ctosa_tensor_elements(t, &count) || !ctosa_dtype_storage_size(t->dtype, count, &need)) {
        PyBuffer_Release(&view);
        cx_raise_code(CTOSA_ERR_LIMIT, "tensor '%s': too many elements", t->name);
        return -1;
    }
    /* The bytes must already be in the file encoding: element size and
     * total size must match (packed INT4/INT48 are packed by the Python
     * layer). A mismatch is almost always a wrong numpy dtype. */
    if ((uint64_t)view.len != need) {
        cx_raise_code(CTOSA_ERR_USAGE,
                      "tensor '%s': data has %zd bytes (itemsize %zd, format '%s') but %s x %llu "
                      "elements need %llu bytes",
                      t->name, view.len, view.itemsize, view.format ? view.format : "B",
                      ctosa_dtype_short(t->dtype), (unsigned long long)count, (unsigned long long)need);
        PyBuffer_Release(&view);
        return -1;
    }
    const char *npt = file_np_dtype(t->dtype);
    if (npt && view.format && view.itemsize != (Py_ssize_t)((ctosa_dtype_bits(t->dtype) + 7) / 8) &&
        strcmp(view.format, "B") && strcmp(view.format, "b")) {
        cx_raise_code(CTOSA_ERR_USAGE, "tensor '%s': data items are %zd bytes, %s needs %d", t->name,
                      view.itemsize, ctosa_dtype_short(t->dtype), (ctosa_dtype_bits(t->dtype) + 7) / 8);
        PyBuffer_Release(&view);
        return -1;
    }
    ctosa_error *e = ctosa_tensor_set_data(go->g, t, view.buf, (uint64_t)view.len, copy != 0);
    if (e) {
        PyBuffer_Release(&view);
        cx_raise(e, NULL);
        return -1;
    }
    if (copy) {
        PyBuffer_Release(&view);
        return 0;
    }
    return cx_graph_keep_buffer(go, &view); /* pinned until the graph is freed */
}

static PyObject *tensor_set_data(ViewObject *v, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"data", "copy", NULL};
    PyObject *data;
    int copy = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p", kwlist, &data, &copy) || writable(v->graph) < 0)
        return NULL;
    if (tensor_set_data_obj(v->graph, TENSOR(v), data, copy) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *tensor_set_data_file(ViewObject *v, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", "offset", "size", NULL};
    PyObject *pathb;
    unsigned long long off, size;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&KK", kwlist, PyUnicode_FSConverter, &pathb, &off, &size))
        return NULL;
    if (writable(v->graph) < 0) {
        Py_DECREF(pathb);
        return NULL;
    }
    ctosa_error *e =
        ctosa_tensor_set_data_file(v->graph->g, TENSOR(v), PyBytes_AS_STRING(pathb), -1, off, size);
    PyObject *r = e ? cx_raise(e, PyBytes_AS_STRING(pathb)) : (Py_INCREF(Py_None), Py_None);
    Py_DECREF(pathb);
    return r;
}

static PyObject *tensor_repr(ViewObject *v) {
    ctosa_tensor *t = TENSOR(v);
    PyObject *shape = tensor_shape(v, NULL);
    if (!shape) return NULL;
    PyObject *r = PyUnicode_FromFormat("<ctosa.Tensor '%s' %s%S%s>", t->name ? t->name : "",
                                       ctosa_dtype_short(t->dtype) ? ctosa_dtype_short(t->dtype) : "?", shape,
                                       t->data.kind != CTOSA_DATA_NONE ? " const" : "");
    Py_DECREF(shape);
    return r;
}

static PyMethodDef tensor_methods[] = {
    {"set_data", (PyCFunction)(void (*)(void))tensor_set_data, METH_VARARGS | METH_KEYWORDS,
     "set_data(buffer, copy=False): constant data in the file encoding; borrowed unless copy"},
    {"set_data_file", (PyCFunction)(void (*)(void))tensor_set_data_file, METH_VARARGS | METH_KEYWORDS,
     "set_data_file(path, offset, size): constant data read from a file when the graph is written"},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef tensor_getset[] = {
    {"name", (getter)tensor_name, NULL, NULL, NULL},
    {"dtype", (getter)tensor_dtype, NULL, "TOSA dtype name (\"int8\", \"fp32\", ...)", NULL},
    {"shape", (getter)tensor_shape, NULL, "tuple of dimensions", NULL},
    {"is_shape", (getter)tensor_is_shape, NULL, "a TosaShape (block.shapes) entry", NULL},
    {"variable", (getter)tensor_variable, NULL, NULL, NULL},
    {"is_unranked", (getter)tensor_is_unranked, NULL, NULL, NULL},
    {"variable_name", (getter)tensor_variable_name, NULL, NULL, NULL},
    {"nbytes", (getter)tensor_nbytes, NULL, "bytes of constant data (file encoding)", NULL},
    {"data_kind", (getter)tensor_data_kind, NULL, "'none', 'memory', 'file' or 'generated'", NULL},
    {"data_file", (getter)tensor_data_file, NULL, "(path, fd, offset, size) for file-backed data", NULL},
    {"raw", (getter)tensor_raw, NULL,
     "constant bytes in place (DataView); a bytes copy for file/generated data; None when not constant",
     NULL},
    {"data", (getter)tensor_data, NULL,
     "read-only numpy array of the constant data: a view of the mapping, a copy for file/generated data; "
     "None when not constant",
     NULL},
    {"graph", (getter)view_graph, NULL, "the owning TosaGraph", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
PyTypeObject cx_Tensor_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctosa.Tensor",
    VIEW_TYPE_COMMON,
    .tp_methods = tensor_methods,
    .tp_getset = tensor_getset,
    .tp_repr = (reprfunc)tensor_repr,
};

/* ----------------------------------------------------------- operator */

static PyObject *op_name(ViewObject *v, void *c) {
    const char *s = ctosa_op_name(OP(v)->kind);
    return s ? PyUnicode_FromString(s) : PyLong_FromLong(OP(v)->kind);
}
static PyObject *op_kind(ViewObject *v, void *c) { return PyLong_FromLong(OP(v)->kind); }
static PyObject *op_inputs(ViewObject *v, void *c) { return cx_str_tuple(OP(v)->inputs, OP(v)->n_inputs); }
static PyObject *op_outputs(ViewObject *v, void *c) { return cx_str_tuple(OP(v)->outputs, OP(v)->n_outputs); }
static PyObject *op_location(ViewObject *v, void *c) { return cx_str_or_none(OP(v)->location); }

static PyObject *op_attrs(ViewObject *v, void *c) {
    ctosa_op *op = OP(v);
    uint32_t nf = 0;
    const ctosa_attr_field *f = ctosa_op_attr_fields(op->kind, &nf);
    PyObject *d = PyDict_New();
    if (!d || !f) return d;
    for (uint32_t i = 0; i < nf; i++) {
        const char *p = (const char *)&op->attr + f[i].offset;
        PyObject *val = NULL;
        switch (f[i].kind) {
        case CTOSA_FIELD_I32: val = PyLong_FromLong(*(const int32_t *)p); break;
        case CTOSA_FIELD_BOOL: val = PyBool_FromLong(*(const bool *)p); break;
        case CTOSA_FIELD_ENUM: {
            int ev = *(const int *)p;
            const char *nm = ctosa_enum_value_name(f[i].enum_type, (uint32_t)ev);
            val = nm ? PyUnicode_FromString(nm) : PyLong_FromLong(ev);
            break;
        }
        case CTOSA_FIELD_DTYPE: {
            const char *nm = ctosa_dtype_short(*(const ctosa_dtype *)p);
            val = nm ? PyUnicode_FromString(nm) : PyLong_FromLong(*(const int *)p);
            break;
        }
        case CTOSA_FIELD_I32_VEC: {
            const ctosa_i32s *vec = (const ctosa_i32s *)p;
            val = PyTuple_New(vec->n);
            for (uint32_t j = 0; val && j < vec->n; j++) PyTuple_SET_ITEM(val, j, PyLong_FromLong(vec->v[j]));
            break;
        }
        case CTOSA_FIELD_BYTES: {
            const ctosa_bytes *b = (const ctosa_bytes *)p;
            val = PyBytes_FromStringAndSize((const char *)b->p, b->n);
            break;
        }
        case CTOSA_FIELD_STRING: val = cx_str_or_none(*(const char *const *)p); break;
        }
        if (!val || PyDict_SetItemString(d, f[i].name, val) < 0) {
            Py_XDECREF(val);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(val);
    }
    return d;
}

static PyObject *op_repr(ViewObject *v) {
    ctosa_op *op = OP(v);
    PyObject *ins = op_inputs(v, NULL), *outs = ins ? op_outputs(v, NULL) : NULL;
    PyObject *r =
        outs ? PyUnicode_FromFormat("<ctosa.Operator %s %R -> %R>",
                                    ctosa_op_name(op->kind) ? ctosa_op_name(op->kind) : "?", ins, outs)
             : NULL;
    Py_XDECREF(ins);
    Py_XDECREF(outs);
    return r;
}

static PyGetSetDef op_getset[] = {
    {"op", (getter)op_name, NULL, "operator name (\"CONV2D\")", NULL},
    {"kind", (getter)op_kind, NULL, "operator value in the file", NULL},
    {"inputs", (getter)op_inputs, NULL, "tuple of input names", NULL},
    {"outputs", (getter)op_outputs, NULL, "tuple of output names", NULL},
    {"attrs", (getter)op_attrs, NULL, "dict of the operator's attribute-table fields", NULL},
    {"location", (getter)op_location, NULL, "OpLocation text or None", NULL},
    {"graph", (getter)view_graph, NULL, "the owning TosaGraph", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
PyTypeObject cx_Operator_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctosa.Operator",
    VIEW_TYPE_COMMON,
    .tp_getset = op_getset,
    .tp_repr = (reprfunc)op_repr,
};

/* --------------------------------------------------------------- read */

PyObject *cx_read(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"source", "require_identifier", "name", NULL};
    PyObject *src;
    int reqid = 0;
    const char *name = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|pz", kwlist, &src, &reqid, &name)) return NULL;
    ctosa_read_options opt;
    ctosa_read_options_init(&opt);
    opt.require_identifier = reqid != 0;
    ctosa_graph *g = NULL;
    ctosa_error *e;
    if (PyUnicode_Check(src) || PyObject_HasAttrString(src, "__fspath__")) {
        PyObject *pathb;
        if (!PyUnicode_FSConverter(src, &pathb)) return NULL;
        const char *path = PyBytes_AS_STRING(pathb);
        Py_BEGIN_ALLOW_THREADS e = ctosa_read_file(path, &opt, &g);
        Py_END_ALLOW_THREADS if (e) {
            cx_raise(e, path);
            Py_DECREF(pathb);
            return NULL;
        }
        Py_DECREF(pathb);
        return cx_graph_wrap(g, NULL, 0);
    }
    /* A buffer (bytes, bytearray, memoryview, numpy array): read in place
     * and pin the buffer for the graph's lifetime. */
    Py_buffer view;
    if (PyObject_GetBuffer(src, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS e =
        ctosa_read_memory(view.buf, (size_t)view.len, name ? name : "<memory>", &opt, &g);
    Py_END_ALLOW_THREADS if (e) {
        PyBuffer_Release(&view);
        return cx_raise(e, name ? name : "<memory>");
    }
    GraphObject *go = (GraphObject *)cx_graph_wrap(g, NULL, 0);
    if (!go) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (cx_graph_keep_buffer(go, &view) < 0) {
        Py_DECREF(go);
        return NULL;
    }
    return (PyObject *)go;
}

int cx_graph_types_ready(PyObject *m) {
    PyTypeObject *types[] = {&cx_Graph_Type,    &cx_Region_Type,   &cx_Block_Type, &cx_Tensor_Type,
                             &cx_Operator_Type, &cx_DataView_Type, &MallocBuf_Type};
    const char *names[] = {"TosaGraph", "Region", "Block", "Tensor", "Operator", "DataView", NULL};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (PyType_Ready(types[i]) < 0) return -1;
        if (names[i]) {
            Py_INCREF(types[i]);
            if (PyModule_AddObject(m, names[i], (PyObject *)types[i]) < 0) {
                Py_DECREF(types[i]);
                return -1;
            }
        }
    }
    return 0;
}
