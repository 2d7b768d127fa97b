/*
 * jpeg_scan.c — the completeness check of a JPEG's entropy-coded data (jpeg_scan.h).
 *
 * ITU-T T.81 (the JPEG standard), Annex B (syntax), F.2.2 (Huffman decoding of sequential
 * DCT data). A scan is a run of MCUs; each block in it is one Huffman-coded DC difference
 * (category s, then s bits) and up to 63 AC coefficients (run/size symbols, then size bits,
 * 0x00 = end of block, 0xF0 = sixteen zeros). Data bytes FF are stuffed as FF 00; any other FF xx
 * is a marker, which ends the scan's data (RST0..7 only at restart-interval boundaries). The
 * walk below decodes symbols and skips coefficient bits without computing anything, and stops
 * at the first block whose codes are not all there.
 */
#include "data/jpeg_scan.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FAST_BITS 9
#define MAX_COMPONENTS 4

typedef struct huff_table {
    bool     present;
    uint8_t  symbols[256];
    int32_t  maxcode[17];          /* the largest code of each length 1..16, -1 when none */
    int32_t  delta[17];            /* symbol index = code + delta[length] */
    uint16_t fast[1 << FAST_BITS]; /* length << 8 | symbol of the code a FAST_BITS-bit prefix starts; 0: longer */
} huff_table;

typedef struct frame {
    bool known;                    /* a Huffman sequential frame was read */
    int  width, height, ncomp, hmax, vmax;
    struct { int id, h, v; bool scanned; } comp[MAX_COMPONENTS];
} frame;

/* The bits of a scan, most significant first, with FF 00 unstuffed; stops at a marker. */
typedef struct bit_reader {
    const unsigned char *b;
    size_t   n, pos;               /* pos: the next byte to load */
    uint32_t acc;                  /* nbits valid bits at the top */
    int      nbits;
    bool     at_marker;            /* pos is at a marker (or the end): no more data */
} bit_reader;

static uint32_t be16(const unsigned char *p) { return (uint32_t)p[0] << 8 | p[1]; }

static void fill(bit_reader *r) {
    while (r->nbits <= 24 && !r->at_marker) {
        if (r->pos >= r->n) {
            r->at_marker = true;
            break;
        }
        const unsigned c = r->b[r->pos];
        if (c == 0xff) {
            if (r->pos + 1 >= r->n || r->b[r->pos + 1] != 0x00) {
                r->at_marker = true;
                break;
            }
            r->pos += 2;
        } else {
            r->pos++;
        }
        r->acc |= (uint32_t)c << (24 - r->nbits);
        r->nbits += 8;
    }
}

static void consume(bit_reader *r, int bits) {
    r->acc <<= bits;
    r->nbits -= bits;
}

/* The next symbol of table t: >= 0, -1 when the data ends first, -2 for a code t lacks. */
static int decode(bit_reader *r, const huff_table *t) {
    if (r->nbits < 16) fill(r);
    const uint16_t e = t->fast[r->acc >> (32 - FAST_BITS)];
    if (e) {
        if ((e >> 8) > r->nbits) return -1;
        consume(r, e >> 8);
        return e & 0xff;
    }
    for (int len = 1; len <= 16; len++) {
        if (len > r->nbits) return -1;
        const int32_t code = (int32_t)(r->acc >> (32 - len));
        if (code <= t->maxcode[len]) {
            consume(r, len);
            return t->symbols[code + t->delta[len]];
        }
    }
    return -2;
}

/* Skips s bits of a coefficient; false when the data ends first. */
static bool skip(bit_reader *r, int s) {
    if (s > r->nbits) {
        fill(r);
        if (s > r->nbits) return false;
    }
    consume(r, s);
    return true;
}

/* One DHT segment (seg, len bytes after the length field); false when malformed. */
static bool read_tables(const unsigned char *seg, size_t len, huff_table dc[4], huff_table ac[4]) {
    size_t p = 0;
    while (p + 17 <= len) {
        const int cls = seg[p] >> 4, id = seg[p] & 15;
        if (cls > 1 || id > 3) return false;
        huff_table *t = cls ? &ac[id] : &dc[id];
        int total = 0;
        for (int k = 1; k <= 16; k++) total += seg[p + k];
        if (total > 256 || p + 17 + (size_t)total > len) return false;
        memset(t, 0, sizeof *t);
        memcpy(t->symbols, seg + p + 17, (size_t)total);
        int32_t code = 0;
        int index = 0;
        for (int k = 1; k <= 16; k++) {
            const int count = seg[p + k];
            if (code + count > (1 << k)) return false;   /* more codes than the length holds */
            t->delta[k] = index - code;
            t->maxcode[k] = count ? code + count - 1 : -1;
            for (int c = 0; c < count && k <= FAST_BITS; c++) {
                const int first = (code + c) << (FAST_BITS - k), span = 1 << (FAST_BITS - k);
                for (int f = 0; f < span; f++) t->fast[first + f] = (uint16_t)(k << 8 | t->symbols[index + c]);
            }
            code += count;
            index += count;
            code <<= 1;
        }
        t->present = true;
        p += 17 + (size_t)total;
    }
    return p == len;
}

/* One block's codes; NULL when complete, else why not. */
static const char *walk_block(bit_reader *r, const huff_table *dc, const huff_table *ac) {
    int s = decode(r, dc);
    if (s == -1) return "ends";
    if (s < 0 || s > 15) return "corrupt";
    if (!skip(r, s)) return "ends";
    for (int k = 1; k < 64;) {
        const int rs = decode(r, ac);
        if (rs == -1) return "ends";
        if (rs < 0) return "corrupt";
        const int run = rs >> 4, size = rs & 15;
        if (size == 0) {
            if (run != 15) break;   /* end of block */
            k += 16;
            continue;
        }
        k += run + 1;
        if (k > 64) return "corrupt";
        if (!skip(r, size)) return "ends";
    }
    return NULL;
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

/* The scan whose header is seg (len bytes) and whose data starts at b + start; *next receives
 * where the marker after its data is. False with why when a block is missing or corrupt. */
static bool walk_scan(const unsigned char *b, size_t n, size_t start, const unsigned char *seg, size_t len, frame *f,
                      const huff_table dc[4], const huff_table ac[4], int restart, int scan, size_t *next, char *why,
                      size_t cap) {
    const int ns = len > 0 ? seg[0] : 0;
    if (ns < 1 || ns > MAX_COMPONENTS || len < 1 + 2 * (size_t)ns + 3) {
        snprintf(why, cap, "scan %d has a malformed header", scan);
        return false;
    }
    int comp[MAX_COMPONENTS];
    const huff_table *tdc[MAX_COMPONENTS], *tac[MAX_COMPONENTS];
    int per_mcu = 0;
    for (int j = 0; j < ns; j++) {
        comp[j] = -1;
        for (int c = 0; c < f->ncomp; c++)
            if (f->comp[c].id == seg[1 + 2 * j]) comp[j] = c;
        tdc[j] = &dc[(seg[2 + 2 * j] >> 4) & 3];
        tac[j] = &ac[seg[2 + 2 * j] & 3];
        if (comp[j] < 0 || !tdc[j]->present || !tac[j]->present) {
            snprintf(why, cap, "scan %d names a component or Huffman table the file does not define", scan);
            return false;
        }
        per_mcu += ns == 1 ? 1 : f->comp[comp[j]].h * f->comp[comp[j]].v;
    }
    int mcus;
    if (ns == 1) { /* one component: its own blocks, in raster order */
        const int c = comp[0];
        mcus = ceil_div(ceil_div(f->width * f->comp[c].h, f->hmax), 8) *
               ceil_div(ceil_div(f->height * f->comp[c].v, f->vmax), 8);
    } else {
        mcus = ceil_div(f->width, 8 * f->hmax) * ceil_div(f->height, 8 * f->vmax);
    }
    bit_reader r = {.b = b, .n = n, .pos = start};
    const long blocks = (long)mcus * per_mcu;
    long done = 0;
    for (int m = 0; m < mcus; m++) {
        if (restart > 0 && m > 0 && m % restart == 0) {
            /* the interval's padding bits are dropped; the next bytes must be its RST marker */
            fill(&r);
            if (!r.at_marker || r.pos + 1 >= n || r.b[r.pos + 1] < 0xd0 || r.b[r.pos + 1] > 0xd7) {
                snprintf(why, cap, "scan %d lacks the restart marker after %ld of %ld blocks", scan, done, blocks);
                return false;
            }
            r = (bit_reader){.b = b, .n = n, .pos = r.pos + 2};
        }
        for (int j = 0; j < ns; j++) {
            const int count = ns == 1 ? 1 : f->comp[comp[j]].h * f->comp[comp[j]].v;
            for (int k = 0; k < count; k++, done++) {
                const char *bad = walk_block(&r, tdc[j], tac[j]);
                if (!bad) continue;
                if (!strcmp(bad, "ends"))
                    snprintf(why, cap, "the data of scan %d ends after %ld of %ld blocks (the file was cut short)", scan,
                             done, blocks);
                else
                    snprintf(why, cap, "scan %d holds a code its Huffman tables lack at block %ld of %ld", scan, done,
                             blocks);
                return false;
            }
        }
    }
    for (int j = 0; j < ns; j++) f->comp[comp[j]].scanned = true;
    size_t p = r.pos;   /* after the data: the next marker other than RST (padding may precede it) */
    while (p + 1 < n && !(b[p] == 0xff && b[p + 1] != 0x00 && (b[p + 1] < 0xd0 || b[p + 1] > 0xd7))) p++;
    *next = p;
    return true;
}

/* A start-of-frame segment (seg, len bytes) of a Huffman sequential frame; false when this
 * check cannot follow it (the decoder judges it). */
static bool read_frame(const unsigned char *seg, size_t len, frame *f) {
    if (len < 6) return false;
    f->height = (int)be16(seg + 1);
    f->width = (int)be16(seg + 3);
    f->ncomp = seg[5];
    if (f->height == 0 || f->width == 0 || f->ncomp < 1 || f->ncomp > MAX_COMPONENTS || len < 6 + 3 * (size_t)f->ncomp)
        return false;
    f->hmax = f->vmax = 1;
    for (int c = 0; c < f->ncomp; c++) {
        const unsigned char *d = seg + 6 + 3 * c;
        f->comp[c].id = d[0];
        f->comp[c].h = d[1] >> 4;
        f->comp[c].v = d[1] & 15;
        f->comp[c].scanned = false;
        if (f->comp[c].h < 1 || f->comp[c].h > 4 || f->comp[c].v < 1 || f->comp[c].v > 4) return false;
        if (f->comp[c].h > f->hmax) f->hmax = f->comp[c].h;
        if (f->comp[c].v > f->vmax) f->vmax = f->comp[c].v;
    }
    return true;
}

bool dbk_jpeg_scan_complete(const unsigned char *b, size_t n, char *why, size_t cap) {
    huff_table dc[4], ac[4];
    memset(dc, 0, sizeof dc);
    memset(ac, 0, sizeof ac);
    frame f;
    memset(&f, 0, sizeof f);
    int restart = 0, scans = 0;
    size_t i = 2;
    while (i + 1 < n) {
        if (b[i] != 0xff) return true;   /* not a marker where one belongs: the decoder judges it */
        const unsigned m = b[i + 1];
        if (m == 0xff || m == 0xd8 || (m >= 0xd0 && m <= 0xd7)) {
            i += m == 0xff ? 1 : 2;
            continue;
        }
        if (m == 0xd9) { /* end of image: every component must have been scanned */
            for (int c = 0; f.known && c < f.ncomp; c++)
                if (!f.comp[c].scanned) {
                    snprintf(why, cap, "the image ends before component %d of %d is scanned (the file was cut short)",
                             c + 1, f.ncomp);
                    return false;
                }
            return true;
        }
        if (i + 4 > n) return true;
        const size_t len = be16(b + i + 2);
        if (len < 2 || i + 2 + len > n) return true;   /* a cut header: the end-marker check reports it */
        const unsigned char *seg = b + i + 4;
        if (m == 0xc0 || m == 0xc1) {
            if (!read_frame(seg, len - 2, &f)) return true;
            f.known = true;
        } else if ((m >= 0xc2 && m <= 0xcf) && m != 0xc4 && m != 0xc8 && m != 0xcc) {
            return true;   /* progressive, lossless or arithmetic-coded: not followed here */
        } else if (m == 0xc4) {
            if (!read_tables(seg, len - 2, dc, ac)) {
                snprintf(why, cap, "a malformed Huffman table");
                return false;
            }
        } else if (m == 0xdd && len >= 4) {
            restart = (int)be16(seg);
        } else if (m == 0xda) {
            if (!f.known) return true;
            size_t next;
            if (!walk_scan(b, n, i + 2 + len, seg, len - 2, &f, dc, ac, restart, ++scans, &next, why, cap))
                return false;
            i = next;
            continue;
        }
        i += 2 + len;
    }
    return true;
}
