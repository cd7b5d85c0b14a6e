/*
 * test_int64.c - EXT-INT64 acceptance: int64 delegated exactly
 * where TOSA 1.1 allows it, safe fallback everywhere else.
 *
 * Cases: tests/data/lower/int64/<case>/ (gen.py there: model.onnx, runtime
 * inputs <name>.pb, numpy values of every computed tensor val_<name>.pb).
 * cases.txt says per spec (i10 TOSA-1.0+INT, f10 TOSA-1.0+FP, i11
 * TOSA-1.1+INT+int64, f11 TOSA-1.1+FP+int64) either "ok" (fully delegated)
 * or exactly which nodes fall back with which code. For every run:
 *   - the fallback list equals the expectation, node accounting adds up;
 *   - every partition validates (as built and after write/read), no
 *     partition boundary tensor has a symbolic dimension;
 *   - every partition runs on the interpreter, fed with the reference
 *     values, and every output equals numpy's bit for bit (int64 compared
 *     as int64, not through doubles);
 *   - written 1.1 .tosa files decode with flatc and the 1.1 draft schema;
 *   - the partitioned ONNX passes onnx.checker and its CPU nodes are
 *     byte-identical to the original ones (python3 + onnx; skipped visibly
 *     when absent).
 * Plus the specific claims: values beyond int32 stay int64 (constants
 * included), Gather keeps i64 indices under int64, ArgMax outputs i64
 * under int64 and ArgMax->Cast(int32) is one ARGMAX without int64, the
 * out-of-range constant names its value, ReduceProd names the missing
 * row, and `ctosa spec --onnx` derives the int64 allowlist.
 */
#include <dirent.h>
#include <sys/stat.h>

#include "harness.h"
#include "lower/lower_internal.h"
#include "lower_testutil.h"

#define CASE_DIR CTOSA_SOURCE_DIR "/tests/data/lower/int64"

static const char *const SPEC_TAGS[4] = {"i10", "f10", "i11", "f11"};
static const char *const SPECS[4] = {"TOSA-1.0+INT", "TOSA-1.0+FP", "TOSA-1.1+INT+int64",
                                     "TOSA-1.1+FP+int64"};

static const char *schema11;
static bool have_flatc, have_py;
static strbuf py_jobs; /* "orig|partitioned\n" lines checked by one python run */
static int n_runs, n_delegated_exact, n_fallback_runs, n_flatc;

/* Reads every <name>.pb / val_<name>.pb of a case into vals. */
static bool load_case_values(const char *dir, lt_values *vals) {
    DIR *d = opendir(dir);
    if (!d) return false;
    struct dirent *e;
    bool ok = true;
    while (ok && (e = readdir(d))) {
        const char *n = e->d_name;
        if (!lt_ends_with(n, ".pb")) continue;
        char path[1024], name[256];
        if (snprintf(path, sizeof path, "%s/%s", dir, n) >= (int)sizeof path) continue;
        const char *base = strncmp(n, "val_", 4) == 0 ? n + 4 : n;
        if (snprintf(name, sizeof name, "%.*s", (int)(strlen(base) - 3), base) >= (int)sizeof name) continue;
        npy_array a;
        ctosa_error *err = lt_load_array(path, &a);
        if (err) {
            CHECK_MSG(0, "%s: %s", path, ctosa_error_message(err));
            ctosa_error_free(err);
            ok = false;
            break;
        }
        err = lt_values_put(vals, name, &a);
        if (err) {
            ctosa_error_free(err);
            ok = false;
        }
    }
    closedir(d);
    return ok;
}

/* Exact comparison: integers as int64, bools, floats bit for bit. */
static bool exact_equal(const npy_array *got, const npy_array *want, char *why, size_t cap) {
    if (got->count != want->count ||
        (!lt_same_shape(got->rank, got->shape, want->rank, want->shape) && got->count != 1)) {
        snprintf(why, cap, "shape differs (%llu vs %llu elements)", (unsigned long long)got->count,
                 (unsigned long long)want->count);
        return false;
    }
    for (uint64_t i = 0; i < want->count; i++) {
        const uint8_t *g = (const uint8_t *)got->data + i * got->itemsize;
        const uint8_t *w = (const uint8_t *)want->data + i * want->itemsize;
        if (want->kind == 'f' || got->kind == 'f') {
            if (got->kind != want->kind || got->itemsize != want->itemsize || memcmp(g, w, got->itemsize)) {
                snprintf(why, cap, "element %llu: got %.9g, expected %.9g", (unsigned long long)i,
                         lt_npy_at(got, i), lt_npy_at(want, i));
                return false;
            }
            continue;
        }
        int64_t gv = 0, wv = 0;
        int64_t *pv[2] = {&gv, &wv};
        const npy_array *arr[2] = {got, want};
        const uint8_t *pp[2] = {g, w};
        for (int k = 0; k < 2; k++) {
            const npy_array *a = arr[k];
            switch (a->itemsize) {
            case 1: *pv[k] = a->kind == 'i' ? (int8_t)pp[k][0] : pp[k][0]; break;
            case 2: {
                int16_t v;
                memcpy(&v, pp[k], 2);
                *pv[k] = v;
                break;
            }
            case 4: {
                int32_t v;
                memcpy(&v, pp[k], 4);
                *pv[k] = v;
                break;
            }
            default: memcpy(pv[k], pp[k], 8); break;
            }
        }
        if (gv != wv) {
            snprintf(why, cap, "element %llu: got %lld, expected %lld", (unsigned long long)i, (long long)gv,
                     (long long)wv);
            return false;
        }
    }
    return true;
}

/* Runs every partition fed from the reference values; compares outputs. */
static void run_and_compare(const ctosa_lower_summary *s, const lt_values *ref, const char *label) {
    for (uint32_t p = 0; p < s->n_partitions; p++) {
        const ctosa_lower_partition *pt = &s->partitions[p];
        ctosa_interp_options io;
        ctosa_interp_options_init(&io);
        io.threads = 1;
        ctosa_interp *it = NULL;
        ctosa_error *e = ctosa_interp_create(pt->graph, &io, &it);
        for (uint32_t i = 0; !e && i < pt->n_inputs; i++) {
            const npy_array *a = lt_values_get(ref, pt->inputs[i].name);
            if (!a) e = ctosa_error_new(CTOSA_ERR_INVALID, "no reference for input '%s'", pt->inputs[i].name);
            else e = lt_feed(it, pt->inputs[i].name, a);
        }
        if (!e) e = ctosa_interp_run(it);
        for (uint32_t i = 0; !e && i < pt->n_outputs; i++) {
            ctosa_interp_tensor t;
            npy_array got;
            e = ctosa_interp_get_output(it, pt->outputs[i].name, &t);
            if (!e) e = lt_host_to_npy(&t, &got);
            if (e) break;
            const npy_array *want = lt_values_get(ref, pt->outputs[i].name);
            char why[512] = "";
            CHECK_MSG(want != NULL, "%s: no reference value for '%s'", label, pt->outputs[i].name);
            if (want) {
                bool same = exact_equal(&got, want, why, sizeof why);
                CHECK_MSG(same, "%s: partition %u output '%s': %s", label, p, pt->outputs[i].name, why);
                /* The boundary keeps the ONNX dtype: int64 stays int64. */
                CHECK_MSG(got.itemsize == want->itemsize, "%s: output '%s' has %u-byte elements, numpy %u",
                          label, pt->outputs[i].name, got.itemsize, want->itemsize);
            }
            npy_free(&got);
        }
        CHECK_MSG(e == NULL, "%s: partition %u: %s", label, p, e ? ctosa_error_message(e) : "");
        ctosa_error_free(e);
        ctosa_interp_free(it);
    }
}

/* Whether any operator of kind k exists in the partition (and with an
 * operand of dtype t at position pos of inputs (pos >= 0) or outputs (pos
 * = -1 - index)), when t != UNKNOWN. */
static bool has_op(const ctosa_lower_partition *pt, ctosa_op_kind k, int pos, ctosa_dtype t) {
    const ctosa_block *b = ctosa_graph_region(pt->graph, 0)->blocks[0];
    for (uint32_t i = 0; i < b->n_ops; i++) {
        const ctosa_op *op = b->ops[i];
        if (op->kind != k) continue;
        if (t == CTOSA_DTYPE_UNKNOWN) return true;
        const char *nm = pos >= 0 ? ((uint32_t)pos < op->n_inputs ? op->inputs[pos] : NULL)
                                  : ((uint32_t)(-1 - pos) < op->n_outputs ? op->outputs[-1 - pos] : NULL);
        const ctosa_tensor *tt = nm ? ctosa_block_find_tensor(pt->graph, b, nm) : NULL;
        if (tt && tt->dtype == t) return true;
    }
    return false;
}

static bool has_i64_const(const ctosa_lower_partition *pt, int64_t value) {
    const ctosa_block *b = ctosa_graph_region(pt->graph, 0)->blocks[0];
    for (uint32_t i = 0; i < b->n_tensors; i++) {
        const ctosa_tensor *t = b->tensors[i];
        if (t->dtype != CTOSA_DTYPE_INT64 || !t->data.ptr) continue;
        for (uint64_t k = 0; k + 8 <= t->data.size; k += 8)
            if ((int64_t)rd_u64((const uint8_t *)t->data.ptr + k) == value) return true;
    }
    return false;
}

static const ctosa_lower_fallback *fallback_of(const ctosa_lower_summary *s, const char *node) {
    for (uint32_t i = 0; i < s->n_fallback; i++)
        if (strcmp(s->fallback[i].node, node) == 0) return &s->fallback[i];
    return NULL;
}

/* Case-specific claims. */
static void specific_checks(const char *cname, int si, const ctosa_lower_summary *s, const char *label) {
    bool i64 = si >= 2;
    const ctosa_lower_partition *p0 = s->n_partitions ? &s->partitions[0] : NULL;
    if (!strcmp(cname, "where_big") && i64 && p0)
        CHECK_MSG(has_i64_const(p0, (int64_t)1 << 40), "%s: the 2**40 initializer is not an INT64 constant",
                  label);
    if (!strcmp(cname, "slice_step2") && i64 && p0) {
        /* Every tensor of the slice stays int64 (no narrowed buffer). */
        const ctosa_block *b = ctosa_graph_region(p0->graph, 0)->blocks[0];
        for (uint32_t i = 0; i < b->n_tensors; i++)
            CHECK_MSG(
                b->tensors[i]->dtype == CTOSA_DTYPE_INT64 || b->tensors[i]->dtype == CTOSA_DTYPE_SHAPE ||
                    b->tensors[i]->dtype == CTOSA_DTYPE_INT8,
                "%s: tensor '%s' is %s", label, b->tensors[i]->name, ctosa_dtype_short(b->tensors[i]->dtype));
    }
    if ((!strcmp(cname, "gather_const") || !strcmp(cname, "gather_runtime")) && si == 3 && p0)
        CHECK_MSG(has_op(p0, CTOSA_OP_GATHER, 1, CTOSA_DTYPE_INT64), "%s: GATHER indices are not i64", label);
    if (!strcmp(cname, "gather_const") && si == 1 && p0)
        CHECK_MSG(has_op(p0, CTOSA_OP_GATHER, 1, CTOSA_DTYPE_INT32),
                  "%s: GATHER indices are not narrowed to i32", label);
    if ((!strcmp(cname, "argmax") || !strcmp(cname, "argmax_int")) && i64 && p0) {
        CHECK_MSG(has_op(p0, CTOSA_OP_ARGMAX, -1, CTOSA_DTYPE_INT64), "%s: ARGMAX output is not i64", label);
        CHECK_MSG(!has_op(p0, CTOSA_OP_CAST, 0, CTOSA_DTYPE_UNKNOWN), "%s: a CAST follows ARGMAX", label);
    }
    if (!strcmp(cname, "argmax_cast") && si == 1 && p0) {
        CHECK_MSG(has_op(p0, CTOSA_OP_ARGMAX, -1, CTOSA_DTYPE_INT32), "%s: no ARGMAX with an i32 output",
                  label);
        CHECK_MSG(!has_op(p0, CTOSA_OP_CAST, 0, CTOSA_DTYPE_UNKNOWN), "%s: ArgMax->Cast(int32) emits a CAST",
                  label);
    }
    if (!strcmp(cname, "where_const") && !i64) {
        const ctosa_lower_fallback *f = fallback_of(s, "where_big");
        CHECK_MSG(f && strstr(f->reason, "1099511627776"), "%s: the reason does not name 2**40: %s", label,
                  f ? f->reason : "(no fallback)");
    }
    if (!strcmp(cname, "reduceprod") && i64) {
        const ctosa_lower_fallback *f = fallback_of(s, "rprod");
        CHECK_MSG(f && strstr(f->reason, "ReduceProd: RESHAPE has i64, but its lowering needs REDUCE_PRODUCT "
                                         "which has no i64 row"),
                  "%s: reason: %s", label, f ? f->reason : "(no fallback)");
    }
    if ((!strcmp(cname, "shape_reshape") || !strcmp(cname, "const_fold")) && (si == 1 || si == 3) && p0) {
        /* Constant shape arithmetic folded away: no int64 reaches TOSA. */
        CHECK_MSG(p0->n_inputs == 1, "%s: %u partition inputs", label, p0->n_inputs);
    }
}

static void run_case(const char *cname, int si, const char *expect) {
    char label[256], dir[1024], model[1100], out_dir[1024];
    bool with_shape = strchr(cname, '@') != NULL;
    char base[128];
    if (snprintf(label, sizeof label, "%s under %s", cname, SPECS[si]) >= (int)sizeof label ||
        snprintf(base, sizeof base, "%.*s", (int)strcspn(cname, "@"), cname) >= (int)sizeof base ||
        snprintf(dir, sizeof dir, "%s/%s", CASE_DIR, base) >= (int)sizeof dir ||
        snprintf(model, sizeof model, "%s/model.onnx", dir) >= (int)sizeof model ||
        snprintf(out_dir, sizeof out_dir, "%s/%s.%s", th_tmpdir(), base, SPEC_TAGS[si]) >=
            (int)sizeof out_dir) {
        CHECK_MSG(0, "case name too long: %s", cname);
        return;
    }
    if (with_shape) strncat(out_dir, ".shape", sizeof out_dir - strlen(out_dir) - 1);
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse(SPECS[si], &spec));
    ctosa_lower_options opt;
    ctosa_lower_options_init(&opt);
    opt.output_dir = out_dir;
    opt.stem = "m";
    int64_t dims[3] = {2, 3, 4};
    ctosa_lower_shape sh = {"x", 3, dims};
    if (with_shape) {
        opt.n_shapes = 1;
        opt.shapes = &sh;
    }
    ctosa_lower_result *r = NULL;
    ctosa_error *e = ctosa_lower_file(model, &spec, &opt, &r);
    CHECK_MSG(e == NULL, "%s: %s", label, e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    if (!r) return;
    n_runs++;
    const ctosa_lower_summary *s = ctosa_lower_result_summary(r);
    char why[1024];
    CHECK_MSG(lt_check_accounting(s, why, sizeof why), "%s: %s", label, why);
    CHECK_MSG(lt_validate_all(s, &spec, why, sizeof why), "%s: %s", label, why);
    /* Expected fallback set. */
    uint32_t n_expected = 0;
    if (strcmp(expect, "ok") != 0) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", expect);
        char *sv = NULL;
        for (char *tok = strtok_r(buf, " ", &sv); tok; tok = strtok_r(NULL, " ", &sv)) {
            char *eq = strchr(tok, '=');
            if (!eq) continue;
            *eq = 0;
            n_expected++;
            const ctosa_lower_fallback *f = fallback_of(s, tok);
            CHECK_MSG(f && strcmp(f->code, eq + 1) == 0, "%s: node '%s' should fall back with %s, got %s%s%s",
                      label, tok, eq + 1, f ? f->code : "delegated", f ? ": " : "", f ? f->reason : "");
        }
    }
    CHECK_MSG(s->n_fallback == n_expected, "%s: %u nodes fall back, expected %u", label, s->n_fallback,
              n_expected);
    for (uint32_t i = 0; s->n_fallback != n_expected && i < s->n_fallback; i++)
        fprintf(stderr, "    fallback %s: %s: %s\n", s->fallback[i].node, s->fallback[i].code,
                s->fallback[i].reason);
    if (n_expected) n_fallback_runs++;
    else n_delegated_exact++;
    /* No symbolic dimension crosses a boundary. */
    for (uint32_t p = 0; p < s->n_partitions; p++) {
        const ctosa_lower_partition *pt = &s->partitions[p];
        for (uint32_t k = 0; k < pt->n_inputs + pt->n_outputs; k++) {
            const ctosa_lower_io *io = k < pt->n_inputs ? &pt->inputs[k] : &pt->outputs[k - pt->n_inputs];
            for (uint32_t d = 0; d < io->rank; d++)
                CHECK_MSG(io->shape[d] >= 0, "%s: boundary tensor '%s' has a symbolic dimension", label,
                          io->name);
        }
    }
    lt_values ref = {0};
    if (load_case_values(dir, &ref)) run_and_compare(s, &ref, label);
    lt_values_free(&ref);
    specific_checks(base, si, s, label);
    /* 1.1 files decode with flatc and the 1.1 draft schema. */
    if (si >= 2 && have_flatc) {
        for (uint32_t p = 0; p < s->n_partitions; p++) {
            char *out = NULL;
            int rc = th_run(&out, "flatc --json --raw-binary --strict-json -o '%s' '%s' -- '%s/%s'", out_dir,
                            schema11, out_dir, s->partitions[p].file);
            CHECK_MSG(rc == 0, "%s: flatc cannot decode %s: %s", label, s->partitions[p].file,
                      out ? out : "");
            free(out);
            n_flatc++;
        }
    }
    sb_printf(&py_jobs, "%s|%s/m.partitioned.onnx\n", model, out_dir);
    ctosa_lower_result_free(r);
}

static void test_matrix(void) {
    size_t n = 0;
    char *text = (char *)th_read(CASE_DIR "/cases.txt", &n);
    CHECK(text != NULL);
    if (!text) return;
    char *lsv = NULL;
    for (char *line = strtok_r(text, "\n", &lsv); line; line = strtok_r(NULL, "\n", &lsv)) {
        if (line[0] == '#' || !line[0]) continue;
        char cname[128], tag[8];
        int off = 0;
        if (sscanf(line, "%127s %7s %n", cname, tag, &off) < 2) continue;
        int si = -1;
        for (int k = 0; k < 4; k++)
            if (!strcmp(tag, SPEC_TAGS[k])) si = k;
        CHECK_MSG(si >= 0, "cases.txt: bad spec tag '%s'", tag);
        if (si < 0) continue;
        char *rest = strdup(line + off);
        run_case(cname, si, rest);
        free(rest);
    }
    free(text);
    printf("int64 matrix: %d runs, %d fully delegated and bit-exact, %d with the expected fallbacks, "
           "%d .tosa files decoded by flatc\n",
           n_runs, n_delegated_exact, n_fallback_runs, n_flatc);
}

/* onnx.checker on every partitioned model, and its CPU nodes are exactly
 * the original ones (same serialized NodeProto). */
static void test_partitioned_onnx(void) {
    if (!have_py) {
        printf("skipped: /usr/bin/python3 with onnx not available (partitioned ONNX not checked)\n");
        return;
    }
    const char *jobs = th_path(th_tmpdir(), "jobs.txt");
    th_write(jobs, py_jobs.s ? py_jobs.s : "", py_jobs.s ? strlen(py_jobs.s) : 0);
    const char *script = th_path(th_tmpdir(), "check.py");
    static const char py[] =
        "import sys, onnx\n"
        "bad = 0\n"
        "for line in open(sys.argv[1]):\n"
        "    orig, part = line.strip().split('|')\n"
        "    try:\n"
        "        m = onnx.load(part); onnx.checker.check_model(m)\n"
        "    except Exception as e:\n"
        "        print('FAIL', part, e); bad += 1; continue\n"
        "    o = onnx.load(orig)\n"
        "    orig_nodes = set(n.SerializeToString() for n in o.graph.node)\n"
        "    for n in m.graph.node:\n"
        "        if n.op_type == 'EPContext' and n.domain == 'com.microsoft':\n"
        "            continue\n"
        "        if n.SerializeToString() not in orig_nodes:\n"
        "            print('FAIL', part, 'node', n.name, 'differs from the original'); bad += 1\n"
        "print('checked', sum(1 for _ in open(sys.argv[1])), 'partitioned models')\n"
        "sys.exit(1 if bad else 0)\n";
    th_write(script, py, strlen(py));
    char *out = NULL;
    int rc = th_run(&out, "/usr/bin/python3 '%s' '%s'", script, jobs);
    CHECK_MSG(rc == 0, "partitioned ONNX: %s", out ? out : "");
    if (out) printf("%s", out);
    free(out);
}

/* `ctosa spec SPEC --onnx`: the derived allowlist. */
static void test_spec_onnx(void) {
    char *out = NULL;
    int rc = th_run(&out, "'%s' spec TOSA-1.1+INT+int64 --onnx", th_ctosa());
    CHECK_MSG(rc == 0, "ctosa spec --onnx: exit %d: %s", rc, out ? out : "");
    if (out) {
        /* Delegated with int64 operands (lowered and validated on a probe). */
        const char *yes[] = {"  Add\n",    "  Mul\n",    "  CumSum\n",    "  Where\n",
                             "  ArgMax\n", "  Concat\n", "  ReduceSum\n", "  Equal\n"};
        for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
            CHECK_MSG(strstr(out, yes[i]) != NULL, "spec --onnx: '%.*s' not listed as delegated",
                      (int)strlen(yes[i]) - 1, yes[i]);
        CHECK_MSG(strstr(out, "ReduceProd: unsupported_dtype: ") &&
                      strstr(out, "REDUCE_PRODUCT which has no i64 row"),
                  "spec --onnx: ReduceProd's missing row not named");
    }
    free(out);
    out = NULL;
    rc = th_run(&out, "'%s' spec TOSA-1.1+INT+int64 --onnx --json", th_ctosa());
    CHECK_MSG(rc == 0 && out && strstr(out, "\"onnx_int64\"") &&
                  strstr(out, "\"op\": \"Add\", \"delegated\": true"),
              "spec --onnx --json: %s", out ? out : "");
    free(out);
    out = NULL;
    rc = th_run(&out, "'%s' spec TOSA-1.0+INT --onnx", th_ctosa());
    CHECK_MSG(rc == 0 && out && strstr(out, "int64_not_enabled"), "spec 1.0 --onnx: %s", out ? out : "");
    free(out);
}

/* One-operator TOSA 1.1 graph: in0 (t0, shape s0), in1 (t1, s1) -> out. */
static ctosa_graph *one_op(ctosa_op_kind k, ctosa_dtype t0, int32_t n0, ctosa_dtype t1, int32_t n1,
                           ctosa_dtype to, int32_t no, const ctosa_attr *attr) {
    ctosa_graph *g = NULL;
    ctosa_region *r;
    ctosa_block *b;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_1_DRAFT, &g));
    CHECK_OK(ctosa_graph_add_region(g, "main", &r));
    CHECK_OK(ctosa_region_add_block(g, r, "main", &b));
    bool gather = k == CTOSA_OP_GATHER;
    int32_t s0[3] = {1, n0, 1}, s1[2] = {1, n1}, so[3] = {1, no, 1};
    CHECK_OK(ctosa_block_add_tensor(g, b, "a", t0, gather ? 3 : 1, gather ? s0 : &n0, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, b, "b", t1, gather ? 2 : 1, gather ? s1 : &n1, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, b, "y", to, gather ? 3 : 1, gather ? so : &no, NULL));
    const char *in[2] = {"a", "b"}, *out[1] = {"y"};
    CHECK_OK(ctosa_block_add_op(g, b, k, 2, in, 1, out, attr, NULL));
    CHECK_OK(ctosa_block_add_input(g, b, "a"));
    CHECK_OK(ctosa_block_add_input(g, b, "b"));
    CHECK_OK(ctosa_block_add_output(g, b, "y"));
    return g;
}

/* The reason mapping on emitted operators the table does not pair
 * (mixed_width), including bool next to int64, and an operand type the
 * spec has no rows for at all (the validator's reason stands). */
static void test_explain(void) {
    ctosa_spec spec;
    CHECK_OK(ctosa_spec_parse("TOSA-1.1+INT+int64", &spec));
    arena a;
    arena_init(&a, 0);
    lower_code code;
    const char *why = NULL;
    /* GATHER pairs i64 values only with i64 indices. */
    ctosa_graph *g =
        one_op(CTOSA_OP_GATHER, CTOSA_DTYPE_INT64, 4, CTOSA_DTYPE_INT32, 2, CTOSA_DTYPE_INT64, 2, NULL);
    ctosa_error *e = ctosa_validate(g, &spec, NULL);
    CHECK(e != NULL);
    ctosa_error_free(e);
    CHECK(lw_int64_explain(g, &spec, "Gather", &a, &code, &why));
    CHECK_MSG(code == LOWER_MIXED_WIDTH && why && strstr(why, "GATHER with types (i64,i32)->i64") &&
                  strstr(why, "(i64,i64)->i64"),
              "gather: %s: %s", lower_code_name(code), why ? why : "");
    ctosa_graph_free(g);
    /* CONCAT of an int64 and a bool operand. */
    ctosa_attr at;
    memset(&at, 0, sizeof at);
    at.axis = 0;
    g = one_op(CTOSA_OP_CONCAT, CTOSA_DTYPE_INT64, 3, CTOSA_DTYPE_BOOL, 2, CTOSA_DTYPE_INT64, 5, &at);
    e = ctosa_validate(g, &spec, NULL);
    CHECK(e != NULL);
    ctosa_error_free(e);
    why = NULL;
    CHECK(lw_int64_explain(g, &spec, "Concat", &a, &code, &why));
    CHECK_MSG(code == LOWER_MIXED_WIDTH && why && strstr(why, "(i64,bool)->i64"), "concat: %s: %s",
              lower_code_name(code), why ? why : "");
    ctosa_graph_free(g);
    /* fp32 values under an INT-only spec: not an int64 problem. */
    g = one_op(CTOSA_OP_GATHER, CTOSA_DTYPE_FP32, 4, CTOSA_DTYPE_INT64, 2, CTOSA_DTYPE_FP32, 2, NULL);
    CHECK(!lw_int64_explain(g, &spec, "Gather", &a, &code, &why));
    ctosa_graph_free(g);
    /* Without int64 in the spec nothing is explained here. */
    CHECK_OK(ctosa_spec_parse("TOSA-1.0+INT", &spec));
    g = one_op(CTOSA_OP_GATHER, CTOSA_DTYPE_INT64, 4, CTOSA_DTYPE_INT32, 2, CTOSA_DTYPE_INT64, 2, NULL);
    CHECK(!lw_int64_explain(g, &spec, "Gather", &a, &code, &why));
    ctosa_graph_free(g);
    arena_free(&a);
}

int main(void) {
    const char *shared = th_shared_dir();
    if (shared) {
        static char buf[1024];
        struct stat st;
        if (snprintf(buf, sizeof buf, "%s/reference/tosa/schema/tosa-1.1-draft.fbs", shared) <
                (int)sizeof buf &&
            stat(buf, &st) == 0)
            schema11 = buf;
    }
    have_flatc = schema11 && th_have("flatc");
    if (!have_flatc) printf("note: flatc or the 1.1 schema is missing: .tosa files are not decoded\n");
    have_py = th_run(NULL, "/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") == 0;
    sb_init(&py_jobs);
    RUN(test_matrix);
    RUN(test_partitioned_onnx);
    RUN(test_spec_onnx);
    RUN(test_explain);
    sb_free(&py_jobs);
    return th_finish();
}
