/*
 * ctosa/mlir.h - a TOSA graph as MLIR text (the `tosa` dialect of upstream
 * MLIR, LLVM 22 syntax), for mlir-opt, IREE, torch-mlir and friends.
 *
 *     ctosa_mlir_options opt;
 *     ctosa_mlir_options_init(&opt);
 *     opt.source_name = "model.tosa";            // named in every loc(...)
 *     ctosa_error *e = ctosa_mlir_write_file(g, "model.mlir", &opt);
 *
 * What is written: one `module`; the main region's first block becomes
 * `func.func @main` (arguments and results in the block's input and output
 * order); every operator in MLIR's generic form
 * ("tosa.conv2d"(%a, ...) <{...}> : (...) -> ...), operands in flatbuffer
 * order, zero points and shapes as operands (`tosa.const`,
 * `tosa.const_shape` of type !tosa.shape<N>), enums as #tosa.* attributes,
 * constants exact as hex dense<"0x..."> in MLIR's storage layout (i4 one per
 * byte, i48 in 6 bytes, i1 bit-packed), COND_IF / WHILE_LOOP bodies as
 * regions ending in tosa.yield, variables as module-level tosa.variable
 * symbols read and written by name, CUSTOM as tosa.custom. Each operator
 * carries loc("NODE"("FILE":INDEX:0)): FILE is source_name (with "@BLOCK"
 * appended for operators of other blocks), INDEX the operator's index in
 * its block, NODE the operator's location text (the ONNX node it was
 * lowered from) when it has one.
 *
 * With run set (or inputs given) a second function is added:
 *
 *     func.func @ctosa_run()   // calls @main on the inputs as constants
 *
 * which prints every output of @main, in order, with the runner utilities'
 * printMemrefI64: integers and bools as their values, floats as their bit
 * patterns (zero-extended), so `mlir-runner -e ctosa_run
 * -entry-point-result=void` output compares exactly with `ctosa run`.
 * docs/mlir.md has the mlir-opt pipeline that lowers it to LLVM.
 *
 * The text is produced front to back and handed to the sink in pieces of at
 * most about 64 KiB, constant data in chunks: memory stays bounded whatever
 * the size of the model's weights.
 *
 * Errors (CTOSA_ERR_UNSUPPORTED): a dtype MLIR has no type for (MXINT8),
 * a constant without data, a control-flow operator naming a region that
 * does not exist, an input value whose dtype or shape differs from the
 * graph input's.
 */
#ifndef CTOSA_MLIR_H
#define CTOSA_MLIR_H

#include "ctosa/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A value for one graph input of @ctosa_run, in the interpreter's host
 * encoding (ctosa/interp.h: one element per slot, BOOL and INT4 one byte,
 * INT48 as int64). */
typedef struct ctosa_mlir_input {
    const char *name;  /* a main-block input */
    ctosa_dtype dtype; /* must be the input's dtype */
    uint32_t rank;     /* must be the input's rank and shape */
    const int64_t *shape;
    const void *data; /* borrowed for the call */
    uint64_t size;    /* bytes */
} ctosa_mlir_input;

typedef struct ctosa_mlir_options {
    const char *source_name;        /* file named in loc(...); NULL: "graph.tosa" */
    bool run;                       /* add @ctosa_run (also implied by n_inputs > 0) */
    const ctosa_mlir_input *inputs; /* values for @ctosa_run: every main input */
    uint32_t n_inputs;              /* must then be given */
} ctosa_mlir_options;

void ctosa_mlir_options_init(ctosa_mlir_options *opt);

/* Receives the text in order. Returning an error stops the writer, which
 * returns that error. */
typedef ctosa_error *(*ctosa_mlir_sink)(void *user, const char *text, size_t n);

/* Writes g as MLIR text to sink. opt may be NULL. */
ctosa_error *ctosa_mlir_write(const ctosa_graph *g, const ctosa_mlir_options *opt, ctosa_mlir_sink sink,
                              void *user);
/* Same into path (temporary name + rename: no partial file on error). */
ctosa_error *ctosa_mlir_write_file(const ctosa_graph *g, const char *path, const ctosa_mlir_options *opt);
/* Same into a malloc'd NUL-terminated string (*len bytes) the caller frees
 * with free(). For small graphs: the whole text is in memory. */
ctosa_error *ctosa_mlir_write_memory(const ctosa_graph *g, const ctosa_mlir_options *opt, char **text,
                                     size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_MLIR_H */
