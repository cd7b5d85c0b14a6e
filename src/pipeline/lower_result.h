/* lower_result.h - the state behind a ctosa_lower_result (lower_api.c,
 * report.c). Internal. */
#ifndef CTOSA_LOWER_RESULT_H
#define CTOSA_LOWER_RESULT_H

#include "pipeline/partition.h"

typedef struct lw_part {
    ctosa_graph *work;  /* lowered operators before clean-up (owns borrowed data) */
    ctosa_graph *final; /* the partition's graph */
    uint32_t n_members; /* ONNX nodes in the partition (index order) */
    uint32_t *members;
    uint32_t n_in, n_out;
    const lw_val **in, **out; /* boundary values */
} lw_part;

struct ctosa_lower_result {
    lower_session s;
    arena a;
    const char *stem;
    lw_part *parts;
    uint32_t n_parts;
    ctosa_lower_partition *pub_parts;
    ctosa_lower_fallback *fallback;
    ctosa_lower_summary sum;
    char *report;
    char spec_str[256];
};

/* Fills r->sum (fallback list included) and r->report. */
ctosa_error *lw_build_report(ctosa_lower_result *r, const char *model_path);
/* Writes <stem>.partitioned.onnx to path. */
ctosa_error *lw_write_partitioned(ctosa_lower_result *r, const char *path);

#endif
