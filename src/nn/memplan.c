/*
 * memplan.c — lifetime-based placement of activations (see memplan.h).
 */
#include "nn/memplan.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

#define MEMPLAN_ALIGN 256

typedef struct block {
    size_t vlo, vhi;        /* virtual byte range */
    int    first, last;     /* ops that touch it first and last */
    int    chunk;           /* -1 until placed */
    size_t offset;          /* in its chunk */
} block;

/* One op list added to the plan (a program's ops, dbk_memplan_add), with its tensors' blocks. */
typedef struct planned_ops {
    dbk_op_desc *ops;
    int          count;
    block       *blocks;    /* sorted by vlo */
    int          nblocks;
} planned_ops;

struct dbk_memplan {
    size_t        max_chunk;
    planned_ops  *progs;
    int           nprogs;
    size_t       *chunk_bytes;
    int           nchunks;
    size_t        unshared;
    size_t        largest;
};

static max_align_t virtual_arena_tag;

dbk_buffer *dbk_memplan_virtual_arena(void) { return (dbk_buffer *)(void *)&virtual_arena_tag; }

static size_t align_up(size_t n) { return (n + MEMPLAN_ALIGN - 1) / MEMPLAN_ALIGN * MEMPLAN_ALIGN; }
static size_t block_bytes(const block *b) { return align_up(b->vhi - b->vlo); }

static bool is_virtual(const dbk_tensor *t) {
    return t->ndim > 0 && t->buf == dbk_memplan_virtual_arena() && dbk_tensor_nbytes(t) > 0;
}

dbk_status dbk_memplan_create(size_t max_chunk_bytes, dbk_memplan **out) {
    dbk_memplan *mp = dbk_calloc(1, sizeof *mp);
    if (!mp) return DBK_ERR_OUT_OF_HOST_MEMORY;
    mp->max_chunk = max_chunk_bytes ? max_chunk_bytes / MEMPLAN_ALIGN * MEMPLAN_ALIGN : SIZE_MAX;
    *out = mp;
    return DBK_OK;
}

void dbk_memplan_destroy(dbk_memplan *mp) {
    if (!mp) return;
    for (int i = 0; i < mp->nprogs; i++) dbk_free(mp->progs[i].blocks);
    dbk_free(mp->progs);
    dbk_free(mp->chunk_bytes);
    dbk_free(mp);
}

int dbk_memplan_chunk_count(const dbk_memplan *mp) { return mp->nchunks; }
size_t dbk_memplan_chunk_bytes(const dbk_memplan *mp, int i) { return mp->chunk_bytes[i]; }
size_t dbk_memplan_unshared_bytes(const dbk_memplan *mp) { return mp->unshared; }
size_t dbk_memplan_largest_block(const dbk_memplan *mp) { return mp->largest; }

size_t dbk_memplan_total_bytes(const dbk_memplan *mp) {
    size_t n = 0;
    for (int i = 0; i < mp->nchunks; i++) n += mp->chunk_bytes[i];
    return n;
}

/* ---------------------------------------------------------------------------------- */
/* 1. blocks                                                                           */

static int cmp_range(const void *a, const void *b) {
    const block *x = a, *y = b;
    return x->vlo < y->vlo ? -1 : x->vlo > y->vlo ? 1 : 0;
}

/* The virtual ranges the ops touch, with overlapping ones merged. */
static dbk_status find_blocks(planned_ops *p) {
    int n = 0;
    for (int i = 0; i < p->count; i++) {
        for (int k = 0; k < DBK_OP_MAX_SRC; k++) n += is_virtual(&p->ops[i].src[k]);
        for (int k = 0; k < DBK_OP_MAX_DST; k++) n += is_virtual(&p->ops[i].dst[k]);
    }
    block *ranges = dbk_calloc((size_t)(n ? n : 1), sizeof *ranges);
    if (!ranges) return DBK_ERR_OUT_OF_HOST_MEMORY;
    n = 0;
    for (int i = 0; i < p->count; i++) {
        const dbk_tensor *ts[DBK_OP_MAX_SRC + DBK_OP_MAX_DST];
        for (int k = 0; k < DBK_OP_MAX_SRC; k++) ts[k] = &p->ops[i].src[k];
        for (int k = 0; k < DBK_OP_MAX_DST; k++) ts[DBK_OP_MAX_SRC + k] = &p->ops[i].dst[k];
        for (int k = 0; k < DBK_OP_MAX_SRC + DBK_OP_MAX_DST; k++) {
            if (!is_virtual(ts[k])) continue;
            ranges[n].vlo = ts[k]->offset;
            ranges[n].vhi = ts[k]->offset + dbk_tensor_nbytes(ts[k]);
            n++;
        }
    }
    qsort(ranges, (size_t)n, sizeof *ranges, cmp_range);
    int nb = 0;
    for (int i = 0; i < n; i++) {
        if (nb && ranges[i].vlo < ranges[nb - 1].vhi) {
            if (ranges[i].vhi > ranges[nb - 1].vhi) ranges[nb - 1].vhi = ranges[i].vhi;
            continue;
        }
        ranges[nb++] = ranges[i];
    }
    for (int i = 0; i < nb; i++) {
        ranges[i].first = ranges[i].last = -1;
        ranges[i].chunk = -1;
    }
    p->blocks = ranges;
    p->nblocks = nb;
    return DBK_OK;
}

static block *block_of(const planned_ops *p, const dbk_tensor *t) {
    int lo = 0, hi = p->nblocks - 1;
    while (lo < hi) { /* the last block with vlo <= offset */
        int mid = (lo + hi + 1) / 2;
        if (p->blocks[mid].vlo <= t->offset) lo = mid;
        else hi = mid - 1;
    }
    return &p->blocks[lo];
}

/* ---------------------------------------------------------------------------------- */
/* 2. lifetimes                                                                        */

static dbk_status find_lifetimes(planned_ops *p) {
    for (int i = 0; i < p->count; i++) {
        const dbk_op_desc *op = &p->ops[i];
        /* Outputs first, so an op that updates a tensor in place counts as writing it. */
        for (int k = 0; k < DBK_OP_MAX_DST; k++) {
            if (!is_virtual(&op->dst[k])) continue;
            block *b = block_of(p, &op->dst[k]);
            if (b->first < 0) b->first = i;
            b->last = i;
        }
        for (int k = 0; k < DBK_OP_MAX_SRC; k++) {
            if (!is_virtual(&op->src[k])) continue;
            block *b = block_of(p, &op->src[k]);
            if (b->first < 0)
                return dbk_set_error(DBK_ERR_INVALID_ARG,
                                     "op %d ('%s', %s) reads an activation that no earlier op of its program writes", i,
                                     op->label ? op->label : "", dbk_op_name(op->op));
            b->last = i;
        }
    }
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* 3. placement                                                                        */

static int cmp_size_desc(const void *a, const void *b) {
    const block *x = *(const block *const *)a, *y = *(const block *const *)b;
    size_t sx = block_bytes(x), sy = block_bytes(y);
    if (sx != sy) return sx > sy ? -1 : 1;
    return x->first - y->first;
}

static int cmp_offset(const void *a, const void *b) {
    const block *x = *(const block *const *)a, *y = *(const block *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset ? 1 : 0;
}

/* The lowest offset in chunk c where b fits beside the placed blocks that live at the same
 * time; SIZE_MAX when the chunk has no room below max_chunk. */
static size_t fit_in_chunk(const dbk_memplan *mp, const planned_ops *p, const block *b, int c, const block **live) {
    int nlive = 0;
    for (int i = 0; i < p->nblocks; i++) {
        const block *o = &p->blocks[i];
        if (o->chunk == c && o->first <= b->last && b->first <= o->last) live[nlive++] = o;
    }
    qsort(live, (size_t)nlive, sizeof *live, cmp_offset);
    size_t at = 0, need = block_bytes(b);
    for (int i = 0; i < nlive; i++) {
        if (at + need <= live[i]->offset) break;
        size_t end = live[i]->offset + block_bytes(live[i]);
        if (end > at) at = end;
    }
    return need <= mp->max_chunk && at <= mp->max_chunk - need ? at : SIZE_MAX;
}

static dbk_status grow_chunks(dbk_memplan *mp, int n) {
    if (n <= mp->nchunks) return DBK_OK;
    size_t *nc = dbk_calloc((size_t)n, sizeof *nc);
    if (!nc) return DBK_ERR_OUT_OF_HOST_MEMORY;
    if (mp->nchunks) memcpy(nc, mp->chunk_bytes, sizeof *nc * (size_t)mp->nchunks);
    dbk_free(mp->chunk_bytes);
    mp->chunk_bytes = nc;
    mp->nchunks = n;
    return DBK_OK;
}

static dbk_status place(dbk_memplan *mp, planned_ops *p) {
    block **order = dbk_malloc(sizeof *order * (size_t)(p->nblocks + 1));
    const block **live = dbk_malloc(sizeof *live * (size_t)(p->nblocks + 1));
    dbk_status st = DBK_OK;
    if (!order || !live) {
        st = DBK_ERR_OUT_OF_HOST_MEMORY;
        goto done;
    }
    size_t unshared = 0;
    for (int i = 0; i < p->nblocks; i++) {
        order[i] = &p->blocks[i];
        unshared += block_bytes(&p->blocks[i]);
        if (block_bytes(&p->blocks[i]) > mp->largest) mp->largest = block_bytes(&p->blocks[i]);
    }
    if (unshared > mp->unshared) mp->unshared = unshared;
    qsort(order, (size_t)p->nblocks, sizeof *order, cmp_size_desc);
    int used = 0; /* chunks this program uses so far */
    for (int i = 0; i < p->nblocks; i++) {
        block *b = order[i];
        size_t at = SIZE_MAX;
        int c = 0;
        while (c < used && (at = fit_in_chunk(mp, p, b, c, live)) == SIZE_MAX) c++;
        if (at == SIZE_MAX) { /* a new chunk (of its own size if larger than max_chunk) */
            c = used++;
            at = 0;
        }
        b->chunk = c;
        b->offset = at;
        if ((st = grow_chunks(mp, used)) != DBK_OK) goto done;
        if (at + block_bytes(b) > mp->chunk_bytes[c]) mp->chunk_bytes[c] = at + block_bytes(b);
    }
done:
    dbk_free(order);
    dbk_free((void *)live);
    return st;
}

dbk_status dbk_memplan_add_program(dbk_memplan *mp, dbk_op_desc *ops, int count) {
    planned_ops *np = dbk_calloc((size_t)mp->nprogs + 1, sizeof *np);
    if (!np) return DBK_ERR_OUT_OF_HOST_MEMORY;
    if (mp->nprogs) memcpy(np, mp->progs, sizeof *np * (size_t)mp->nprogs);
    dbk_free(mp->progs);
    mp->progs = np;
    planned_ops *p = &mp->progs[mp->nprogs++];
    p->ops = ops;
    p->count = count;
    DBK_TRY(find_blocks(p));
    DBK_TRY(find_lifetimes(p));
    return place(mp, p);
}

/* ---------------------------------------------------------------------------------- */
/* 4. binding                                                                          */

static void bind_tensor(const planned_ops *p, dbk_tensor *t, dbk_buffer *const *chunks) {
    if (!is_virtual(t)) return;
    const block *b = block_of(p, t);
    t->offset = b->offset + (t->offset - b->vlo);
    t->buf = chunks[b->chunk];
}

void dbk_memplan_bind(dbk_memplan *mp, dbk_buffer *const *chunks) {
    for (int pi = 0; pi < mp->nprogs; pi++) {
        const planned_ops *p = &mp->progs[pi];
        for (int i = 0; i < p->count; i++) {
            for (int k = 0; k < DBK_OP_MAX_SRC; k++) bind_tensor(p, &p->ops[i].src[k], chunks);
            for (int k = 0; k < DBK_OP_MAX_DST; k++) bind_tensor(p, &p->ops[i].dst[k], chunks);
        }
    }
}
