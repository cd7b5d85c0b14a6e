/* cmd_info.c - `ctosa info MODEL.tosa [--json]`: a one-screen summary of a
 * TOSA file (version, sizes, layout, counts, operators by kind). */
#include <string.h>

#include "cli.h"
#include "util/util.h"

typedef struct counts {
    uint32_t regions, blocks, ops, tensors, shapes, constants, variables;
    uint32_t by_kind[CTOSA_OP_COUNT];
} counts;

static void count(const ctosa_graph *g, counts *c) {
    memset(c, 0, sizeof *c);
    c->regions = ctosa_graph_region_count(g);
    for (uint32_t ri = 0; ri < c->regions; ri++) {
        const ctosa_region *r = ctosa_graph_region(g, ri);
        c->blocks += r->n_blocks;
        for (uint32_t bi = 0; bi < r->n_blocks; bi++) {
            const ctosa_block *b = r->blocks[bi];
            c->ops += b->n_ops;
            c->tensors += b->n_tensors;
            c->shapes += b->n_shapes;
            for (uint32_t i = 0; i < b->n_ops; i++)
                if ((unsigned)b->ops[i]->kind < CTOSA_OP_COUNT) c->by_kind[b->ops[i]->kind]++;
            for (uint32_t i = 0; i < b->n_tensors; i++) {
                c->constants += b->tensors[i]->data.kind != CTOSA_DATA_NONE;
                c->variables += b->tensors[i]->variable;
            }
            for (uint32_t i = 0; i < b->n_shapes; i++)
                c->constants += b->shapes[i]->data.kind != CTOSA_DATA_NONE;
        }
    }
}

static void info_json(strbuf *b, const ctosa_graph *g, const char *path, const counts *c) {
    ctosa_version v = ctosa_graph_version(g);
    ctosa_file_info fi = ctosa_graph_file_info(g);
    ctosa_software_version sw = ctosa_graph_software_version(g);
    sb_puts(b, "{\n  \"file\": ");
    sb_json_str(b, path);
    sb_printf(b, ",\n  \"version\": {\"major\": %d, \"minor\": %d, \"patch\": %d, \"draft\": %s}", v.major,
              v.minor, v.patch, v.draft ? "true" : "false");
    if (sw.present) {
        sb_printf(b,
                  ",\n  \"software_version\": {\"major\": %d, \"minor\": %d, \"micro\": %d, "
                  "\"modifier\": ",
                  sw.major, sw.minor, sw.micro);
        if (sw.modifier) sb_json_str(b, sw.modifier);
        else sb_puts(b, "null");
        sb_putc(b, '}');
    } else {
        sb_puts(b, ",\n  \"software_version\": null");
    }
    sb_printf(b,
              ",\n  \"file_size\": %llu,\n  \"flatbuffer_size\": %llu,\n  \"identifier\": %s,"
              "\n  \"layout\": \"%s\",\n  \"min_data_alignment\": %u,"
              "\n  \"regions\": %u,\n  \"blocks\": %u,\n  \"operators\": %u,\n  \"tensors\": %u,"
              "\n  \"shapes\": %u,\n  \"constants\": %u,\n  \"variables\": %u,"
              "\n  \"constant_bytes\": %llu,\n  \"operator_counts\": {",
              (unsigned long long)fi.file_size, (unsigned long long)fi.flatbuffer_size,
              fi.has_identifier ? "true" : "false", fi.external_data ? "external" : "inline",
              fi.min_data_alignment, c->regions, c->blocks, c->ops, c->tensors, c->shapes, c->constants,
              c->variables, (unsigned long long)fi.constant_bytes);
    bool first = true;
    for (int k = 1; k < CTOSA_OP_COUNT; k++) {
        if (!c->by_kind[k]) continue;
        sb_printf(b, "%s\"%s\": %u", first ? "" : ", ", ctosa_op_name((ctosa_op_kind)k), c->by_kind[k]);
        first = false;
    }
    sb_puts(b, "}\n}\n");
}

static void info_text(strbuf *b, const ctosa_graph *g, const char *path, const counts *c) {
    ctosa_version v = ctosa_graph_version(g);
    ctosa_file_info fi = ctosa_graph_file_info(g);
    ctosa_software_version sw = ctosa_graph_software_version(g);
    sb_printf(b, "file:              %s\n", path);
    sb_printf(b, "TOSA version:      %d.%d.%d%s\n", v.major, v.minor, v.patch, v.draft ? " draft" : "");
    if (sw.present)
        sb_printf(b, "software version:  %d.%d.%d%s%s\n", sw.major, sw.minor, sw.micro,
                  sw.modifier ? " " : "", sw.modifier ? sw.modifier : "");
    else sb_puts(b, "software version:  (not recorded)\n");
    sb_printf(b, "file size:         %llu bytes\n", (unsigned long long)fi.file_size);
    sb_printf(b, "flatbuffer size:   %llu bytes\n", (unsigned long long)fi.flatbuffer_size);
    sb_printf(b, "identifier:        %s\n", fi.has_identifier ? "TOSA" : "(missing)");
    sb_printf(b, "layout:            %s\n",
              fi.external_data ? "external (offset/size segments after the flatbuffer)"
                               : "inline (data inside the flatbuffer)");
    if (fi.min_data_alignment)
        sb_printf(b, "data alignment:    %u bytes (smallest seen)\n", fi.min_data_alignment);
    else sb_puts(b, "data alignment:    (no constant data)\n");
    sb_printf(b, "regions:           %u\nblocks:            %u\noperators:         %u\n", c->regions,
              c->blocks, c->ops);
    sb_printf(b, "tensors:           %u (%u variable)\nshapes:            %u\n", c->tensors, c->variables,
              c->shapes);
    sb_printf(b, "constants:         %u (%llu bytes)\n", c->constants, (unsigned long long)fi.constant_bytes);
    sb_puts(b, "operators by kind:\n");
    for (int k = 1; k < CTOSA_OP_COUNT; k++)
        if (c->by_kind[k]) sb_printf(b, "  %-24s %u\n", ctosa_op_name((ctosa_op_kind)k), c->by_kind[k]);
}

static void help(void) {
    printf("usage: ctosa info MODEL.tosa [--json] [--require-identifier]\n\n"
           "Summarises a TOSA flatbuffer: version (and software version), file and flatbuffer\n"
           "size, identifier, data layout (inline/external) and smallest data alignment,\n"
           "numbers of regions, blocks, operators, tensors, shapes and constants, constant\n"
           "bytes and operator counts by kind. The file is verified completely first.\n\n"
           "options:\n"
           "  --json                  print JSON instead of text\n"
           "  --require-identifier    reject files without the \"TOSA\" file identifier\n"
           "  -h, --help              this help\n");
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    bool json = false;
    ctosa_read_options opt;
    ctosa_read_options_init(&opt);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            help();
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--require-identifier") == 0) {
            opt.require_identifier = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage("info", "unknown option '%s'", argv[i]);
        } else if (path) {
            return cli_usage("info", "more than one model given ('%s' and '%s')", path, argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path) return cli_usage("info", "no model given");
    ctosa_graph *g;
    ctosa_error *e = ctosa_read_file(path, &opt, &g);
    if (e) return cli_fail("info", e);
    counts c;
    count(g, &c);
    strbuf b;
    sb_init(&b);
    if (json) info_json(&b, g, path, &c);
    else info_text(&b, g, path, &c);
    ctosa_graph_free(g);
    if (b.failed) {
        sb_free(&b);
        return cli_fail("info", ctosa_error_nomem());
    }
    bool ok = fwrite(b.s, 1, b.len, stdout) == b.len && fflush(stdout) == 0;
    sb_free(&b);
    if (!ok) return cli_fail("info", ctosa_error_new(CTOSA_ERR_IO, "writing to stdout failed"));
    return 0;
}
