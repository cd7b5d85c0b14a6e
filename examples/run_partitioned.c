/* run_partitioned.c - runs a partitioned model (ctosa lower's
 * <stem>.partitioned.onnx) on the counting example backend and prints the
 * outputs' first values and how often each partition ran.
 *
 *     ctosa lower model.onnx --spec TOSA-1.0+INT -o out
 *     ctosa_example_run_partitioned out/model.partitioned.onnx x=input.npy
 */
#include <stdio.h>
#include <string.h>

#include "counting_backend.h"

static int fail(ctosa_error *e) {
    fprintf(stderr, "%s\n", ctosa_error_message(e));
    int code = ctosa_error_exit_code(e);
    ctosa_error_free(e);
    return code;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.partitioned.onnx [NAME=FILE.npy]...\n", argv[0]);
        return 2;
    }
    counting_backend cb;
    counting_backend_init(&cb);
    ctosa_runtime_options opt;
    ctosa_runtime_options_init(&opt);
    opt.backend = &cb.backend;
    ctosa_runtime *rt;
    ctosa_error *e = ctosa_runtime_load(argv[1], &opt, &rt);
    if (e) return fail(e);
    for (int i = 2; i < argc && !e; i++) {
        char name[256];
        const char *eq = strchr(argv[i], '=');
        if (!eq || (size_t)(eq - argv[i]) >= sizeof name) {
            e = ctosa_error_new(CTOSA_ERR_USAGE, "expected NAME=FILE, got '%s'", argv[i]);
            break;
        }
        memcpy(name, argv[i], (size_t)(eq - argv[i]));
        name[eq - argv[i]] = 0;
        ctosa_tensor_file t;
        if (!(e = ctosa_tensor_file_read(eq + 1, &t))) e = ctosa_runtime_set_input_file(rt, name, &t, eq + 1);
        ctosa_tensor_file_free(&t);
    }
    if (!e) e = ctosa_runtime_run(rt);
    for (uint32_t i = 0; !e && i < ctosa_runtime_output_count(rt); i++) {
        ctosa_runtime_tensor info, v;
        ctosa_error_free(ctosa_runtime_output_info(rt, i, &info));
        if ((e = ctosa_runtime_get_output(rt, info.name, &v))) break;
        printf("%s: %s, %llu elements\n", v.name, v.dtype, (unsigned long long)v.count);
    }
    for (uint32_t p = 0; !e && p < cb.n_parts; p++)
        printf("partition %s ran %u time(s)\n", cb.names[p], cb.runs_of[p]);
    ctosa_runtime_free(rt);
    if (e) return fail(e);
    printf("prepare %u, run %u, release %u\n", cb.prepares, cb.runs, cb.releases);
    return 0;
}
