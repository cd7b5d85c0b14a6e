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
#define CTOSA_EXT_LIST(X)                          \
    X(INT16, "int16", "EXT-INT16")                 \
    X(INT4, "int4", "EXT-INT4")                    \
    X(BF16, "bf16", "EXT-BF16")                    \
    X(FP8E4M3, "fp8e4m3", "EXT-FP8E4M3")           \
    X(FP8E5M2, "fp8e5m2", "EXT-FP8E5M2")           \
    X(FFT, "fft", "EXT-FFT")                       \
    X(VARIABLE, "var", "EXT-VARIABLE")             \
    X(CONTROLFLOW, "cf", "EXT-CONTROLFLOW")        \
    X(DOUBLEROUND, "doubleround", "EXT-DOUBLEROUND") \
    X(INEXACTROUND, "inexactround", "EXT-INEXACTROUND") \
    X(DYNAMIC, "dynamic", "EXT-DYNAMIC")           \
    X(INT64, "int64", "EXT-INT64")                 \
    X(SHAPE, "shape", "EXT-SHAPE")                 \
    X(MX_COMMON, "mx", "EXT-MX-COMMON")            \
    X(MX_FP4E2M1, "mxfp4e2m1", "EXT-MX-FP4E2M1")   \
    X(MX_FP6E2M3, "mxfp6e2m3", "EXT-MX-FP6E2M3")   \
    X(MX_FP6E3M2, "mxfp6e3m2", "EXT-MX-FP6E3M2")   \
    X(MX_FP8E4M3, "mxfp8e4m3", "EXT-MX-FP8E4M3")   \
    X(MX_FP8E5M2, "mxfp8e5m2", "EXT-MX-FP8E5M2")   \
    X(MX_INT8, "mxint8", "EXT-MX-INT8")            \
    X(MXFP_CONV, "mxfpconv", "EXT-MXFP-CONV")

typedef enum ctosa_ext {
#define CTOSA_X(e, tok, name) CTOSA_EXT_##e,
    CTOSA_EXT_LIST(CTOSA_X)
#undef CTOSA_X
    CTOSA_EXT_COUNT
} ctosa_ext;

#define CTOSA_EXT_BIT(e) (1ull << CTOSA_EXT_##e)

typedef enum ctosa_level {
    CTOSA_LEVEL_NONE = 0, /* default when the string has no level token */
    CTOSA_LEVEL_8K = 1
} ctosa_level;

typedef struct ctosa_spec {
    ctosa_version version;  /* 1.0.x (final) or 1.1.x (draft) */
    uint32_t profiles;      /* CTOSA_PRO_* bits */
    uint64_t extensions;    /* CTOSA_EXT_BIT(...) bits */
    ctosa_level level;
    bool u55;               /* Ethos-U55 subset restrictions on top */
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
ctosa_error *ctosa_validate(const ctosa_graph *g, const ctosa_spec *spec,
                            const ctosa_validate_options *opt);

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_SPEC_H */
