/*
 * memplan.h — placing activations in device memory by lifetime.
 *
 * The graph builder gives every activation, gradient and saved tensor its own offset in an
 * arena (graph.h). Most of them live only part of a step: an activation's gradient is
 * written by one backward op and read by the next few, then never again. Giving each its own
 * memory made ResNet9's batch-512 arena 3.5 GiB, one buffer that lavapipe (2 GiB largest
 * allocation) and some OpenCL devices refuse.
 *
 * So the session builds its programs against a virtual arena (dbk_memplan_virtual_arena, a
 * stand-in that owns no memory), and the planner then:
 *   1. finds the blocks: the virtual byte ranges the ops touch (overlapping ranges, such as
 *      the 2-D view of a 4-D activation, are one block);
 *   2. gives each block its lifetime in the program: from the first op that touches it
 *      (which must write it) to the last;
 *   3. places blocks, largest first, at the lowest 256-byte-aligned offset of the first chunk
 *      where no block with an overlapping lifetime sits, opening a new chunk when none has
 *      room below max_chunk_bytes (the device's largest allocation). A block larger than
 *      that gets a chunk of its own size: the caller compares dbk_memplan_largest_block with
 *      its limit and refuses the plan, knowing its total size for a hint;
 *   4. once the chunks are allocated, rewrites every virtual tensor of the program to its
 *      chunk and offset.
 * Several programs that never run at the same time (training step, evaluation batch) share
 * the chunks: chunk i is as large as the largest program needs it.
 *
 * A block whose first use is a read would carry data from an earlier run of the program;
 * nothing in a step may rely on that, so the planner refuses such a program.
 */
#ifndef DBK_MEMPLAN_H
#define DBK_MEMPLAN_H

#include <stddef.h>

#include "backend/backend.h"

typedef struct dbk_memplan dbk_memplan;

/* The buffer arena tensors point at until dbk_memplan_bind places them. Never dereferenced. */
dbk_buffer *dbk_memplan_virtual_arena(void);

/* max_chunk_bytes: the largest buffer to plan (0 = no limit). */
dbk_status dbk_memplan_create(size_t max_chunk_bytes, dbk_memplan **out);
void       dbk_memplan_destroy(dbk_memplan *mp);                   /* accepts NULL */

/* Plans the virtual-arena tensors of a program. The ops are borrowed and rewritten in place
 * by dbk_memplan_bind, so they must outlive the plan. */
dbk_status dbk_memplan_add_program(dbk_memplan *mp, dbk_op_desc *ops, int count);

int    dbk_memplan_chunk_count(const dbk_memplan *mp);
size_t dbk_memplan_chunk_bytes(const dbk_memplan *mp, int i);
size_t dbk_memplan_total_bytes(const dbk_memplan *mp);             /* sum of the chunks */
size_t dbk_memplan_unshared_bytes(const dbk_memplan *mp);          /* what one offset per block
                                                                      would take (largest program) */
size_t dbk_memplan_largest_block(const dbk_memplan *mp);           /* the largest activation */

/* Points every planned tensor at chunks[i] (dbk_memplan_chunk_count buffers, each at least
 * dbk_memplan_chunk_bytes(i) large). */
void dbk_memplan_bind(dbk_memplan *mp, dbk_buffer *const *chunks);

#endif
