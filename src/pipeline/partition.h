/* partition.h - grouping delegated nodes into partitions, and building each
 * partition's TOSA graph (src/pipeline/). Internal to the lowering. */
#ifndef CTOSA_PARTITION_H
#define CTOSA_PARTITION_H

#include "lower/lower_internal.h"

/* Decides where every node goes, from the support decisions in s->nodes:
 * - delegated nodes are grouped into partitions: maximal connected groups
 *   (greedy, in topological order) whose contraction leaves the graph
 *   acyclic; a group with no computing operator is not delegated
 *   (no_compute);
 * - constant nodes (folded / shape-only) join the partition of their first
 *   consumer, or stay on the CPU (cpu_consumer) when a CPU node or a graph
 *   output needs their value;
 * Sets nodes[i].part (partition id, in topological order of the
 * partitions' first nodes) or nodes[i].on_cpu (with code/reason). Returns
 * the number of partitions, or -1 when out of memory. */
int32_t part_assign(lower_session *s);

/* Contracted-graph topological order for the partitioned ONNX model:
 * fills order[] with entries >= 0 (CPU node index) or -(p+1) (partition p),
 * ties broken by the smallest original node index. Returns the count, -1
 * for a cycle (a bug) or -2 when out of memory. */
int64_t part_order(lower_session *s, uint32_t n_parts, int64_t *order);

#endif
