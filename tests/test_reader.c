/* test_reader.c - the TOSA flatbuffer reader on real files: Arm's official
 * example graphs (../shared), the committed flatc-made inputs in
 * tests/data/tosa (see gen.sh there), write->read round trips and the
 * read-speed budget. */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "tosa/graph_internal.h"

#define EX "reference/tosa/examples/"
#define DATA CTOSA_SOURCE_DIR "/tests/data/tosa/"

static const char *examples[] = {
    EX "test_add_1x4x4x4_f32/flatbuffer-tf/test_add_1x4x4x4_f32.tosa",
    EX "test_add_1x4x4x4_f32/flatbuffer-tflite/test_add_1x4x4x4_f32.tosa",
    EX "test_conv2d_1x1_1x32x32x8_f32_st11_padSAME_dilat11/flatbuffer-tf/"
       "test_conv2d_1x1_1x32x32x8_f32_st11_padSAME_dilat11.tosa",
    EX "test_conv2d_1x1_1x32x32x8_f32_st11_padSAME_dilat11/flatbuffer-tflite/"
       "test_conv2d_1x1_1x32x32x8_f32_st11_padSAME_dilat11.tosa",
    EX "test_conv2d_1x1_1x32x32x8_qi8_st11_padSAME_dilat11/flatbuffer-tflite/"
       "test_conv2d_1x1_1x32x32x8_qi8_st11_padSAME_dilat11.tosa",
    EX "test_lstm_stateful_13x21x3_f32/flatbuffer-tflite/test_lstm_stateful_13x21x3_f32.tosa",
};

/* ------------------------------------------------------------ helpers */

static ctosa_block *main_block(ctosa_graph *g) {
    ctosa_region *r = ctosa_graph_region(g, 0);
    return r && r->n_blocks ? r->blocks[0] : NULL;
}

static ctosa_op *find_op(ctosa_block *b, ctosa_op_kind k, int nth) {
    for (uint32_t i = 0; i < b->n_ops; i++)
        if (b->ops[i]->kind == k && nth-- == 0) return b->ops[i];
    return NULL;
}

static int shape_is(const ctosa_tensor *t, uint32_t rank, const int32_t *dims) {
    if (!t || t->rank != rank) return 0;
    for (uint32_t i = 0; i < rank; i++)
        if (t->shape[i] != dims[i]) return 0;
    return 1;
}

static int i32s_is(ctosa_i32s v, uint32_t n, const int32_t *want) {
    if (v.n != n) return 0;
    for (uint32_t i = 0; i < n; i++)
        if (v.v[i] != want[i]) return 0;
    return 1;
}

/* Every constant's bytes lie inside [base, base+size): zero copy. */
static void check_zero_copy(ctosa_graph *g, const uint8_t *base, uint64_t size) {
    uint32_t constants = 0;
    for (uint32_t ri = 0; ri < ctosa_graph_region_count(g); ri++) {
        ctosa_region *r = ctosa_graph_region(g, ri);
        for (uint32_t bi = 0; bi < r->n_blocks; bi++) {
            ctosa_block *b = r->blocks[bi];
            for (uint32_t pass = 0; pass < 2; pass++) {
                uint32_t n = pass ? b->n_shapes : b->n_tensors;
                for (uint32_t i = 0; i < n; i++) {
                    ctosa_tensor *t = pass ? b->shapes[i] : b->tensors[i];
                    if (t->data.kind == CTOSA_DATA_NONE) continue;
                    constants++;
                    const uint8_t *p = t->data.ptr;
                    CHECK_MSG(t->data.kind == CTOSA_DATA_MEMORY && p >= base &&
                                  p + t->data.size <= base + size,
                              "tensor '%s' data not inside the file buffer", t->name);
                }
            }
        }
    }
    (void)constants;
}

static uint32_t count_constants(ctosa_graph *g) {
    uint32_t n = 0;
    for (uint32_t ri = 0; ri < ctosa_graph_region_count(g); ri++) {
        ctosa_region *r = ctosa_graph_region(g, ri);
        for (uint32_t bi = 0; bi < r->n_blocks; bi++) {
            for (uint32_t i = 0; i < r->blocks[bi]->n_tensors; i++)
                n += r->blocks[bi]->tensors[i]->data.kind != CTOSA_DATA_NONE;
            for (uint32_t i = 0; i < r->blocks[bi]->n_shapes; i++)
                n += r->blocks[bi]->shapes[i]->data.kind != CTOSA_DATA_NONE;
        }
    }
    return n;
}

static uint32_t count_tensor_constants(ctosa_graph *g) {
    uint32_t n = 0;
    for (uint32_t ri = 0; ri < ctosa_graph_region_count(g); ri++) {
        ctosa_region *r = ctosa_graph_region(g, ri);
        for (uint32_t bi = 0; bi < r->n_blocks; bi++)
            for (uint32_t i = 0; i < r->blocks[bi]->n_tensors; i++)
                n += r->blocks[bi]->tensors[i]->data.kind != CTOSA_DATA_NONE;
    }
    return n;
}

/* ------------------------------------------------ official example graphs */

static void test_examples_read(void) {
    for (size_t k = 0; k < CTOSA_ARRAY_LEN(examples); k++) {
        const char *path = th_shared_path(examples[k]);
        ctosa_graph *g = NULL;
        CHECK_OK(ctosa_read_file(path, NULL, &g));
        if (!g) continue;
        ctosa_version v = ctosa_graph_version(g);
        /* Arm's tools label these 1.1.0 draft (1.0-final numbering). */
        CHECK(v.major == 1 && v.minor == 1 && v.patch == 0 && v.draft);
        ctosa_file_info fi = ctosa_graph_file_info(g);
        CHECK(fi.from_file && fi.has_identifier && !fi.external_data);
        CHECK(fi.file_size == g->map.size && fi.flatbuffer_size == fi.file_size);
        CHECK(g->has_map);
        check_zero_copy(g, g->map.data, g->map.size);
        CHECK(strcmp(ctosa_graph_region(g, 0)->name, "main") == 0);
        ctosa_graph_free(g);

        /* The same through ctosa_read_memory: data points into our buffer. */
        size_t n;
        unsigned char *buf = th_read(path, &n);
        CHECK(buf != NULL);
        if (!buf) continue;
        CHECK_OK(ctosa_read_memory(buf, n, path, NULL, &g));
        if (g) {
            check_zero_copy(g, buf, n);
            CHECK(!g->has_map);
            ctosa_graph_free(g);
        }
        free(buf);
    }
}

static void test_example_add(void) {
    ctosa_graph *g = NULL;
    CHECK_OK(ctosa_read_file(th_shared_path(examples[0]), NULL, &g));
    if (!g) return;
    ctosa_block *b = main_block(g);
    CHECK(b && b->n_ops == 1 && b->n_tensors == 3 && b->n_shapes == 0);
    ctosa_op *add = find_op(b, CTOSA_OP_ADD, 0);
    CHECK(add && add->n_inputs == 2 && add->n_outputs == 1);
    /* broadcast add: [1,4,4,1] + [1,4,4,4] -> [1,4,4,4], all FP32 */
    static const int32_t d[3][4] = {{1, 4, 4, 1}, {1, 4, 4, 4}, {1, 4, 4, 4}};
    for (uint32_t i = 0; add && i < 3; i++) {
        ctosa_tensor *t = ctosa_block_find_tensor(g, b, i < 2 ? add->inputs[i] : add->outputs[0]);
        CHECK(t && t->dtype == CTOSA_DTYPE_FP32 && shape_is(t, 4, d[i]));
        CHECK(t && t->data.kind == CTOSA_DATA_NONE);
    }
    CHECK(b->n_inputs == 2 && b->n_outputs == 1);
    CHECK(count_constants(g) == 0);
    ctosa_graph_free(g);
}

static void test_example_conv_f32(void) {
    ctosa_graph *g = NULL;
    CHECK_OK(ctosa_read_file(th_shared_path(examples[3]), NULL, &g));
    if (!g) return;
    ctosa_block *b = main_block(g);
    ctosa_op *c = find_op(b, CTOSA_OP_CONV2D, 0);
    CHECK(c && c->n_inputs == 5);
    if (c) {
        static const int32_t one[2] = {1, 1}, zero[4] = {0, 0, 0, 0};
        CHECK(i32s_is(c->attr.stride, 2, one) && i32s_is(c->attr.dilation, 2, one));
        CHECK(i32s_is(c->attr.pad, 4, zero));
        CHECK(c->attr.acc_type == CTOSA_DTYPE_FP32 && !c->attr.local_bound);
        ctosa_tensor *w = ctosa_block_find_tensor(g, b, c->inputs[1]);
        static const int32_t wd[4] = {16, 1, 1, 8};
        CHECK(w && w->dtype == CTOSA_DTYPE_FP32 && shape_is(w, 4, wd));
        CHECK(w && w->data.kind == CTOSA_DATA_MEMORY && w->data.size == 16 * 8 * 4);
    }
    CHECK(ctosa_graph_file_info(g).min_data_alignment == 4); /* C++ writer: 4-aligned */
    ctosa_graph_free(g);
}

static void test_example_conv_qi8(void) {
    ctosa_graph *g = NULL;
    CHECK_OK(ctosa_read_file(th_shared_path(examples[4]), NULL, &g));
    if (!g) return;
    ctosa_block *b = main_block(g);
    CHECK(b->n_ops == 9 && b->n_tensors == 10);
    ctosa_op *c = find_op(b, CTOSA_OP_CONV2D, 0);
    CHECK(c && c->n_inputs == 5 && c->attr.acc_type == CTOSA_DTYPE_INT32);
    if (c) {
        /* input and weight zero points: INT8 [1] constants, value 0, data
         * padded to 8 bytes in the file but size 1 here */
        for (int k = 3; k < 5; k++) {
            ctosa_tensor *zp = ctosa_block_find_tensor(g, b, c->inputs[k]);
            static const int32_t one[1] = {1};
            CHECK(zp && zp->dtype == CTOSA_DTYPE_INT8 && shape_is(zp, 1, one));
            CHECK(zp && zp->data.kind == CTOSA_DATA_MEMORY && zp->data.size == 1 &&
                  ((const int8_t *)zp->data.ptr)[0] == 0);
        }
        ctosa_tensor *bias = ctosa_block_find_tensor(g, b, c->inputs[2]);
        CHECK(bias && bias->dtype == CTOSA_DTYPE_INT32 && bias->data.size == 64);
    }
    ctosa_op *rs = find_op(b, CTOSA_OP_RESCALE, 0);
    CHECK(rs && rs->n_inputs == 5);
    if (rs) {
        CHECK(rs->attr.scale32 && rs->attr.per_channel && !rs->attr.input_unsigned &&
              !rs->attr.output_unsigned && rs->attr.rounding_mode == CTOSA_ROUND_DOUBLE);
        ctosa_tensor *izp = ctosa_block_find_tensor(g, b, rs->inputs[3]);
        ctosa_tensor *ozp = ctosa_block_find_tensor(g, b, rs->inputs[4]);
        ctosa_tensor *shift = ctosa_block_find_tensor(g, b, rs->inputs[2]);
        CHECK(izp && izp->dtype == CTOSA_DTYPE_INT32 && izp->data.size == 4);
        CHECK(ozp && ozp->dtype == CTOSA_DTYPE_INT8 && ozp->data.size == 1 &&
              ((const int8_t *)ozp->data.ptr)[0] == -2);
        CHECK(shift && shift->dtype == CTOSA_DTYPE_INT8 && shift->data.size == 16 &&
              ((const int8_t *)shift->data.ptr)[15] == 40);
    }
    ctosa_file_info fi = ctosa_graph_file_info(g);
    CHECK(fi.constant_bytes == 16 + 64 + 1 + 4 + 128 + 64 + 1);
    ctosa_graph_free(g);
}

static void test_example_lstm(void) {
    ctosa_graph *g = NULL;
    CHECK_OK(ctosa_read_file(th_shared_path(examples[5]), NULL, &g));
    if (!g) return;
    CHECK(ctosa_graph_region_count(g) == 3);
    ctosa_block *b = main_block(g);
    static const int32_t d[2] = {13, 2};
    const char *vars[2][2] = {{"Variable_0", "lstm/Variable"}, {"Variable_1", "lstm/Variable_1"}};
    for (int i = 0; i < 2; i++) {
        ctosa_tensor *t = ctosa_block_find_tensor(g, b, vars[i][0]);
        CHECK(t && t->variable && t->dtype == CTOSA_DTYPE_FP32 && shape_is(t, 2, d));
        CHECK(t && t->variable_name && strcmp(t->variable_name, vars[i][1]) == 0);
        CHECK(t && t->data.kind == CTOSA_DATA_MEMORY && t->data.size == 104);
    }
    CHECK(b->n_shapes == 11 && b->n_ops == 27);
    ctosa_tensor *s0 = ctosa_block_find_tensor(g, b, "layer_0");
    CHECK(s0 && s0->is_shape && s0->shape[0] == 3 && s0->data.size == 24);
    if (s0 && s0->data.ptr) {
        const uint8_t *p = s0->data.ptr;
        CHECK(p[0] == 1 && p[8] == 13 && p[16] == 2);
    }
    ctosa_op *w = find_op(b, CTOSA_OP_WHILE_LOOP, 0);
    CHECK(w && w->n_inputs == 5 && w->n_outputs == 5);
    CHECK(w && ctosa_graph_find_region(g, w->attr.cond_graph) &&
          ctosa_graph_find_region(g, w->attr.body_graph));
    /* IDENTITY written with a VariableReadAttribute by Arm's translator */
    ctosa_op *id = find_op(b, CTOSA_OP_IDENTITY, 0);
    CHECK(id && id->n_inputs == 1 && strcmp(id->inputs[0], "Variable_0") == 0);
    ctosa_region *body = ctosa_graph_find_region(g, "tosa.while_loop_body_region");
    CHECK(body && body->n_blocks == 1 && find_op(body->blocks[0], CTOSA_OP_CONV2D, 1));
    ctosa_graph_free(g);
}

/* `ctosa dump --format json` of every example is valid JSON with the
 * operators the file has. */
static void test_examples_dump_json(void) {
    int have_py = access("/usr/bin/python3", X_OK) == 0;
    static const char *want[] = {"ADD", "ADD", "CONV2D", "CONV2D", "RESCALE", "WHILE_LOOP"};
    for (size_t k = 0; k < CTOSA_ARRAY_LEN(examples); k++) {
        const char *path = th_shared_path(examples[k]);
        const char *out = th_path(th_tmpdir(), "dump.json");
        char *log = NULL;
        int rc = th_run(&log, "'%s' dump --format json '%s' > '%s'", th_ctosa(), path, out);
        CHECK_MSG(rc == 0, "dump %s: rc %d: %s", path, rc, log ? log : "");
        free(log);
        size_t n;
        char *txt = (char *)th_read(out, &n);
        CHECK(txt != NULL);
        if (!txt) continue;
        char needle[64];
        snprintf(needle, sizeof needle, "\"op\": \"%s\"", want[k]);
        CHECK_MSG(strstr(txt, needle) != NULL, "%s lacks %s", path, needle);
        free(txt);
        if (!have_py) continue;
        rc = th_run(&log,
                    "/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
                    "ops=[o[\"op\"] for r in d[\"regions\"] for b in r[\"blocks\"] for o in "
                    "b[\"operators\"]]; assert sys.argv[2] in ops, ops; "
                    "assert d[\"version\"][\"minor\"]==1' '%s' %s",
                    out, want[k]);
        CHECK_MSG(rc == 0, "python json check of %s: %s", path, log ? log : "");
        free(log);
    }
    if (!have_py) printf("note: /usr/bin/python3 absent, JSON parsed by substring only\n");
}

/* ------------------------------------------------ committed test inputs */

static void test_small(void) {
    ctosa_graph *g = NULL;
    CHECK_OK(ctosa_read_file(DATA "small.tosa", NULL, &g));
    if (!g) return;
    ctosa_version v = ctosa_graph_version(g);
    CHECK(v.major == 1 && v.minor == 0 && v.patch == 0 && !v.draft);
    CHECK(!ctosa_graph_software_version(g).present);
    ctosa_block *b = main_block(g);
    CHECK(b->n_ops == 6 && b->n_tensors == 8 && b->n_shapes == 1);
    ctosa_tensor *w = ctosa_block_find_tensor(g, b, "w");
    CHECK(w && w->data.size == 16);
    if (w && w->data.ptr) {
        float f[4];
        memcpy(f, w->data.ptr, 16);
        CHECK(f[0] == 1.0f && f[1] == 2.0f && f[2] == 3.0f && f[3] == 4.0f);
    }
    ctosa_tensor *var = ctosa_block_find_tensor(g, b, "v");
    /* 8 bytes in the file (padded), 3 elements of INT8: size 3 */
    CHECK(var && var->variable && var->data.size == 3 && strcmp(var->variable_name, "state") == 0);
    ctosa_tensor *s = ctosa_block_find_tensor(g, b, "s");
    CHECK(s && s->is_shape && s->dtype == CTOSA_DTYPE_SHAPE && s->rank == 1 && s->shape[0] == 1 &&
          s->data.size == 8 && ((const uint8_t *)s->data.ptr)[0] == 4);
    ctosa_op *add = find_op(b, CTOSA_OP_ADD, 0);
    CHECK(add && add->location && strcmp(add->location, "loc(\"add0\")") == 0);
    ctosa_op *cl = find_op(b, CTOSA_OP_CLAMP, 0);
    CHECK(cl && cl->attr.nan_mode == CTOSA_NAN_PROPAGATE && cl->attr.min_val.n == 4 &&
          cl->attr.max_val.n == 4);
    if (cl && cl->attr.max_val.p) {
        float f;
        memcpy(&f, cl->attr.max_val.p, 4);
        CHECK(f == 6.0f);
    }
    ctosa_op *cu = find_op(b, CTOSA_OP_CUSTOM, 0);
    CHECK(cu && strcmp(cu->attr.operator_name, "my_op") == 0 &&
          strcmp(cu->attr.domain_name, "ctosa.test") == 0 && cu->attr.implementation_attrs.n == 3 &&
          memcmp(cu->attr.implementation_attrs.p, "k=v", 3) == 0);
    ctosa_file_info fi = ctosa_graph_file_info(g);
    CHECK(fi.constant_bytes == 16 + 3 + 8 && fi.min_data_alignment >= 4);
    ctosa_graph_free(g);
}

static void test_v11(void) {
    ctosa_graph *g = NULL;
    CHECK_OK(ctosa_read_file(DATA "v11.tosa", NULL, &g));
    if (!g) return;
    ctosa_version v = ctosa_graph_version(g);
    CHECK(v.major == 1 && v.minor == 1 && v.draft); /* _draft absent: default true */
    ctosa_software_version sw = ctosa_graph_software_version(g);
    CHECK(sw.present && sw.major == 0 && sw.minor == 1 && sw.micro == 0 && sw.modifier &&
          strcmp(sw.modifier, "ctosa-test") == 0);
    ctosa_block *b = main_block(g);
    ctosa_op *dim = find_op(b, CTOSA_OP_DIM, 0);
    CHECK(dim && dim->attr.axis == 1);
    ctosa_op *mm = find_op(b, CTOSA_OP_MATMUL_T_BLOCK_SCALED, 0);
    CHECK(mm && mm->attr.block_size == CTOSA_BLOCK_SIZE_32 && mm->n_inputs == 4);
    ctosa_tensor *k = ctosa_block_find_tensor(g, b, "k");
    CHECK(k && k->dtype == CTOSA_DTYPE_INT64 && k->data.size == 16);
    if (k && k->data.ptr) {
        int64_t x[2];
        memcpy(x, k->data.ptr, 16);
        CHECK(x[0] == -1 && x[1] == 5);
    }
    ctosa_tensor *d = ctosa_block_find_tensor(g, b, "d");
    CHECK(d && d->is_shape && d->data.kind == CTOSA_DATA_NONE);
    ctosa_graph_free(g);
}

static void test_external(void) {
    ctosa_graph *g = NULL;
    CHECK_OK(ctosa_read_file(DATA "external.tosa", NULL, &g));
    if (!g) return;
    ctosa_file_info fi = ctosa_graph_file_info(g);
    CHECK(fi.external_data && fi.file_size == 4176 && fi.flatbuffer_size == 4096);
    CHECK(fi.min_data_alignment == 64 && fi.constant_bytes == 32);
    ctosa_block *b = main_block(g);
    ctosa_tensor *w = ctosa_block_find_tensor(g, b, "w");
    ctosa_tensor *bb = ctosa_block_find_tensor(g, b, "b");
    CHECK(w && (const uint8_t *)w->data.ptr == g->map.data + 4096 && w->data.size == 16);
    CHECK(bb && (const uint8_t *)bb->data.ptr == g->map.data + 4160);
    if (bb && bb->data.ptr) {
        int32_t x[4];
        memcpy(x, bb->data.ptr, 16);
        CHECK(x[0] == -1 && x[3] == -4);
    }
    check_zero_copy(g, g->map.data, g->map.size);
    ctosa_graph_free(g);
}

static void test_refused_versions(void) {
    ctosa_graph *g = NULL;
    CHECK_ERR(ctosa_read_file(DATA "v080.tosa", NULL, &g), CTOSA_ERR_UNSUPPORTED,
              "TOSA version 0.80.0 uses pre-1.0 numbering and is not supported");
    CHECK(g == NULL);
    CHECK_ERR(ctosa_read_file(DATA "oldnum_data.tosa", NULL, &g), CTOSA_ERR_UNSUPPORTED,
              "pre-1.0-final numbering");
    CHECK_ERR(ctosa_read_file(DATA "oldnum_yield.tosa", NULL, &g), CTOSA_ERR_UNSUPPORTED, "YIELD");
    CHECK_ERR(ctosa_read_file(DATA "does-not-exist.tosa", NULL, &g), CTOSA_ERR_IO, "does-not-exist.tosa");
}

static void test_identifier(void) {
    size_t n;
    unsigned char *buf = th_read(DATA "small.tosa", &n);
    CHECK(buf && n > 8);
    if (!buf) return;
    memcpy(buf + 4, "XXXX", 4);
    ctosa_graph *g = NULL;
    CHECK_OK(ctosa_read_memory(buf, n, "noid.tosa", NULL, &g));
    CHECK(g && !ctosa_graph_file_info(g).has_identifier && main_block(g)->n_ops == 6);
    ctosa_graph_free(g);
    ctosa_read_options opt;
    ctosa_read_options_init(&opt);
    opt.require_identifier = true;
    CHECK_ERR(ctosa_read_memory(buf, n, "noid.tosa", &opt, &g), CTOSA_ERR_FORMAT,
              "noid.tosa: byte 4: file identifier");
    free(buf);
}

/* --------------------------------------------------- write -> read */

static int same_str(const char *a, const char *b) {
    return (!a && !b) || (a && b && strcmp(a, b) == 0) || (!a && b && !*b) || (a && !*a && !b);
}

static int same_tensor(const ctosa_tensor *a, const ctosa_tensor *b) {
    if (strcmp(a->name, b->name) || a->dtype != b->dtype || a->rank != b->rank ||
        a->is_shape != b->is_shape || a->variable != b->variable || a->is_unranked != b->is_unranked ||
        !same_str(a->variable_name, b->variable_name))
        return 0;
    for (uint32_t i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    if ((a->data.kind == CTOSA_DATA_NONE) != (b->data.kind == CTOSA_DATA_NONE)) return 0;
    if (a->data.kind == CTOSA_DATA_NONE) return 1;
    return a->data.size == b->data.size && memcmp(a->data.ptr, b->data.ptr, a->data.size) == 0;
}

static int same_op(const ctosa_op *a, const ctosa_op *b) {
    if (a->kind != b->kind || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs ||
        !same_str(a->location, b->location))
        return 0;
    for (uint32_t i = 0; i < a->n_inputs; i++)
        if (strcmp(a->inputs[i], b->inputs[i])) return 0;
    for (uint32_t i = 0; i < a->n_outputs; i++)
        if (strcmp(a->outputs[i], b->outputs[i])) return 0;
    uint32_t nf;
    const ctosa_attr_field *f = ctosa_op_attr_fields(a->kind, &nf);
    for (uint32_t i = 0; i < nf; i++) {
        const char *x = (const char *)&a->attr + f[i].offset, *y = (const char *)&b->attr + f[i].offset;
        switch (f[i].kind) {
        case CTOSA_FIELD_I32:
        case CTOSA_FIELD_ENUM:
        case CTOSA_FIELD_DTYPE:
            if (memcmp(x, y, 4)) return 0;
            break;
        case CTOSA_FIELD_BOOL:
            if (*(const bool *)x != *(const bool *)y) return 0;
            break;
        case CTOSA_FIELD_I32_VEC: {
            const ctosa_i32s *u = (const ctosa_i32s *)x, *w = (const ctosa_i32s *)y;
            if (u->n != w->n || (u->n && memcmp(u->v, w->v, 4 * u->n))) return 0;
            break;
        }
        case CTOSA_FIELD_BYTES: {
            const ctosa_bytes *u = (const ctosa_bytes *)x, *w = (const ctosa_bytes *)y;
            if (u->n != w->n || (u->n && memcmp(u->p, w->p, u->n))) return 0;
            break;
        }
        case CTOSA_FIELD_STRING:
            if (!same_str(*(const char *const *)x, *(const char *const *)y)) return 0;
            break;
        }
    }
    return 1;
}

static int same_names(const char **a, const char **b, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(a[i], b[i])) return 0;
    return 1;
}

/* Deep comparison; reports the first difference. */
static int same_graph(const ctosa_graph *a, const ctosa_graph *b) {
    ctosa_version va = ctosa_graph_version(a), vb = ctosa_graph_version(b);
    ctosa_software_version sa = ctosa_graph_software_version(a), sb = ctosa_graph_software_version(b);
    if (sa.present != sb.present ||
        (sa.present && (sa.major != sb.major || sa.minor != sb.minor || sa.micro != sb.micro ||
                        !same_str(sa.modifier, sb.modifier)))) {
        fprintf(stderr, "software version differs\n");
        return 0;
    }
    if (va.major != vb.major || va.minor != vb.minor || va.patch != vb.patch || va.draft != vb.draft) {
        fprintf(stderr, "version %d.%d.%d%s vs %d.%d.%d%s\n", va.major, va.minor, va.patch,
                va.draft ? " draft" : "", vb.major, vb.minor, vb.patch, vb.draft ? " draft" : "");
        return 0;
    }
    if (ctosa_graph_region_count(a) != ctosa_graph_region_count(b)) return 0;
    for (uint32_t ri = 0; ri < ctosa_graph_region_count(a); ri++) {
        ctosa_region *ra = ctosa_graph_region(a, ri), *rb = ctosa_graph_region(b, ri);
        if (strcmp(ra->name, rb->name) || ra->n_blocks != rb->n_blocks) return 0;
        for (uint32_t bi = 0; bi < ra->n_blocks; bi++) {
            ctosa_block *x = ra->blocks[bi], *y = rb->blocks[bi];
            if (strcmp(x->name, y->name) || x->n_ops != y->n_ops || x->n_tensors != y->n_tensors ||
                x->n_shapes != y->n_shapes || x->n_inputs != y->n_inputs || x->n_outputs != y->n_outputs ||
                !same_names(x->inputs, y->inputs, x->n_inputs) ||
                !same_names(x->outputs, y->outputs, x->n_outputs)) {
                fprintf(stderr, "block '%s' differs\n", x->name);
                return 0;
            }
            for (uint32_t i = 0; i < x->n_tensors; i++)
                if (!same_tensor(x->tensors[i], y->tensors[i])) {
                    fprintf(stderr, "tensor %s differs\n", x->tensors[i]->name);
                    return 0;
                }
            for (uint32_t i = 0; i < x->n_shapes; i++)
                if (!same_tensor(x->shapes[i], y->shapes[i])) {
                    fprintf(stderr, "shape %s differs\n", x->shapes[i]->name);
                    return 0;
                }
            for (uint32_t i = 0; i < x->n_ops; i++)
                if (!same_op(x->ops[i], y->ops[i])) {
                    fprintf(stderr, "op #%u differs\n", i);
                    return 0;
                }
        }
    }
    return 1;
}

static void roundtrip_one(const char *path) {
    ctosa_graph *g = NULL, *h = NULL;
    CHECK_OK(ctosa_read_file(path, NULL, &g));
    if (!g) return;
    for (int layout = 0; layout < 2; layout++) {
        ctosa_write_options wo;
        ctosa_write_options_init(&wo);
        wo.layout = layout ? CTOSA_LAYOUT_EXTERNAL : CTOSA_LAYOUT_INLINE;
        void *buf = NULL;
        size_t n = 0;
        CHECK_OK(ctosa_write_memory(g, &wo, &buf, &n));
        if (!buf) continue;
        CHECK_OK(ctosa_read_memory(buf, n, path, NULL, &h));
        if (h) {
            CHECK_MSG(same_graph(g, h), "%s: round trip (%s) differs", path, layout ? "external" : "inline");
            ctosa_file_info fi = ctosa_graph_file_info(h);
            CHECK(fi.has_identifier);
            /* TosaShape data has no offset field: only tensors go external */
            CHECK(fi.external_data == (layout == 1 && count_tensor_constants(g) > 0));
            CHECK(fi.min_data_alignment == 0 || fi.min_data_alignment >= 8);
            check_zero_copy(h, buf, n);
            ctosa_graph_free(h);
            h = NULL;
        }
        free(buf);
    }
    ctosa_graph_free(g);
}

static void test_roundtrip(void) {
    roundtrip_one(DATA "small.tosa");
    roundtrip_one(DATA "v11.tosa");
    roundtrip_one(DATA "external.tosa");
    for (size_t k = 0; k < CTOSA_ARRAY_LEN(examples); k++) roundtrip_one(th_shared_path(examples[k]));
}

/* Open + verify + walk every tensor of a graph with 200 constants and 2000
 * operators: the budget is 100 ms (no per-byte work on constant data). */
/* A 2000-operator file reads, verifies and walks correctly; the time is
 * printed for information; bench/bench_serialize measures reading. */
static void test_read_large(void) {
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    ctosa_region *r;
    ctosa_block *b;
    CHECK_OK(ctosa_graph_add_region(g, "main", &r));
    CHECK_OK(ctosa_region_add_block(g, r, "main", &b));
    static float data[4096];
    int32_t shp[2] = {64, 64};
    char name[32], name2[32], name3[32];
    CHECK_OK(ctosa_block_add_tensor(g, b, "x", CTOSA_DTYPE_FP32, 2, shp, NULL));
    CHECK_OK(ctosa_block_add_input(g, b, "x"));
    for (int i = 0; i < 200; i++) {
        ctosa_tensor *t;
        snprintf(name, sizeof name, "c%d", i);
        CHECK_OK(ctosa_block_add_tensor(g, b, name, CTOSA_DTYPE_FP32, 2, shp, &t));
        CHECK_OK(ctosa_tensor_set_data(g, t, data, sizeof data, false));
        const char *out[] = {name};
        CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_CONST, 0, NULL, 1, out, NULL, NULL));
    }
    for (int i = 0; i < 1800; i++) {
        snprintf(name, sizeof name, "t%d", i);
        snprintf(name2, sizeof name2, i ? "t%d" : "x", i - 1);
        snprintf(name3, sizeof name3, "c%d", i % 200);
        CHECK_OK(ctosa_block_add_tensor(g, b, name, CTOSA_DTYPE_FP32, 2, shp, NULL));
        const char *in[] = {name2, name3}, *out[] = {name};
        CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_ADD, 2, in, 1, out, NULL, NULL));
    }
    CHECK_OK(ctosa_block_add_output(g, b, "t1799"));
    const char *path = th_path(th_tmpdir(), "speed.tosa");
    CHECK_OK(ctosa_write_file(g, path, NULL));
    ctosa_graph_free(g);
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_seconds();
        ctosa_graph *h = NULL;
        CHECK_OK(ctosa_read_file(path, NULL, &h));
        if (!h) return;
        uint64_t sum = 0;
        ctosa_block *hb = main_block(h);
        for (uint32_t i = 0; i < hb->n_tensors; i++) {
            ctosa_tensor *t = hb->tensors[i];
            sum += t->rank + t->data.size + (t->data.ptr ? 1 : 0);
        }
        for (uint32_t i = 0; i < hb->n_ops; i++) sum += hb->ops[i]->n_inputs;
        ctosa_graph_free(h);
        double dt = now_seconds() - t0;
        if (dt < best) best = dt;
        CHECK(sum == 2001 * 2 + 200 * (sizeof data + 1) + 1800 * 2);
    }
    printf("read+verify+walk of 2000 ops / 200 constants (%.1f MB): %.2f ms\n", 200.0 * sizeof data / 1e6,
           best * 1e3);
}

/* The exact content of `ctosa dump` (text and JSON) and `ctosa info --json`
 * for the committed inputs. */
static void test_cli_output(void) {
    char *out = NULL;
    int rc = th_run(&out, "'%s' dump '%s'", th_ctosa(), DATA "small.tosa");
    CHECK_MSG(rc == 0 && out, "rc %d", rc);
    static const char *lines[] = {"small.tosa: TOSA 1.0.0\n",
                                  "      w: fp32[2,2]  const 16 B = [1, 2, 3, 4]\n",
                                  "      v: int8[3] variable 'state'  const 3 B = [1, -1, 7]\n",
                                  "      s: shape[1]  const 8 B = [4]\n",
                                  "      #2 ADD (x, w) -> (y)  @ loc(\"add0\")\n",
                                  "      #3 CLAMP (y) -> (c) min_val=0 max_val=6 nan_mode=PROPAGATE\n",
                                  ("      #5 CUSTOM (z) -> (out) operator_name=my_op domain_name=ctosa.test "
                                   "implementation_attrs=\"k=v\"\n")};
    for (size_t i = 0; out && i < CTOSA_ARRAY_LEN(lines); i++)
        CHECK_MSG(strstr(out, lines[i]) != NULL, "dump lacks: %s", lines[i]);
    free(out);
    if (access("/usr/bin/python3", X_OK) != 0) {
        printf("note: /usr/bin/python3 absent, JSON content checks skipped\n");
        return;
    }
    rc = th_run(
        &out,
        "'%s' dump --format json '%s' | /usr/bin/python3 -c '"
        "import json,sys; d=json.load(sys.stdin); b=d[\"regions\"][0][\"blocks\"][0]; "
        "ops=b[\"operators\"]; t={x[\"name\"]: x for x in b[\"tensors\"]}; "
        "assert d[\"version\"]=={\"major\":1,\"minor\":0,\"patch\":0,\"draft\":False}; "
        "assert ops[3][\"attributes\"]=={\"min_val\":0,\"max_val\":6,\"nan_mode\":\"PROPAGATE\"}, ops[3]; "
        "assert ops[5][\"attributes\"][\"implementation_attrs\"]==\"k=v\"; "
        "assert ops[2][\"location\"]==\"loc(\\\"add0\\\")\", ops[2]; "
        "assert t[\"v\"][\"data\"]=={\"bytes\":3,\"elements\":3,\"values\":[1,-1,7],\"truncated\":False}; "
        "assert t[\"v\"][\"variable\"] and t[\"v\"][\"variable_name\"]==\"state\"; "
        "assert \"data\" not in t[\"x\"] and t[\"x\"][\"shape\"]==[2,2] and t[\"x\"][\"dtype\"]==\"FP32\"; "
        "assert b[\"shapes\"][0]=={\"name\":\"s\",\"dtype\":\"SHAPE\",\"rank\":1,"
        "\"data\":{\"bytes\":8,\"elements\":1,\"values\":[4],\"truncated\":False}}'",
        th_ctosa(), DATA "small.tosa");
    CHECK_MSG(rc == 0, "dump json content: %s", out ? out : "");
    free(out);
    rc = th_run(&out,
                "'%s' info --json '%s' | /usr/bin/python3 -c '"
                "import json,sys; d=json.load(sys.stdin); "
                "assert d[\"layout\"]==\"external\" and d[\"file_size\"]==4176 and "
                "d[\"flatbuffer_size\"]==4096 and d[\"min_data_alignment\"]==64, d; "
                "assert d[\"operator_counts\"]=={\"ADD\":1,\"CONST\":2}, d; "
                "assert d[\"constants\"]==2 and d[\"constant_bytes\"]==32 and d[\"identifier\"], d; "
                "assert d[\"software_version\"] is None and d[\"tensors\"]==3'",
                th_ctosa(), DATA "external.tosa");
    CHECK_MSG(rc == 0, "info json content: %s", out ? out : "");
    free(out);
    rc = th_run(
        &out,
        "'%s' info --json '%s' | /usr/bin/python3 -c '"
        "import json,sys; d=json.load(sys.stdin); "
        "assert d[\"software_version\"]=={\"major\":0,\"minor\":1,\"micro\":0,\"modifier\":\"ctosa-test\"}, "
        "d; "
        "assert d[\"version\"][\"draft\"] and d[\"layout\"]==\"inline\" and d[\"shapes\"]==1, d'",
        th_ctosa(), DATA "v11.tosa");
    CHECK_MSG(rc == 0, "info json (1.1): %s", out ? out : "");
    free(out);
}

int main(void) {
    RUN(test_small);
    RUN(test_v11);
    RUN(test_external);
    RUN(test_refused_versions);
    RUN(test_identifier);
    RUN(test_read_large);
    RUN(test_examples_read);
    RUN(test_example_add);
    RUN(test_example_conv_f32);
    RUN(test_example_conv_qi8);
    RUN(test_example_lstm);
    RUN(test_cli_output);
    RUN(test_examples_dump_json);
    RUN(test_roundtrip);
    return th_finish();
}
