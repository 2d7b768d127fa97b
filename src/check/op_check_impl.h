/*
 * op_check_impl.h — internal to src/check/op_*.c: the case description the case tables
 * (op_cases.c) build and the harness (op_harness.c) places, runs and judges.
 *
 * A case has up to DBK_OP_MAX_SRC + DBK_OP_MAX_DST slots, src slots first (SRC(i), DST(i)).
 * Each slot is a role (see below), a dtype and a shape; inputs carry their starting bytes.
 */
#ifndef DBK_OP_CHECK_IMPL_H
#define DBK_OP_CHECK_IMPL_H

#include <stdint.h>

#include "backend/backend.h"
#include "check/op_check.h"
#include "core/rng.h"

enum { NSLOT = DBK_OP_MAX_SRC + DBK_OP_MAX_DST };
#define SRC(i) (i)
#define DST(i) (DBK_OP_MAX_SRC + (i))

typedef enum role {
    ROLE_NONE,    /* unused slot, or an alias of another slot */
    ROLE_IN,      /* written before the op, must be unchanged after */
    ROLE_OUT,     /* overwritten by the op: starts as 0xff bytes, compared */
    ROLE_INOUT,   /* starts from given values, compared (in place, accumulating, aliased) */
} role;

typedef struct slot {
    role          role;
    dbk_dtype     dtype;
    int           ndim;
    int64_t       shape[DBK_MAX_DIMS];
    unsigned char *init;     /* starting bytes of IN / INOUT tensors (owned) */
    int           alias_of;  /* -1, or the slot whose tensor this one is (in place) */
} slot;

/* One run of the cases of one op: the backends, the input stream, the failure notes. */
typedef struct dbk_op_checker {
    const dbk_op_check_config *cfg;
    double                     tolerance;   /* of the op being checked */
    dbk_rng                    rng;
    int                        failed;      /* cases failed so far */
    char                       notes[8192]; /* details of the current case */
    size_t                     notes_len;
} dbk_op_checker;

typedef struct tcase {
    dbk_op_checker *ck;
    dbk_op_desc     desc;        /* the op and its params; tensors are filled in per backend */
    char            shape[200];
    slot            slots[NSLOT];
} tcase;

/* An op's cases and their NMSE tolerance; op_cases.c has one per op of op_list.h. */
typedef struct dbk_op_cases {
    void   (*cases)(dbk_op_checker *ck);
    double   nmse;
} dbk_op_cases;

/* The cases of op, or NULL when op_cases.c defines none. */
const dbk_op_cases *dbk_op_cases_of(dbk_op op);

/* Runs case c on both backends, judges it, reports it and frees c (counted in c->ck->failed). */
void dbk_op_check_case(tcase *c);

/* Host memory for case data; aborts when the host is out of memory (a case cannot go on). */
void *dbk_op_check_alloc(size_t n);

static inline int64_t slot_numel(const slot *sl) {
    int64_t n = 1;
    for (int i = 0; i < sl->ndim; i++) n *= sl->shape[i];
    return n;
}

#endif
