/* test_flatc_compat.c - what the writer produces, decoded by an independent
 * flatbuffers implementation: Debian's flatc with the official TOSA schemas
 * (../shared/reference/tosa/schema). Every operator with every attribute
 * field set to a non-default value, tensors of every dtype with data,
 * shapes, variables, OpLocation, several regions/blocks, empty blocks,
 * SoftwareVersion, and the external layout.
 *
 * The test builds the JSON that flatc must print (from the graph, in schema
 * field order) and compares it with flatc's output, ignoring whitespace.
 * Skips visibly when flatc or ../shared is missing. */
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"
#include "writer_testutil.h"

static const char *schema_10, *schema_11;

/* ------------------------------------------------------- expected JSON */

static void j_names(strbuf *b, uint32_t n, const char **names) {
    sb_putc(b, '[');
    for (uint32_t i = 0; i < n; i++) {
        if (i) sb_putc(b, ',');
        sb_json_str(b, names[i]);
    }
    sb_putc(b, ']');
}

static void j_bytes(strbuf *b, const uint8_t *p, uint64_t n) {
    sb_putc(b, '[');
    for (uint64_t i = 0; i < n; i++) sb_printf(b, "%s%u", i ? "," : "", p[i]);
    sb_putc(b, ']');
}

static void j_attr(strbuf *b, const ctosa_op *op) {
    uint32_t n;
    const ctosa_attr_field *f = ctosa_op_attr_fields(op->kind, &n);
    sb_putc(b, '{');
    for (uint32_t i = 0; i < n; i++) {
        const char *p = (const char *)&op->attr + f[i].offset;
        sb_printf(b, "%s\"%s\":", i ? "," : "", f[i].name);
        switch (f[i].kind) {
        case CTOSA_FIELD_I32: sb_printf(b, "%d", *(const int32_t *)p); break;
        case CTOSA_FIELD_BOOL: sb_puts(b, *(const bool *)p ? "true" : "false"); break;
        case CTOSA_FIELD_ENUM:
            sb_json_str(b, ctosa_enum_value_name(f[i].enum_type, *(const uint32_t *)p));
            break;
        case CTOSA_FIELD_DTYPE: sb_json_str(b, ctosa_dtype_name(*(const ctosa_dtype *)p)); break;
        case CTOSA_FIELD_I32_VEC: {
            const ctosa_i32s *v = (const ctosa_i32s *)p;
            sb_putc(b, '[');
            for (uint32_t k = 0; k < v->n; k++) sb_printf(b, "%s%d", k ? "," : "", v->v[k]);
            sb_putc(b, ']');
            break;
        }
        case CTOSA_FIELD_BYTES: {
            const ctosa_bytes *v = (const ctosa_bytes *)p;
            j_bytes(b, v->p, v->n);
            break;
        }
        case CTOSA_FIELD_STRING: {
            const char *s = *(const char *const *)p;
            sb_json_str(b, s ? s : "");
            break;
        }
        }
    }
    sb_putc(b, '}');
}

/* ext: offsets/sizes per tensor in file order (NULL: inline layout). */
static void j_graph(strbuf *b, const ctosa_graph *g, const nav_data *ext) {
    ctosa_version v = ctosa_graph_version(g);
    sb_printf(b, "{\"version\":{\"_major\":%d,\"_minor\":%d,\"_patch\":%d,\"_draft\":%s},", v.major, v.minor,
              v.patch, v.draft ? "true" : "false");
    sb_puts(b, "\"regions\":[");
    uint32_t ti = 0;
    for (uint32_t r = 0; r < ctosa_graph_region_count(g); r++) {
        const ctosa_region *rg = ctosa_graph_region(g, r);
        sb_printf(b, "%s{\"name\":", r ? "," : "");
        sb_json_str(b, rg->name);
        sb_puts(b, ",\"blocks\":[");
        for (uint32_t k = 0; k < rg->n_blocks; k++) {
            const ctosa_block *bl = rg->blocks[k];
            sb_printf(b, "%s{\"name\":", k ? "," : "");
            sb_json_str(b, bl->name);
            sb_puts(b, ",\"operators\":[");
            for (uint32_t i = 0; i < bl->n_ops; i++) {
                const ctosa_op *op = bl->ops[i];
                sb_printf(b, "%s{\"op\":\"%s\",\"attribute_type\":\"%s\",\"attribute\":", i ? "," : "",
                          ctosa_op_name(op->kind), ctosa_op_attr_table(op->kind));
                j_attr(b, op);
                sb_puts(b, ",\"inputs\":");
                j_names(b, op->n_inputs, op->inputs);
                sb_puts(b, ",\"outputs\":");
                j_names(b, op->n_outputs, op->outputs);
                if (op->location) {
                    sb_puts(b, ",\"location\":{\"text\":");
                    sb_json_str(b, op->location);
                    sb_putc(b, '}');
                }
                sb_putc(b, '}');
            }
            sb_puts(b, "],\"tensors\":[");
            for (uint32_t i = 0; i < bl->n_tensors; i++, ti++) {
                const ctosa_tensor *t = bl->tensors[i];
                sb_printf(b, "%s{\"name\":", i ? "," : "");
                sb_json_str(b, t->name);
                sb_puts(b, ",\"shape\":[");
                for (uint32_t d = 0; d < t->rank; d++) sb_printf(b, "%s%d", d ? "," : "", t->shape[d]);
                sb_printf(b, "],\"type\":\"%s\",\"data\":", ctosa_dtype_name(t->dtype));
                bool has = t->data.kind == CTOSA_DATA_MEMORY && t->data.size > 0;
                j_bytes(b, t->data.ptr, has && !ext ? t->data.size : 0);
                sb_printf(b, ",\"variable\":%s,\"is_unranked\":%s", t->variable ? "true" : "false",
                          t->is_unranked ? "true" : "false");
                if (t->variable_name) {
                    sb_puts(b, ",\"variable_name\":");
                    sb_json_str(b, t->variable_name);
                }
                sb_printf(b, ",\"offset\":%llu,\"size\":%llu}",
                          (unsigned long long)(ext && has ? ext[ti].offset : 0),
                          (unsigned long long)(ext && has ? t->data.size : 0));
            }
            sb_puts(b, "],\"inputs\":");
            j_names(b, bl->n_inputs, bl->inputs);
            sb_puts(b, ",\"outputs\":");
            j_names(b, bl->n_outputs, bl->outputs);
            sb_puts(b, ",\"shapes\":[");
            for (uint32_t i = 0; i < bl->n_shapes; i++, ti++) {
                const ctosa_tensor *t = bl->shapes[i];
                sb_printf(b, "%s{\"name\":", i ? "," : "");
                sb_json_str(b, t->name);
                sb_printf(b, ",\"rank\":%d,\"data\":", t->shape[0]);
                /* a constant empty shape [] is written with one dummy int64 (zero) */
                static const uint8_t dummy[8];
                if (t->data.kind != CTOSA_DATA_NONE && t->data.size == 0) j_bytes(b, dummy, sizeof dummy);
                else j_bytes(b, t->data.ptr, t->data.kind == CTOSA_DATA_MEMORY ? t->data.size : 0);
                sb_putc(b, '}');
            }
            sb_puts(b, "]}");
        }
        sb_puts(b, "]}");
    }
    sb_putc(b, ']');
    ctosa_software_version sv = ctosa_graph_software_version(g);
    if (sv.present && ctosa_version_key(v) >= 11) {
        sb_printf(b, ",\"software_version\":{\"_major\":%d,\"_minor\":%d,\"_micro\":%d", sv.major, sv.minor,
                  sv.micro);
        if (sv.modifier) {
            sb_puts(b, ",\"_modifier\":");
            sb_json_str(b, sv.modifier);
        }
        sb_putc(b, '}');
    }
    sb_putc(b, '}');
}

/* Removes whitespace outside string literals. */
static char *squeeze(const char *s) {
    char *o = malloc(strlen(s) + 1), *q = o;
    bool in = false;
    for (; *s; s++) {
        if (in) {
            *q++ = *s;
            if (*s == '\\' && s[1]) *q++ = *++s;
            else if (*s == '"') in = false;
        } else if (*s == '"') {
            in = true;
            *q++ = *s;
        } else if (*s != ' ' && *s != '\n' && *s != '\r' && *s != '\t') {
            *q++ = *s;
        }
    }
    *q = 0;
    return o;
}

/* Writes g, decodes it with flatc and compares with the expected JSON. */
static void check_with_flatc(const ctosa_graph *g, const char *name, const ctosa_write_options *opt) {
    const char *dir = th_tmpdir();
    char path[1024], json[1024];
    snprintf(path, sizeof path, "%s/%s.tosa", dir, name);
    snprintf(json, sizeof json, "%s/%s.json", dir, name);
    CHECK_OK(ctosa_write_file(g, path, opt));
    size_t fsize;
    uint8_t *file = th_read(path, &fsize);
    CHECK(file && fsize > 8 && memcmp(file + 4, "TOSA", 4) == 0);
    bool ext = opt && opt->layout == CTOSA_LAYOUT_EXTERNAL;
    nav_data nd[256];
    if (file && ext) CHECK(nav_tensors(file, nd, 256) <= 256);
    free(file);
    const char *schema = ctosa_version_key(ctosa_graph_version(g)) >= 11 ? schema_11 : schema_10;
    char *out = NULL;
    int rc = th_run(&out, "flatc --json --raw-binary --strict-json --defaults-json -o '%s' '%s' -- '%s'", dir,
                    schema, path);
    CHECK_MSG(rc == 0, "flatc failed (%d): %s", rc, out ? out : "");
    free(out);
    char *got = (char *)th_read(json, &fsize);
    CHECK_MSG(got != NULL, "no flatc output %s", json);
    if (!got) return;
    char *g2 = realloc(got, fsize + 1);
    g2[fsize] = 0;
    strbuf exp;
    sb_init(&exp);
    j_graph(&exp, g, ext ? nd : NULL);
    char *a = squeeze(g2), *e = squeeze(exp.s ? exp.s : "");
    size_t i = 0;
    while (a[i] && a[i] == e[i]) i++;
    bool same = a[i] == 0 && e[i] == 0;
    CHECK_MSG(same, "%s: flatc output differs at char %zu:\n  flatc:    ...%.160s\n  expected: ...%.160s",
              name, i, a + (i > 60 ? i - 60 : 0), e + (i > 60 ? i - 60 : 0));
    free(a);
    free(e);
    free(g2);
    sb_free(&exp);
    unlink(json);
    unlink(path);
}

/* ------------------------------------------------------------- graphs */

static void test_every_operator(void) {
    ctosa_graph *g = tu_every_op_graph();
    check_with_flatc(g, "every_op", NULL);
    ctosa_graph_free(g);
}

static void test_tensors_and_structure(void) {
    ctosa_graph *g = tu_tensor_graph(CTOSA_VERSION_1_1_DRAFT);
    check_with_flatc(g, "tensors11", NULL);
    ctosa_write_options o;
    ctosa_write_options_init(&o);
    o.layout = CTOSA_LAYOUT_EXTERNAL;
    check_with_flatc(g, "tensors11_ext", &o);
    ctosa_graph_free(g);

    g = tu_tensor_graph(CTOSA_VERSION_1_0);
    /* software_version is 1.1 only: set but not written for 1.0 */
    CHECK_OK(ctosa_graph_set_software_version(g, 1, 2, 3, NULL));
    check_with_flatc(g, "tensors10", NULL);
    check_with_flatc(g, "tensors10_ext", &o);
    ctosa_graph_free(g);
}

static void test_versions(void) {
    /* 1.0: draft=false written; flatc without --defaults-json must still
     * print _draft (the default is true, so it has to be in the file). */
    ctosa_graph *g;
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &g));
    tu_main(g);
    const char *p = th_path(th_tmpdir(), "v10.tosa");
    CHECK_OK(ctosa_write_file(g, p, NULL));
    char *out = NULL;
    int rc = th_run(&out,
                    "flatc --json --raw-binary --strict-json -o '%s' '%s' -- '%s' && "
                    "tr -d ' \\n' < '%s'",
                    th_tmpdir(), schema_10, p, th_path(th_tmpdir(), "v10.json"));
    CHECK(rc == 0);
    CHECK_MSG(out && strstr(out, "\"version\":{\"_major\":1,\"_minor\":0,\"_patch\":0,\"_draft\":false}"),
              "%s", out ? out : "");
    free(out);
    ctosa_graph_free(g);
    /* 1.1 draft, no software version */
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_1_DRAFT, &g));
    tu_main(g);
    check_with_flatc(g, "v11", NULL);
    ctosa_graph_free(g);
}

int main(void) {
    const char *shared = th_shared_dir();
    if (!shared) th_skip("../shared is not beside the source tree (TOSA schemas needed)");
    if (!th_have("flatc")) th_skip("flatc not installed (Debian package flatbuffers-compiler)");
    static char s10[1024], s11[1024];
    snprintf(s10, sizeof s10, "%s/reference/tosa/schema/tosa-1.0.fbs", shared);
    snprintf(s11, sizeof s11, "%s/reference/tosa/schema/tosa-1.1-draft.fbs", shared);
    schema_10 = s10;
    schema_11 = s11;
    RUN(test_every_operator);
    RUN(test_tensors_and_structure);
    RUN(test_versions);
    return th_finish();
}
