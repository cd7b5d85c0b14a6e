/* fuzz_tosa_reader.c - the TOSA flatbuffer reader and verifier
 * (ctosa_read_memory): the buffer is exactly the input (so AddressSanitizer
 * sees any read past its end). For files that read, every tensor's element
 * count and data are touched, and the graph is written back and read again
 * (the writer must accept what the reader produced). */
#include <string.h>

#include "ctosa/tosa_io.h"
#include "fuzz_common.h"

FUZZ_ENTRY(tosa_reader) {
    ctosa_graph *g = NULL;
    ctosa_error *e = ctosa_read_memory(data, size, "fuzz.tosa", NULL, &g);
    if (e) {
        fuzz_drop(e);
        return 0;
    }
    (void)ctosa_graph_file_info(g);
    uint64_t total = 0;
    for (uint32_t r = 0; r < ctosa_graph_region_count(g); r++) {
        const ctosa_region *rg = ctosa_graph_region(g, r);
        for (uint32_t b = 0; b < rg->n_blocks; b++) {
            const ctosa_block *bl = rg->blocks[b];
            for (uint32_t t = 0; t < bl->n_tensors; t++) {
                const ctosa_tensor *tt = bl->tensors[t];
                uint64_t n;
                (void)ctosa_tensor_elements(tt, &n);
                if (tt->data.kind == CTOSA_DATA_MEMORY) {
                    const volatile uint8_t *p = tt->data.ptr;
                    for (uint64_t i = 0; i < tt->data.size; i++) total += p[i];
                }
                if (ctosa_block_find_tensor(g, bl, tt->name) == NULL)
                    fuzz_fail("a read tensor cannot be found by name", NULL);
            }
        }
    }
    (void)total;
    void *buf = NULL;
    size_t n = 0;
    e = ctosa_write_memory(g, NULL, &buf, &n);
    if (!e) {
        ctosa_graph *g2 = NULL;
        ctosa_error *e2 = ctosa_read_memory(buf, n, "rewritten.tosa", NULL, &g2);
        if (e2) fuzz_fail("a graph read from a file does not read back after writing", e2);
        ctosa_graph_free(g2);
        free(buf);
    }
    fuzz_drop(e);
    ctosa_graph_free(g);
    return 0;
}
