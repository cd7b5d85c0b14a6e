/* quantize.c - ctosa_quantize for Python (ctosa.quantize()). */
#include <string.h>

#include "ext.h"

PyObject *cx_quantize(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {
        "path",   "output_dir", "calibration",     "spec",        "target", "activation_bits",
        "method", "percentile", "bias_correction", "max_samples", "stem",   "range_search",
        "int16",  "equalize",   "int16_budget",    NULL};
    PyObject *pathb = NULL, *outb = NULL, *cal;
    const char *spec = NULL, *target = NULL, *method = NULL, *stem = NULL, *bias = NULL;
    int bits = 8;
    double pct = 0;
    unsigned int max_samples = 0;
    int range_search = 0;
    int int16 = -1; /* a tensor count; -1: not given (the library's default), -2: auto */
    int equalize = 0;
    double int16_budget = 0; /* percent; 0: not given */
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&O|zzizdzIzpipd", kwlist, PyUnicode_FSConverter, &pathb,
                                     PyUnicode_FSConverter, &outb, &cal, &spec, &target, &bits, &method, &pct,
                                     &bias, &max_samples, &stem, &range_search, &int16, &equalize,
                                     &int16_budget))
        return NULL;
    PyObject *res = NULL, *seq = NULL;
    ctosa_quantize_calibration *cv = NULL;
    ctosa_quantize_options opt;
    ctosa_quantize_options_init(&opt);
    if (!(seq = PySequence_Fast(cal, "calibration must be a sequence of (name, path)"))) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (!(cv = PyMem_Calloc((size_t)n + 1, sizeof *cv))) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ss", &cv[i].name, &cv[i].path)) goto done;
    if (!method || !strcmp(method, "default")) opt.method = CTOSA_QUANT_DEFAULT;
    else if (!strcmp(method, "mse")) opt.method = CTOSA_QUANT_MSE;
    else if (!strcmp(method, "minmax")) opt.method = CTOSA_QUANT_MINMAX;
    else if (!strcmp(method, "percentile")) opt.method = CTOSA_QUANT_PERCENTILE;
    else {
        cx_raise_code(CTOSA_ERR_USAGE, "method must be 'mse', 'minmax' or 'percentile', got '%s'", method);
        goto done;
    }
    if (!bias || !strcmp(bias, "default")) opt.bias_correction = CTOSA_QUANT_BIAS_DEFAULT;
    else if (!strcmp(bias, "sequential")) opt.bias_correction = CTOSA_QUANT_BIAS_SEQUENTIAL;
    else if (!strcmp(bias, "float")) opt.bias_correction = CTOSA_QUANT_BIAS_FLOAT;
    else if (!strcmp(bias, "off")) opt.bias_correction = CTOSA_QUANT_BIAS_OFF;
    else {
        cx_raise_code(CTOSA_ERR_USAGE, "bias_correction must be 'sequential', 'float' or 'off', got '%s'",
                      bias);
        goto done;
    }
    opt.output_dir = PyBytes_AS_STRING(outb);
    opt.calibration = cv;
    opt.n_calibration = (uint32_t)n;
    opt.spec = spec;
    opt.target = target;
    opt.activation_bits = bits;
    opt.percentile = pct;
    opt.max_samples = max_samples;
    opt.stem = stem;
    opt.range_search = range_search != 0;
    /* as the command line: a budget means budget mode (a count then
     * limits it too), a count alone count mode (0: pure int8) */
    if (int16 >= 0) opt.int16_tensors = (uint32_t)int16;
    if (int16 == -2) opt.int16_tensors = 0;
    if (int16_budget > 0) opt.int16_budget = int16_budget;
    else if (int16 >= 0) opt.int16_budget = 0;
    else if (int16 == -2) opt.int16_budget = CTOSA_QUANT_INT16_BUDGET;
    opt.equalize = equalize != 0;
    const char *path = PyBytes_AS_STRING(pathb);
    ctosa_quantize_result *r = NULL;
    ctosa_error *e;
    Py_BEGIN_ALLOW_THREADS e = ctosa_quantize(path, &opt, &r);
    Py_END_ALLOW_THREADS if (e) {
        cx_raise(e, path);
        goto done;
    }
    const ctosa_quantize_summary *s = ctosa_quantize_result_summary(r);
    res = Py_BuildValue("{s:s,s:s,s:s,s:z}", "qdq_path", s->qdq_path, "report_path", s->report_path, "report",
                        s->report_json, "equalized_path", s->equalized_path);
    ctosa_quantize_result_free(r);
done:
    Py_XDECREF(seq);
    PyMem_Free(cv);
    Py_XDECREF(pathb);
    Py_XDECREF(outb);
    return res;
}
