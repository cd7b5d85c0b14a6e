/* lower_registry.c - finds the lowering function of an ONNX operator.
 *
 * Each operator family lives in its own file (lower_<family>.c) and defines
 * one table `lower_table_<family>`, listed here. The list is plain code: a
 * family named here without its file fails to link, and a family file not
 * named here would never be linked in (tests/cli_lower_families.sh checks
 * that the list and the files agree). The first match wins, so the order
 * only matters for an operator two families claim. */
#include <string.h>

#include "lower/lower.h"

extern const lower_entry lower_table_struct[];
extern const lower_entry lower_table_ewise[];
extern const lower_entry lower_table_unary[];
extern const lower_entry lower_table_activation[];
extern const lower_entry lower_table_cast[];
extern const lower_entry lower_table_conv[];
extern const lower_entry lower_table_pool[];
extern const lower_entry lower_table_matmul[];
extern const lower_entry lower_table_norm[];
extern const lower_entry lower_table_softmax[];
extern const lower_entry lower_table_resize[];
extern const lower_entry lower_table_layout[];
extern const lower_entry lower_table_gather[];
extern const lower_entry lower_table_reduce[];
extern const lower_entry lower_table_rnn[];
extern const lower_entry lower_table_attention[];
extern const lower_entry lower_table_mvn[];
extern const lower_entry lower_table_gridsample[];
extern const lower_entry lower_table_misc[];
extern const lower_entry lower_table_detect[];

/* One family per line (tests/cli_lower_families.sh reads this list). */
/* clang-format off */
static const lower_entry *const tables[] = {
    lower_table_struct,
    lower_table_ewise,
    lower_table_unary,
    lower_table_activation,
    lower_table_cast,
    lower_table_conv,
    lower_table_pool,
    lower_table_matmul,
    lower_table_norm,
    lower_table_softmax,
    lower_table_resize,
    lower_table_layout,
    lower_table_gather,
    lower_table_reduce,
    lower_table_rnn,
    lower_table_attention,
    lower_table_mvn,
    lower_table_gridsample,
    lower_table_misc,
    lower_table_detect,
    NULL};
/* clang-format on */

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
#define LOWER_X(e, s, v) s,
        LOWER_REASONS(LOWER_X)
#undef LOWER_X
    };
    return (unsigned)c < LOWER_CODE_COUNT ? names[c] : "internal_error";
}

bool lower_code_needs_values(lower_code c) {
    static const bool values[] = {
#define LOWER_X(e, s, v) v,
        LOWER_REASONS(LOWER_X)
#undef LOWER_X
    };
    return (unsigned)c < LOWER_CODE_COUNT && values[c];
}
