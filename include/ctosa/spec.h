/*
 * ctosa/spec.h - TOSA specification targets and graph validation.
 *
 * A spec string names what a target implements, e.g. "TOSA-1.0+INT+int16"
 * (grammar: docs/spec.md, "Spec strings"). It parses into a
 * plain ctosa_spec value:
 *
 *     ctosa_spec s;
 *     ctosa_error *e = ctosa_spec_parse("TOSA-1.0+FP+INT", &s);
 *     char buf[128]; ctosa_spec_format(&s, buf, sizeof buf);   // canonical form
 *
 * Validation checks every operator of a graph against a spec: operator in
 * the version, type signature in the compliance table for the selected
 * profiles/extensions, compile-time-constant arguments, level limits, shape
 * rules, and graph structure (every tensor defined once before use, names
 * resolve, control-flow regions exist). All violations are reported, up to
 * a cap, one line each.
 */
#ifndef CTOSA_SPEC_H
#define CTOSA_SPEC_H

#include "ctosa/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Profiles (bit values). */
#define CTOSA_PRO_INT (1u << 0)
#define CTOSA_PRO_FP (1u << 1)

/* Extensions: X(ENUM, spec-string token, spec name) */
#define CTOSA_EXT_LIST(X)                               \
    X(INT16, "int16", "EXT-INT16")                      \
    X(INT4, "int4", "EXT-INT4")                         \
    X(BF16, "bf16", "EXT-BF16")                         \
    X(FP8E4M3, "fp8e4m3", "EXT-FP8E4M3")                \
    X(FP8E5M2, "fp8e5m2", "EXT-FP8E5M2")                \
    X(FFT, "fft", "EXT-FFT")                            \
    X(VARIABLE, "var", "EXT-VARIABLE")                  \
    X(CONTROLFLOW, "cf", "EXT-CONTROLFLOW")             \
    X(DOUBLEROUND, "doubleround", "EXT-DOUBLEROUND")    \
    X(INEXACTROUND, "inexactround", "EXT-INEXACTROUND") \
    X(DYNAMIC, "dynamic", "EXT-DYNAMIC")                \
    X(INT64, "int64", "EXT-INT64")                      \
    X(SHAPE, "shape", "EXT-SHAPE")                      \
    X(MX_COMMON, "mx", "EXT-MX-COMMON")                 \
    X(MX_FP4E2M1, "mxfp4e2m1", "EXT-MX-FP4E2M1")        \
    X(MX_FP6E2M3, "mxfp6e2m3", "EXT-MX-FP6E2M3")        \
    X(MX_FP6E3M2, "mxfp6e3m2", "EXT-MX-FP6E3M2")        \
    X(MX_FP8E4M3, "mxfp8e4m3", "EXT-MX-FP8E4M3")        \
    X(MX_FP8E5M2, "mxfp8e5m2", "EXT-MX-FP8E5M2")        \
    X(MX_INT8, "mxint8", "EXT-MX-INT8")                 \
    X(MXFP_CONV, "mxfpconv", "EXT-MXFP-CONV")

/* clang-format off */
typedef enum ctosa_ext {
#define CTOSA_X(e, tok, name) CTOSA_EXT_##e,
    CTOSA_EXT_LIST(CTOSA_X)
#undef CTOSA_X
    CTOSA_EXT_COUNT
} ctosa_ext;
/* clang-format on */

#define CTOSA_EXT_BIT(e) (1ull << CTOSA_EXT_##e)

typedef enum ctosa_level {
    CTOSA_LEVEL_NONE = 0, /* default when the string has no level token */
    CTOSA_LEVEL_8K = 1
} ctosa_level;

typedef struct ctosa_spec {
    ctosa_version version; /* 1.0.x (final) or 1.1.x (draft) */
    uint32_t profiles;     /* CTOSA_PRO_* bits */
    uint64_t extensions;   /* CTOSA_EXT_BIT(...) bits */
    ctosa_level level;
    bool u55; /* Ethos-U55 subset restrictions on top */
} ctosa_spec;

/* Parses a spec string. Errors (CTOSA_ERR_USAGE) say what was expected and
 * suggest the closest valid token. */
ctosa_error *ctosa_spec_parse(const char *text, ctosa_spec *out);
/* Spec of a named target ("ethos-u55-128", "ethos-u85-512", "vgf", ...). */
ctosa_error *ctosa_spec_from_target(const char *target, ctosa_spec *out);
/* Canonical spec string; returns the length (snprintf semantics). */
size_t ctosa_spec_format(const ctosa_spec *spec, char *buf, size_t size);
const char *ctosa_ext_token(ctosa_ext e);     /* "int16" */
const char *ctosa_ext_spec_name(ctosa_ext e); /* "EXT-INT16" */
/* Named targets: the i-th target's name (NULL past the end) and, in
 * *spec_string (may be NULL), its spec string:
 *     for (uint32_t i = 0; (name = ctosa_spec_target_at(i, &sp)); i++) ... */
const char *ctosa_spec_target_at(uint32_t i, const char **spec_string);

/* What a spec allows, as the text `ctosa spec` prints (docs/spec.md):
 * canonical form, version, profiles, extensions, level limits, then every
 * operator and type signature the spec allows with the profile/extension
 * each needs (and, under u55, why an operator is restricted). Flags:
 *   CTOSA_SPEC_DESCRIBE_JSON  the same as JSON (`ctosa spec --json`)
 *   CTOSA_SPEC_DESCRIBE_ONNX  instead, which ONNX operators are delegated
 *                             with int64 operands under the spec, derived by
 *                             lowering a one-node probe per registered ONNX
 *                             operator and validating it (`--onnx`)
 * *out_text is malloc'd (NUL-terminated, ends in a newline); free() it. */
#define CTOSA_SPEC_DESCRIBE_JSON (1u << 0)
#define CTOSA_SPEC_DESCRIBE_ONNX (1u << 1)
ctosa_error *ctosa_spec_describe(const ctosa_spec *spec, unsigned flags, char **out_text);

typedef struct ctosa_validate_options {
    uint32_t max_problems; /* 0 = 100 */
} ctosa_validate_options;

/* Validates g against spec. Returns NULL when conformant, otherwise an error
 * with code CTOSA_ERR_INVALID whose message has one line per violation, e.g.
 * "op #12 CONV2D 'conv1': types (i8,i8,i32,i8,i8)->i16 not allowed by
 * TOSA-1.0+INT; allowed: (i8,i8,i32,i8,i8)->i32". opt may be NULL. */
ctosa_error *ctosa_validate(const ctosa_graph *g, const ctosa_spec *spec, const ctosa_validate_options *opt);

/*
 * The same problems as data, for programs that act on them (the
 * partitioner turns them into reason codes): switch on the kind and read
 * the fields; never search the text, which may be reworded.
 *
 *     ctosa_diags *ds = NULL;
 *     ctosa_error *e = ctosa_validate_diags(g, &spec, NULL, &ds);
 *     for (uint32_t i = 0; i < ctosa_diags_count(ds); i++) {
 *         const ctosa_diag *d = ctosa_diags_at(ds, i);
 *         if (d->kind == CTOSA_DIAG_TYPES) ... d->types[0 .. d->n_inputs) ...
 *     }
 *     ctosa_diags_free(ds);
 *     ctosa_error_free(e);
 */
typedef enum ctosa_diag_kind {
    CTOSA_DIAG_STRUCTURE,      /* graph structure: names that do not resolve, tensors defined
                                  twice or before use, regions, variables declared/used wrongly */
    CTOSA_DIAG_NOT_IN_VERSION, /* the operator is not in the spec's TOSA version (or the
                                  value names no operator) */
    CTOSA_DIAG_OPERAND_COUNT,  /* wrong number of inputs or outputs for the operator */
    CTOSA_DIAG_TYPES,          /* the operand types (or acc_type, or a variable's type) are
                                  no signature the spec's profiles and extensions allow;
                                  types[] holds them */
    CTOSA_DIAG_EXTENSION,      /* something that needs an extension the spec lacks (a
                                  rounding mode, variables) */
    CTOSA_DIAG_NOT_CONSTANT,   /* an argument must be a compile-time constant */
    CTOSA_DIAG_RANK,           /* an operand's rank is outside the operator's bounds */
    CTOSA_DIAG_LEVEL_LIMIT,    /* a limit of the spec's level: MAX_RANK, MAX_KERNEL,
                                  MAX_STRIDE, MAX_SCALE, MAX_LOG2_SIZE, MAX_NESTING,
                                  MAX_TENSOR_LIST_SIZE */
    CTOSA_DIAG_ERROR_IF,       /* a rule of the operator: shapes, attribute and constant
                                  values that do not fit together */
    CTOSA_DIAG_U55             /* outside the Ethos-U55 subset */
} ctosa_diag_kind;

/* "structure", "not_in_version", "operand_count", "types", "extension",
 * "not_constant", "rank", "level_limit", "error_if", "u55"; NULL if unknown. */
const char *ctosa_diag_kind_name(ctosa_diag_kind kind);

typedef struct ctosa_diag {
    ctosa_diag_kind kind;
    const char *region; /* region of the operator or block; NULL for the graph */
    int32_t op_index;   /* operator index in its block; -1 when about a block or graph */
    ctosa_op_kind op;   /* CTOSA_OP_UNKNOWN when op_index is -1 */
    /* CTOSA_DIAG_TYPES: the offending types, inputs then outputs (as the
     * operator lists them; CTOSA_DTYPE_UNKNOWN where a name did not
     * resolve). Other kinds: 0, 0 and NULL. */
    uint32_t n_inputs, n_outputs;
    const ctosa_dtype *types;
    const char *text; /* the line of the error message, for people */
} ctosa_diag;

typedef struct ctosa_diags ctosa_diags;

/* ctosa_validate(), and in *out (required) the problems it reports, in the
 * same order and under the same cap (max_problems). *out is NULL when the
 * graph conforms; otherwise free it with ctosa_diags_free(). */
ctosa_error *ctosa_validate_diags(const ctosa_graph *g, const ctosa_spec *spec,
                                  const ctosa_validate_options *opt, ctosa_diags **out);
uint32_t ctosa_diags_count(const ctosa_diags *d); /* 0 for NULL */
/* The i-th problem; NULL past the end. Valid until ctosa_diags_free(). */
const ctosa_diag *ctosa_diags_at(const ctosa_diags *d, uint32_t i);
void ctosa_diags_free(ctosa_diags *d); /* accepts NULL */

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_SPEC_H */
