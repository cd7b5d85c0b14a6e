/* graph_internal.h - the parts of ctosa_graph that the reader and writer
 * share with the builder. */
#ifndef CTOSA_GRAPH_INTERNAL_H
#define CTOSA_GRAPH_INTERNAL_H

#include "ctosa/tosa_io.h"
#include "util/util.h"

struct ctosa_graph {
    arena arena;
    ctosa_version version;
    ctosa_software_version software_version;
    uint32_t n_regions, cap_regions;
    ctosa_region **regions;
    /* name -> tensor, one map per block, built lazily by
     * ctosa_block_find_tensor and kept in sync by the builder. */
    struct block_index *indexes;
    file_map map; /* the mapped file a read graph came from */
    bool has_map;
    ctosa_file_info info;
    void *user_buffer; /* ctosa_read_memory: borrowed */
};

/* Grows an arena-backed pointer array (doubling; old storage is left in the
 * arena). Returns false when out of memory. */
bool graph_grow(ctosa_graph *g, void ***arr, uint32_t n, uint32_t *cap);

#endif
