/* lower_registry.c - finds the lowering function of an ONNX operator.
 *
 * Each operator family lives in its own file (lower_<family>.c) and defines
 * one table `lower_table_<family>`. The library is a static archive, and a
 * weak reference does not pull a member out of an archive, so the registry
 * refers to a table strongly exactly when its file exists (__has_include
 * works on any file). CMake re-compiles this file when a family file is
 * added (OBJECT_DEPENDS in CMakeLists.txt). */
#include <string.h>

#include "lower/lower.h"


#if __has_include("lower_struct.c")
extern const lower_entry lower_table_struct[];
#define HAVE_struct 1
#endif
#if __has_include("lower_ewise.c")
extern const lower_entry lower_table_ewise[];
#define HAVE_ewise 1
#endif
#if __has_include("lower_unary.c")
extern const lower_entry lower_table_unary[];
#define HAVE_unary 1
#endif
#if __has_include("lower_activation.c")
extern const lower_entry lower_table_activation[];
#define HAVE_activation 1
#endif
#if __has_include("lower_cast.c")
extern const lower_entry lower_table_cast[];
#define HAVE_cast 1
#endif
#if __has_include("lower_conv.c")
extern const lower_entry lower_table_conv[];
#define HAVE_conv 1
#endif
#if __has_include("lower_pool.c")
extern const lower_entry lower_table_pool[];
#define HAVE_pool 1
#endif
#if __has_include("lower_matmul.c")
extern const lower_entry lower_table_matmul[];
#define HAVE_matmul 1
#endif
#if __has_include("lower_norm.c")
extern const lower_entry lower_table_norm[];
#define HAVE_norm 1
#endif
#if __has_include("lower_softmax.c")
extern const lower_entry lower_table_softmax[];
#define HAVE_softmax 1
#endif
#if __has_include("lower_resize.c")
extern const lower_entry lower_table_resize[];
#define HAVE_resize 1
#endif
#if __has_include("lower_layout.c")
extern const lower_entry lower_table_layout[];
#define HAVE_layout 1
#endif
#if __has_include("lower_gather.c")
extern const lower_entry lower_table_gather[];
#define HAVE_gather 1
#endif
#if __has_include("lower_reduce.c")
extern const lower_entry lower_table_reduce[];
#define HAVE_reduce 1
#endif
#if __has_include("lower_rnn.c")
extern const lower_entry lower_table_rnn[];
#define HAVE_rnn 1
#endif
#if __has_include("lower_attention.c")
extern const lower_entry lower_table_attention[];
#define HAVE_attention 1
#endif
#if __has_include("lower_mvn.c")
extern const lower_entry lower_table_mvn[];
#define HAVE_mvn 1
#endif
#if __has_include("lower_gridsample.c")
extern const lower_entry lower_table_gridsample[];
#define HAVE_gridsample 1
#endif
#if __has_include("lower_misc.c")
extern const lower_entry lower_table_misc[];
#define HAVE_misc 1
#endif

static const lower_entry *const tables[] = {
#ifdef HAVE_struct
    lower_table_struct,
#endif
#ifdef HAVE_ewise
    lower_table_ewise,
#endif
#ifdef HAVE_unary
    lower_table_unary,
#endif
#ifdef HAVE_activation
    lower_table_activation,
#endif
#ifdef HAVE_cast
    lower_table_cast,
#endif
#ifdef HAVE_conv
    lower_table_conv,
#endif
#ifdef HAVE_pool
    lower_table_pool,
#endif
#ifdef HAVE_matmul
    lower_table_matmul,
#endif
#ifdef HAVE_norm
    lower_table_norm,
#endif
#ifdef HAVE_softmax
    lower_table_softmax,
#endif
#ifdef HAVE_resize
    lower_table_resize,
#endif
#ifdef HAVE_layout
    lower_table_layout,
#endif
#ifdef HAVE_gather
    lower_table_gather,
#endif
#ifdef HAVE_reduce
    lower_table_reduce,
#endif
#ifdef HAVE_rnn
    lower_table_rnn,
#endif
#ifdef HAVE_attention
    lower_table_attention,
#endif
#ifdef HAVE_mvn
    lower_table_mvn,
#endif
#ifdef HAVE_gridsample
    lower_table_gridsample,
#endif
#ifdef HAVE_misc
    lower_table_misc,
#endif
    NULL};

const lower_entry *lower_find(const char *domain, const char *op_type, int64_t opset) {
    /* Only the default ONNX domain has lowerings so far. */
    if (domain && domain[0] && strcmp(domain, "ai.onnx") != 0) return NULL;
    if (!op_type) return NULL;
    for (size_t t = 0; tables[t]; t++)
        for (const lower_entry *e = tables[t]; e->op_type; e++) {
            if (strcmp(e->op_type, op_type) != 0) continue;
            if (opset >= 0 && opset < e->since_opset) continue;
            if (e->until_opset && opset > e->until_opset) continue;
            return e;
        }
    return NULL;
}

const lower_entry *lower_entry_at(uint32_t i) {
    for (size_t t = 0; tables[t]; t++)
        for (const lower_entry *e = tables[t]; e->op_type; e++)
            if (i-- == 0) return e;
    return NULL;
}

const char *lower_code_name(lower_code c) {
    static const char *const names[] = {
#define LOWER_X(e, s) s,
        LOWER_REASONS(LOWER_X)
#undef LOWER_X
    };
    return (unsigned)c < LOWER_CODE_COUNT ? names[c] : "internal_error";
}
