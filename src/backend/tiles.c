/*
 * tiles.c — tile parameters from device limits (tiles.h has the rule and its reasons).
 */
#include "backend/tiles.h"

#include <stdbool.h>

static uint64_t shared_bytes(const dbk_tile_choice *t) { return (uint64_t)(t->bm + t->bn) * t->bk * 4u; }
static uint32_t invocations(const dbk_tile_choice *t) { return (t->bm / t->tm) * (t->bn / t->tn); }

dbk_tile_choice dbk_tiles_from_limits(const dbk_device_limits *l) {
    dbk_tile_choice t;
    switch (l->vendor_id) {
    case DBK_VENDOR_NVIDIA:
    case DBK_VENDOR_AMD:   t = (dbk_tile_choice){128, 128, 16, 8, 8, 256}; break;
    case DBK_VENDOR_INTEL: t = (dbk_tile_choice){64, 64, 32, 4, 4, 256}; break;
    default:               t = (dbk_tile_choice){64, 64, 16, 4, 4, 256}; break;
    }
    const uint64_t shared_budget = l->shared_bytes / 2;
    for (;;) {
        const bool shared_ok = shared_bytes(&t) <= shared_budget;
        if (shared_ok && invocations(&t) <= l->max_invocations) break;
        if (!shared_ok && t.bk > 8) {
            t.bk /= 2;
            continue;
        }
        /* Halve the larger of BM and BN while a work-group keeps at least 64 invocations
         * (two warps, one wave64); each halving halves shared memory and invocations. */
        dbk_tile_choice h = t;
        if (h.bm >= h.bn) h.bm /= 2;
        else h.bn /= 2;
        if (h.bm >= 32 && h.bn >= 32 && invocations(&h) >= 64) {
            t = h;
            continue;
        }
        if (t.tm > 4 || t.tn > 4) {   /* more, smaller invocations: lets the halving go on */
            t.tm = t.tn = 4;
            continue;
        }
        break;   /* the floor: 32x32x8, 4x4 */
    }
    uint32_t wg = 256;
    while (wg > 32 && wg > l->max_invocations) wg /= 2;
    if (l->subgroup_size > wg && l->subgroup_size <= l->max_invocations) wg = l->subgroup_size;
    t.wg = wg;
    return t;
}
