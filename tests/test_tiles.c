/*
 * test_tiles.c — backend/tiles.h: the tile parameters derived from device limits, on
 * synthetic limit sets (the function is pure): each vendor's shape on a roomy device, the
 * shrinking on small ones, and over a grid of limits the invariants the kernels need.
 */
#include <stdio.h>

#include "backend/tiles.h"
#include "test_util.h"

static int same(dbk_tile_choice t, uint32_t bm, uint32_t bn, uint32_t bk, uint32_t tm, uint32_t tn) {
    return t.bm == bm && t.bn == bn && t.bk == bk && t.tm == tm && t.tn == tn;
}

#define TILES_FMT "%ux%ux%u/%ux%u wg %u"
#define TILES_ARGS(t) (t).bm, (t).bn, (t).bk, (t).tm, (t).tn, (t).wg

static int roomy_devices_should_get_their_vendors_shape(void) {
    const dbk_device_limits h100 = {DBK_VENDOR_NVIDIA, 32, 1024, 48 * 1024};
    const dbk_device_limits mi210 = {DBK_VENDOR_AMD, 64, 1024, 64 * 1024};
    const dbk_device_limits arc = {DBK_VENDOR_INTEL, 16, 1024, 64 * 1024};
    const dbk_device_limits other = {0x10005, 8, 1024, 32 * 1024};
    dbk_tile_choice t = dbk_tiles_from_limits(&h100);
    DBK_CHECK_MSG(same(t, 128, 128, 16, 8, 8) && t.wg == 256, "NVIDIA: " TILES_FMT, TILES_ARGS(t));
    t = dbk_tiles_from_limits(&mi210);
    DBK_CHECK_MSG(same(t, 128, 128, 16, 8, 8) && t.wg == 256, "AMD: " TILES_FMT, TILES_ARGS(t));
    t = dbk_tiles_from_limits(&arc);
    DBK_CHECK_MSG(same(t, 64, 64, 32, 4, 4) && t.wg == 256, "Intel: " TILES_FMT, TILES_ARGS(t));
    t = dbk_tiles_from_limits(&other);
    DBK_CHECK_MSG(same(t, 64, 64, 16, 4, 4) && t.wg == 256, "other: " TILES_FMT, TILES_ARGS(t));
    return 0;
}

static int small_devices_should_get_smaller_tiles(void) {
    /* 16 KiB shared: budget 8 KiB, so 128x128x16 (16 KiB) drops BK to 8 (8 KiB). */
    const dbk_device_limits small_shared = {DBK_VENDOR_NVIDIA, 32, 1024, 16 * 1024};
    dbk_tile_choice t = dbk_tiles_from_limits(&small_shared);
    DBK_CHECK_MSG(same(t, 128, 128, 8, 8, 8), TILES_FMT, TILES_ARGS(t));
    /* 128 invocations at most: 128x128/8x8 (256) halves BM. */
    const dbk_device_limits few_threads = {DBK_VENDOR_AMD, 64, 128, 64 * 1024};
    t = dbk_tiles_from_limits(&few_threads);
    DBK_CHECK_MSG(same(t, 64, 128, 16, 8, 8) && t.wg == 128, TILES_FMT, TILES_ARGS(t));
    /* 4 KiB shared, 64 invocations: the floor. */
    const dbk_device_limits tiny = {0, 0, 64, 4 * 1024};
    t = dbk_tiles_from_limits(&tiny);
    DBK_CHECK_MSG(same(t, 32, 32, 8, 4, 4) && t.wg == 64, TILES_FMT, TILES_ARGS(t));
    return 0;
}

/* Over vendors x subgroup sizes x work-group limits x shared memory: the choice fits, meets
 * the shaders' needs (TM, TN multiples of 4 dividing BM, BN; BK dividing the split-K chunk
 * 8192; at most 64 outputs per invocation), and its invocations are a power of two and a
 * multiple of the subgroup size. */
static int every_choice_should_fit_and_suit_the_kernels(void) {
    const uint32_t vendors[] = {DBK_VENDOR_NVIDIA, DBK_VENDOR_AMD, DBK_VENDOR_INTEL, 0x10005, 0};
    const uint32_t subgroups[] = {0, 8, 16, 32, 64};
    const uint32_t max_inv[] = {64, 128, 256, 512, 1024};
    const uint64_t shared[] = {4096, 8192, 16384, 32768, 49152, 65536, 102400};
    int cases = 0;
    for (size_t v = 0; v < sizeof vendors / sizeof *vendors; v++)
        for (size_t s = 0; s < sizeof subgroups / sizeof *subgroups; s++)
            for (size_t m = 0; m < sizeof max_inv / sizeof *max_inv; m++)
                for (size_t k = 0; k < sizeof shared / sizeof *shared; k++) {
                    const dbk_device_limits l = {vendors[v], subgroups[s], max_inv[m], shared[k]};
                    const dbk_tile_choice t = dbk_tiles_from_limits(&l);
                    const uint32_t inv = (t.bm / t.tm) * (t.bn / t.tn);
                    const uint64_t bytes = (uint64_t)(t.bm + t.bn) * t.bk * 4;
                    DBK_CHECK_MSG(t.tm % 4 == 0 && t.tn % 4 == 0 && t.bm % t.tm == 0 && t.bn % t.tn == 0 &&
                                      8192 % t.bk == 0 && t.tm * t.tn <= 64,
                                  "vendor %#x sub %u inv %u shared %llu: " TILES_FMT, l.vendor_id, l.subgroup_size,
                                  l.max_invocations, (unsigned long long)l.shared_bytes, TILES_ARGS(t));
                    DBK_CHECK_MSG(inv <= l.max_invocations && bytes <= l.shared_bytes / 2 && (inv & (inv - 1)) == 0 &&
                                      (l.subgroup_size == 0 || inv % l.subgroup_size == 0),
                                  "vendor %#x sub %u inv %u shared %llu: " TILES_FMT " (%u invocations, %llu bytes)",
                                  l.vendor_id, l.subgroup_size, l.max_invocations,
                                  (unsigned long long)l.shared_bytes, TILES_ARGS(t), inv, (unsigned long long)bytes);
                    DBK_CHECK_MSG(t.wg >= 32 && (t.wg & (t.wg - 1)) == 0 && t.wg <= l.max_invocations,
                                  "wg %u for max %u", t.wg, l.max_invocations);
                    cases++;
                }
    printf("  %d limit sets\n", cases);
    return 0;
}

int main(void) {
    DBK_RUN(roomy_devices_should_get_their_vendors_shape);
    DBK_RUN(small_devices_should_get_smaller_tiles);
    DBK_RUN(every_choice_should_fit_and_suit_the_kernels);
    return dbk_test_finish();
}
