/*
 * ctosa/custom.h - custom operators: a registry of user operators that the
 * lowering delegates whole as TOSA CUSTOM operators, and that the
 * interpreter runs through user kernels.
 *
 * A registry is an ordinary object (no global state): create one, register
 * operators (directly, from plugins, or from a --custom-ops JSON file),
 * hand it to ctosa_lower_file() through ctosa_lower_options.custom_ops and
 * to an interpreter with ctosa_custom_registry_attach():
 *
 *     ctosa_custom_registry *reg;
 *     ctosa_custom_registry_create(&reg);
 *     ctosa_custom_op op = {
 *         .onnx_domain = "com.example", .onnx_op_type = "MySwish",
 *         .infer = my_swish_infer,      // output shapes/dtypes (required)
 *         .kernel = my_swish_kernel,    // for the interpreter (optional)
 *     };
 *     ctosa_error *e = ctosa_custom_register(reg, &op);
 *     e = ctosa_custom_registry_load_plugin(reg, "libmyops.so");
 *     ctosa_lower_options opt; ctosa_lower_options_init(&opt);
 *     opt.custom_ops = reg;
 *     ... ctosa_lower_file(...) ...
 *     ctosa_custom_registry_attach(reg, interp);   // before ctosa_interp_run
 *     ...
 *     ctosa_custom_registry_free(reg);  // after every interpreter using it
 *
 * What the lowering does with a node matched by a registration
 * ------------------------------------------------------------
 * The node is never decomposed: validate() (if any) checks its attributes,
 * infer() computes the output dtypes and shapes from the input dtypes,
 * shapes (and constant values) and the attributes, and the node becomes ONE
 * CUSTOM operator with input_list = the node's present inputs (constants
 * become CONST tensors), output_list = its outputs, domain_name /
 * operator_name as registered and implementation_attrs from encode_attrs()
 * or, by default, the node's ONNX attributes as canonical JSON (see
 * docs/custom-ops.md: keys sorted bytewise, no spaces, integers as
 * integers, floats in their shortest round-trip form; byte-identical
 * across runs). The partitioner then validates CUSTOM like any operator
 * (list sizes against MAX_TENSOR_LIST_SIZE of the level). Any rejection is
 * a fallback with code "custom_op_rejected" and the callback's message.
 *
 * A registration may also name a standard ONNX operator (onnx_domain "" or
 * "ai.onnx", e.g. "GridSample"): it then takes precedence over ctosa's
 * built-in lowering and the report lists the node under "custom_ops" with
 * "overrides_builtin": true.
 *
 * Nodes of a non-standard domain that nothing registers fall back with code
 * "unregistered_custom_op".
 *
 * Callbacks receive `user` from the registration. They run on the calling
 * thread, several times per node (support decision, final lowering), and
 * must be deterministic. Errors they return are created with
 * ctosa_error_new (plugins: host->error_new) and are owned by ctosa.
 */
#ifndef CTOSA_CUSTOM_H
#define CTOSA_CUSTOM_H

#include "ctosa/interp.h"
#include "ctosa/onnx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctosa_custom_registry ctosa_custom_registry;

#define CTOSA_CUSTOM_MAX_RANK 8

/* The node being lowered, as the callbacks see it. */
typedef struct ctosa_custom_node {
    const char *name;   /* node name, or "<op_type>#<index>" when unnamed */
    const char *domain; /* ONNX domain as written ("" for the default domain) */
    const char *op_type;
    int64_t opset; /* the model's opset for the node's domain (-1 if not imported) */
    uint32_t n_attrs;
    const ctosa_onnx_attr *attrs; /* see ctosa_custom_find_attr() */
    const ctosa_onnx_node *onnx;  /* the whole ONNX node */
} ctosa_custom_node;

/* One input or output of the node. */
typedef struct ctosa_custom_tensor {
    ctosa_dtype dtype;  /* TOSA dtype the value is carried in */
    int32_t onnx_dtype; /* inputs: ONNX element type; outputs: leave 0 */
    uint32_t rank;
    int64_t shape[CTOSA_CUSTOM_MAX_RANK];
    bool present;     /* inputs: false for an omitted optional input ("") */
    const void *data; /* inputs: the constant value when known at compile time
                              (dense little-endian, ONNX natural width), else NULL */
    uint64_t nbytes;
} ctosa_custom_tensor;

/* Shape and type inference (the "fake" implementation): fill every
 * outputs[i].dtype, rank and shape (static, >= 0). Return an error to
 * refuse the node (it falls back with the message). */
typedef ctosa_error *(*ctosa_custom_infer_fn)(void *user, const ctosa_custom_node *node,
                                              const ctosa_custom_tensor *inputs, uint32_t n_inputs,
                                              ctosa_custom_tensor *outputs, uint32_t n_outputs);
/* Attribute validation: return an error naming the bad attribute. */
typedef ctosa_error *(*ctosa_custom_validate_fn)(void *user, const ctosa_custom_node *node);
/* implementation_attrs encoder, snprintf style: write at most cap bytes to
 * buf (buf may be NULL when cap is 0) and set *len to the full length.
 * Called again with a larger buffer when *len > cap. */
typedef ctosa_error *(*ctosa_custom_encode_fn)(void *user, const ctosa_custom_node *node, uint8_t *buf,
                                               size_t cap, size_t *len);

typedef struct ctosa_custom_op {
    const char *onnx_domain;  /* ONNX domain matched; "" / "ai.onnx" = a standard operator */
    const char *onnx_op_type; /* ONNX op_type matched */
    int64_t since_opset;      /* opset range of onnx_domain matched; 0 = unbounded */
    int64_t until_opset;
    const char *tosa_domain;             /* CUSTOM domain_name; NULL = onnx_domain (required for
                                  standard operators) */
    const char *tosa_operator;           /* CUSTOM operator_name; NULL = onnx_op_type */
    ctosa_custom_infer_fn infer;         /* required */
    ctosa_custom_validate_fn validate;   /* optional */
    ctosa_custom_encode_fn encode_attrs; /* optional; default canonical JSON */
    ctosa_custom_fn kernel;              /* optional interpreter kernel (ctosa/interp.h) */
    const ctosa_dtype *dtypes;           /* optional: dtypes every input and output must have */
    uint32_t n_dtypes;
    void *user; /* passed to every callback */
} ctosa_custom_op;

ctosa_error *ctosa_custom_registry_create(ctosa_custom_registry **out);
/* Frees the registry and closes its plugins: free interpreters that use its
 * kernels first. Accepts NULL. */
void ctosa_custom_registry_free(ctosa_custom_registry *reg);

/* Registers op (strings and the dtype list are copied). The latest
 * registration matching a node wins. Errors: missing op_type or infer,
 * empty domain_name for a standard operator, bad opset range. */
ctosa_error *ctosa_custom_register(ctosa_custom_registry *reg, const ctosa_custom_op *op);

/* Number of registrations, and registration i (in registration order). */
uint32_t ctosa_custom_registry_count(const ctosa_custom_registry *reg);
const ctosa_custom_op *ctosa_custom_registry_get(const ctosa_custom_registry *reg, uint32_t i);
/* The registration that matches (domain, op_type) at opset (-1 = any), or NULL. */
const ctosa_custom_op *ctosa_custom_registry_find(const ctosa_custom_registry *reg, const char *domain,
                                                  const char *op_type, int64_t opset);

/* Registers every kernel of the registry with the interpreter (by domain_name
 * and operator_name). The registry must outlive the interpreter. */
ctosa_error *ctosa_custom_registry_attach(const ctosa_custom_registry *reg, ctosa_interp *it);

/* Loads a --custom-ops JSON file: pass-through operators with simple shape
 * rules (docs/custom-ops.md). Malformed JSON is CTOSA_ERR_FORMAT naming
 * "FILE:LINE:COLUMN". */
ctosa_error *ctosa_custom_registry_load_json(ctosa_custom_registry *reg, const char *path);
/* Same from memory; name is used in messages. */
ctosa_error *ctosa_custom_registry_load_json_text(ctosa_custom_registry *reg, const char *text, size_t len,
                                                  const char *name);

/* ---------------------------------------------------------------- plugins
 *
 * A plugin is a shared library exporting, with C linkage,
 *
 *     uint32_t ctosa_plugin_init(ctosa_custom_registry *reg,
 *                                const ctosa_plugin_host *host,
 *                                uint32_t host_api_version);
 *
 * This signature never changes. The plugin compares host_api_version with
 * the CTOSA_PLUGIN_API_VERSION it was compiled with: when they differ it
 * returns its own version at once, touching neither reg nor host, and ctosa
 * reports the mismatch. Otherwise it registers its operators through
 * host->register_op (NOT ctosa_custom_register: a plugin links against
 * nothing; every ctosa function it needs is in the host table) and returns
 * CTOSA_PLUGIN_API_VERSION. To fail, call host->fail() and return it too.
 * Registrations of a plugin whose loading fails are all withdrawn.
 *
 *     uint32_t ctosa_plugin_init(ctosa_custom_registry *reg, const ctosa_plugin_host *host,
 *                                uint32_t v) {
 *         if (v != CTOSA_PLUGIN_API_VERSION) return CTOSA_PLUGIN_API_VERSION;
 *         ctosa_custom_op op = {...};
 *         host->register_op(reg, &op);
 *         return CTOSA_PLUGIN_API_VERSION;
 *     }
 */
#define CTOSA_PLUGIN_API_VERSION 1u
#define CTOSA_PLUGIN_ENTRY "ctosa_plugin_init"

typedef struct ctosa_plugin_host {
    uint32_t api_version; /* CTOSA_PLUGIN_API_VERSION of the running ctosa */
    uint32_t size;        /* sizeof(ctosa_plugin_host) of the running ctosa */
    /* ctosa_custom_register; returns 0 on success. The error is kept and
     * reported when the plugin returns. */
    int (*register_op)(ctosa_custom_registry *reg, const ctosa_custom_op *op);
    /* Makes the plugin fail to load with this message. */
    void (*fail)(ctosa_custom_registry *reg, const char *fmt, ...);
    /* ctosa_error_new, for errors returned by callbacks and kernels. */
    ctosa_error *(*error_new)(ctosa_code code, const char *fmt, ...);
    /* Reads the number at top-level key `key` of a JSON object in
     * implementation_attrs (the default encoding); false when absent or
     * not a number. For kernels. */
    bool (*attrs_number)(const uint8_t *attrs, uint32_t len, const char *key, double *out);
    const char *(*dtype_name)(ctosa_dtype t); /* "fp32" ... */
} ctosa_plugin_host;

typedef uint32_t (*ctosa_plugin_init_fn)(ctosa_custom_registry *reg, const ctosa_plugin_host *host,
                                         uint32_t host_api_version);

/* dlopens path (kept open until the registry is freed) and runs its entry
 * point. Errors: cannot load (CTOSA_ERR_IO), no entry point
 * (CTOSA_ERR_FORMAT), API version mismatch (CTOSA_ERR_UNSUPPORTED), a
 * registration the plugin made was refused or the plugin failed. */
ctosa_error *ctosa_custom_registry_load_plugin(ctosa_custom_registry *reg, const char *path);

/* The attribute of node named name, or NULL (inline: usable from plugins). */
static inline const ctosa_onnx_attr *ctosa_custom_find_attr(const ctosa_custom_node *node, const char *name) {
    for (uint32_t i = 0; i < node->n_attrs; i++) {
        const char *a = node->attrs[i].name, *b = name;
        while (*a && *a == *b) a++, b++;
        if (*a == *b) return &node->attrs[i];
    }
    return (const ctosa_onnx_attr *)0;
}

#ifdef __cplusplus
}
#endif
#endif /* CTOSA_CUSTOM_H */
